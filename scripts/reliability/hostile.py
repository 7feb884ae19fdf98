"""Hostile inputs: one `appliance ingest` over a folder holding every kind of bad file at once.

`make_hostile_corpus(root)` writes more than 20 kinds of hostile files next to a few good ones (each
good file, and each hostile file that is still a document, carries a tag to search for);
`run_hostile_ingest(work)` ingests the folder in one run, as an unprivileged user when this process
is root (root reads any file regardless of its permissions, so `chmod 000` would prove nothing), and
reports for every kind what became of it, the run's exit status and its own peak RSS (wait4).

A named pipe with a document suffix is in the folder too. A reader that opens it blocks until a
writer appears, forever in an unattended reindex; the harness plays that writer (a non-blocking open
for writing succeeds only while some process has the pipe open for reading), so the run can finish,
and records whether the pipeline opened the pipe at all (`fifo_opened`).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.reliability.procs import VENV_APPLIANCE, appliance_env, run_measured

MB = 1024 * 1024
NOBODY = 65534
HUGE_BYTES = 200 * MB


@dataclass(frozen=True)
class Kind:
    name: str
    files: tuple[str, ...]  # paths relative to the corpus root, as they will be displayed after "hostile/"
    expect: str  # "indexed", "failed", "skipped", or "indexed|failed" (either, failures with a reason)
    reason: str = ""  # a substring the failure or skip reason must contain
    tag: str = ""  # a word only this document holds: searched for when it is indexed


@dataclass
class Outcome:
    kind: str
    file: str
    status: str  # indexed, failed, skipped, missing
    reason: str
    ok: bool


@dataclass
class HostileReport:
    outcomes: list[Outcome] = field(default_factory=list)
    returncode: int = 0
    peak_rss_bytes: int = 0
    seconds: float = 0.0
    unprivileged: bool = False
    permission_case: str = ""
    fifo_opened: bool = False
    good_indexed: int = 0
    good_total: int = 0
    stderr_tail: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> int:
        return len({outcome.kind for outcome in self.outcomes})

    @property
    def files(self) -> int:
        return len(self.outcomes)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems and all(outcome.ok for outcome in self.outcomes)


def _pdf(pages: list[str], *, password: str | None = None) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 5, text=text)
    return bytes(pdf.output())


def _docx(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Compressor maintenance", level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _zip_bomb(path: Path, inflated_mb: int = 240) -> None:
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as member,
    ):
        block = bytes(MB)
        for _ in range(inflated_mb):
            member.write(block)


def make_hostile_corpus(root: Path, *, unreadable: bool = True) -> list[Kind]:
    """Write the corpus; return what each file is and what must become of it."""
    root.mkdir(parents=True, exist_ok=True)
    sentence = "Isolate compressor {tag} before opening the crankcase and check the oil for metal particles."
    kinds: list[Kind] = []

    def text_file(name: str, kind: str, content: str | bytes, expect: str, reason: str = "", tag: str = "") -> None:
        path = root / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        kinds.append(Kind(kind, (name,), expect, reason, tag))

    # Good files of every format: all must be indexed and found.
    for suffix, tag in ((".md", "goodmdalpha"), (".txt", "goodtxtbravo"), (".html", "goodhtmlcharlie")):
        body = sentence.format(tag=tag)
        content = (
            f"<html><body><h1>Good</h1><p>{body}</p></body></html>" if suffix == ".html" else f"# Good\n\n{body}\n"
        )
        text_file(f"good{suffix}", "good file", content, "indexed", tag=tag)
    text_file("good.pdf", "good file", _pdf([sentence.format(tag="goodpdfdelta")]), "indexed", tag="goodpdfdelta")
    text_file("good.docx", "good file", _docx([sentence.format(tag="gooddocxecho")]), "indexed", tag="gooddocxecho")

    text_file("empty.md", "zero-byte file", b"", "failed", "empty file")
    with open(root / "huge.txt", "wb") as handle:
        handle.truncate(HUGE_BYTES)  # sparse: 200 MB that take no disk and no time
    kinds.append(Kind("200 MB text file", ("huge.txt",), "failed", "over the limit"))
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(4096)
    text_file("image.md", "binary with a .md suffix", png, "failed", "binary content")
    text_file("nul.txt", "NUL bytes in a text file", b"Valve V-1\x00\x00\x00 closed\x00" * 64, "failed", "binary")
    text_file(
        "broken.txt", "invalid UTF-8", b"Close the valve. \xff\xfe\xfa then open it.", "failed", "not valid UTF-8"
    )
    utf16 = "\ufeffPump procedure\n\nPrime the pump utfsixteenfoxtrot before starting it.\n".encode("utf-16-le")
    text_file("utf16.txt", "UTF-16 with BOM", utf16, "indexed", tag="utfsixteenfoxtrot")
    latin = "<html><body><p>Crème brûlée</p></body></html>".encode("latin-1")
    text_file("latin1.html", "Latin-1 HTML without a charset", latin, "failed", "not valid UTF-8")

    whole = _pdf(["Page one about the chiller and its limits.", "Page two about the condenser fans."])
    text_file(
        "badxref.pdf", "PDF with a broken xref", whole.replace(b"startxref", b"startxyzw"), "failed", "damaged PDF"
    )
    text_file("truncated.pdf", "truncated PDF", whole[: len(whole) // 2], "failed", "PDF")
    text_file("locked.pdf", "encrypted PDF", _pdf(["Secret text."], password="secret"), "failed", "encrypted PDF")
    text_file("fake.pdf", "text with a .pdf suffix", "just text pretending to be a PDF", "failed", "not a PDF")
    text_file("scan.pdf", "PDF without text", _pdf([""]), "failed", "no extractable text")

    _zip_bomb(root / "bomb.docx")
    kinds.append(Kind("zip-bomb .docx", ("bomb.docx",), "failed", "zip bomb"))
    text_file("fake.docx", ".docx that is not a zip", "plain text", "failed", "not a valid .docx")

    depth = 10_000
    deep = (
        "<html><head><title>Deep</title><script>alert('scriptpayloadzulu')</script></head><body>"
        + "<div>" * depth
        + "deepest hotelnesting text<script>document.write('scriptpayloadzulu')</script>"
        + "</div>" * depth
        + "<p>after the nest</p></body></html>"
    )
    text_file("deep.html", "HTML with scripts, 10,000 deep", deep, "indexed", tag="hotelnesting")
    # Every level, and a body under every 250th heading only: 40 chunks to embed, not 10,000.
    headings = "".join(
        f"{'#' * (1 + i % 6)} Step {i}\n\n" + (f"Turn valve headingindia{i} a quarter.\n\n" if i % 250 == 249 else "")
        for i in range(10_000)
    )
    text_file("headings.md", "10,000-heading Markdown", headings, "indexed", tag="headingindia9999")
    quotes = ">" * 10_000 + " quoted julietquote text\n"
    text_file("quotes.md", "Markdown quotes 10,000 deep", quotes, "indexed|failed", "nested", tag="julietquote")
    text_file(
        "word.txt",
        "one 30 KB word",
        "kiloword" + "x" * 30_000 + "\n\nkilowordlima tail.",
        "indexed",
        tag="kilowordlima",
    )

    text_file(
        "line\nbreak.md", "newline in the file name", "# Newline\n\nnewlinemike valve.\n", "indexed", tag="newlinemike"
    )
    text_file(
        "with  two spaces .md",
        "spaces in the file name",
        "# Spaces\n\nspacesnovember.\n",
        "indexed",
        tag="spacesnovember",
    )
    text_file(
        "Überprüfung-çø-日本.md", "non-ASCII file name", "# Ü\n\nunicodeoscar pump.\n", "indexed", tag="unicodeoscar"
    )
    long_name = "n" * 240 + ".md"
    text_file(long_name, "255-byte file name", "# Long\n\nlongnamepapa.\n", "indexed", tag="longnamepapa")
    (root / os.fsdecode(b"caf\xe9-latin1.md")).write_bytes(b"# Cafe\n\nlatinnamequebec.\n")
    kinds.append(Kind("file name not UTF-8", ("caf\\xe9-latin1.md",), "skipped", "not valid UTF-8"))

    (root / "loop-a.md").symlink_to(root / "loop-b.md")
    (root / "loop-b.md").symlink_to(root / "loop-a.md")
    kinds.append(Kind("symlink loop", ("loop-a.md", "loop-b.md"), "failed", "symbolic link"))
    (root / "dangling.md").symlink_to(root / "no-such-target.md")
    kinds.append(Kind("dangling symlink", ("dangling.md",), "failed", "symbolic link"))
    os.mkfifo(root / "pipe.md")
    kinds.append(Kind("named pipe with a .md suffix", ("pipe.md",), "skipped", "named pipe"))
    text_file("tool.exe", "unsupported type", b"MZ\x90\x00" + bytes(512), "skipped", "unsupported file type")
    if unreadable:
        text_file("secret.md", "unreadable (mode 000)", "# Secret\n\nsecretromeo.\n", "failed", "permission denied")
        (root / "secret.md").chmod(0)
    return kinds


def _fifo_writer(fifo: Path, stop: threading.Event, opened: list[bool]) -> None:
    """Open the pipe for writing whenever a reader waits on it, then close it: the reader sees EOF."""
    while not stop.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody has it open for reading
            time.sleep(0.02)
            continue
        opened.append(True)
        os.close(fd)
        time.sleep(0.05)


def run_hostile_ingest(
    work: Path, models_dir: Path | None = None, *, rss_limit_bytes: int = 3 * 1024**3
) -> HostileReport:
    """Ingest the hostile corpus in one run. `work` must be reachable by an unprivileged user when this
    process is root (make it with `hostile_workdir()`). The embedder is hard-linked into `work/models`
    unless `models_dir` is given."""
    report = HostileReport()
    root_user = os.geteuid() == 0
    setpriv = shutil.which("setpriv")
    report.unprivileged = root_user and setpriv is not None
    unreadable_tested = not root_user or report.unprivileged
    report.permission_case = (
        "run as uid 65534 (setpriv): mode 000 is enforced"
        if report.unprivileged
        else ("run as a normal user: mode 000 is enforced" if not root_user else "not tested: root without setpriv")
    )
    corpus = work / "hostile"
    kinds = make_hostile_corpus(corpus, unreadable=unreadable_tested)
    if models_dir is None:
        from appliance.models.packages import init_store_from_packages
        from appliance.models.store import ModelStore

        models_dir = work / "models"
        init_store_from_packages(ModelStore(models_dir), ["all-MiniLM-L6-v2"])
    home, user_home = work / "home", work / "user"
    for folder in (home, user_home):
        folder.mkdir(exist_ok=True)
        if report.unprivileged:
            os.chown(folder, NOBODY, NOBODY)
    env = appliance_env(home, models_dir, HOME=str(user_home), TMPDIR=str(user_home))
    command = [VENV_APPLIANCE, "ingest", str(corpus), "--json"]
    if report.unprivileged:
        command = [str(setpriv), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]

    stop, opened = threading.Event(), list[bool]()
    writer = threading.Thread(target=_fifo_writer, args=(corpus / "pipe.md", stop, opened), daemon=True)
    writer.start()
    try:
        finished = run_measured(command, env, user_home, timeout_s=900)
    finally:
        stop.set()
        writer.join(timeout=5)
    report.fifo_opened = bool(opened)
    report.returncode, report.peak_rss_bytes, report.seconds = (
        finished.returncode,
        finished.peak_rss_bytes,
        finished.seconds,
    )
    report.stderr_tail = finished.stderr[-2000:]
    if finished.returncode != 0:
        report.problems.append(f"ingest exited {finished.returncode}: {finished.stderr[-1500:]}")
        return report
    if report.peak_rss_bytes > rss_limit_bytes:
        report.problems.append(f"peak RSS {report.peak_rss_bytes / MB:.0f} MB over {rss_limit_bytes / MB:.0f} MB")
    result: dict[str, Any] = json.loads(finished.stdout)
    _judge(report, kinds, result, home, models_dir)
    return report


def _judge(report: HostileReport, kinds: list[Kind], result: dict[str, Any], home: Path, models_dir: Path) -> None:
    from appliance.config import Settings
    from appliance.index.catalog import Catalog
    from appliance.retrieve.search import Searcher

    prefix = "hostile/"
    failed = {item["path"]: item["error"] for item in result["failed"]}
    skipped = {item["path"]: item["reason"] for item in result["skipped"]}
    settings = Settings(home=home, models_dir=models_dir)
    catalog = Catalog(settings.catalog_path)
    try:
        indexed = {doc.path for doc in catalog.documents() if doc.status == "indexed"}
    finally:
        catalog.close()
    searcher = Searcher(settings)
    try:
        for kind in kinds:
            for name in kind.files:
                path = prefix + name
                if path in indexed:
                    status, reason = "indexed", ""
                elif path in failed:
                    status, reason = "failed", failed[path]
                elif path in skipped:
                    status, reason = "skipped", skipped[path]
                else:
                    status, reason = "missing", "not in the report"
                expected_reason = kind.reason.lower() in reason.lower()
                ok = status in kind.expect.split("|") and (status == "indexed" or expected_reason)
                if ok and status == "indexed" and kind.tag:
                    hits = searcher.search(kind.tag, k=5, mode="lexical").hits
                    ok = path in {hit.path for hit in hits}
                    reason = "found by a search for its tag" if ok else f"not found by a search for {kind.tag}"
                report.outcomes.append(Outcome(kind.name, path, status, reason, ok))
        script_hits = searcher.search("scriptpayloadzulu", k=5, mode="lexical").hits
        if script_hits:
            report.problems.append("script content of deep.html reached the index")
    finally:
        searcher.close()
    good = [outcome for outcome in report.outcomes if outcome.kind == "good file"]
    report.good_total, report.good_indexed = len(good), sum(1 for outcome in good if outcome.ok)


def hostile_workdir() -> Path:
    """A folder under /tmp an unprivileged user can reach (pytest's own tmp folders are mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="appliance-hostile-"))
    path.chmod(0o755)
    return path


def remove_workdir(path: Path) -> None:
    """Delete a hostile work folder, mode-000 files and named pipes included."""
    for item in path.rglob("*"):
        if not item.is_symlink() and item.exists() and not stat.S_ISFIFO(item.stat().st_mode):
            item.chmod(0o755 if item.is_dir() else 0o644)
    shutil.rmtree(path, ignore_errors=True)
