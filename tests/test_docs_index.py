"""The docs are true where a test can tell: docs/README.md lists every page, every relative link and every
module a page names (`index/writes.py`) leads to a file of the repository, and no page shows a path of the
machine it was written on (a reader's checkout is elsewhere)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_MODULE = re.compile(r"`([\w./-]+\.py)[`:# ]")
# The roots a development machine's paths start from; the appliance's own examples (/opt/appliance,
# /var/lib/appliance, /srv/sops, /etc/systemd) are paths of the host it is installed on, and stay.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|Users|root|tmp/pytest-of-[^/\s]+)/")


def pages(repo: Path = REPO) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]


def broken_links(repo: Path = REPO) -> list[str]:
    found = []
    for page in pages(repo):
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor of the page itself
            if not (page.parent / target.split("#")[0]).exists():
                found.append(f"{page.relative_to(repo)}: {target}")
    return found


def missing_modules(repo: Path = REPO) -> list[str]:
    """`….py` names a page written by hand gives that are no file of the repository, of the package, scripts/
    or tests/ (docs/reference/ is generated from the code, and checked against it by test_docs_reference)."""
    found = []
    for page in pages(repo):
        if (repo / "docs" / "reference") in page.parents:
            continue
        for name in sorted(set(NAMED_MODULE.findall(page.read_text(encoding="utf-8")))):
            if not any((root / name).exists() for root in (repo, repo / "appliance", repo / "scripts", repo / "tests")):
                found.append(f"{page.relative_to(repo)}: {name}")
    return found


def machine_paths(repo: Path = REPO) -> list[str]:
    found = []
    for page in pages(repo):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            if MACHINE_PATH.search(line) or str(repo) in line:
                found.append(f"{page.relative_to(repo)}:{number}: {line.strip()}")
    return found


def test_the_docs_index_lists_every_page_of_the_docs() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = {(REPO / "docs" / target.split("#")[0]).resolve() for target in LINK.findall(index)}
    unlisted = [
        str(page.relative_to(REPO))
        for page in sorted((REPO / "docs").rglob("*.md"))
        if page != REPO / "docs" / "README.md" and page.resolve() not in linked
    ]
    assert not unlisted, f"docs/README.md does not list: {unlisted}"


def test_every_relative_link_leads_to_a_file() -> None:
    assert not broken_links(), "\n".join(broken_links())


def test_every_module_a_page_names_exists() -> None:
    assert not missing_modules(), "\n".join(missing_modules())


def test_no_page_shows_a_path_of_the_machine_it_was_written_on() -> None:
    assert not machine_paths(), "\n".join(machine_paths())


def test_the_checks_catch_a_broken_link_a_moved_module_and_a_machine_path(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "appliance" / "index").mkdir(parents=True)
    (tmp_path / "appliance" / "index" / "writes.py").write_text("")
    (tmp_path / "docs" / "a.md").write_text("[b](b.md#x), [web](https://example.org), [top](#a)\n")
    (tmp_path / "README.md").write_text(
        "The order lives in `index/writes.py`; the answer in `answer/quoted.py`.\n"
        "    open: /work/main/docs_corpus/SOP-1.md\n"
        "    open: /srv/sops/SOP-1.md\n"
    )
    assert broken_links(tmp_path) == ["docs/a.md: b.md#x"]
    assert missing_modules(tmp_path) == ["README.md: answer/quoted.py"]
    assert machine_paths(tmp_path) == ["README.md:2: open: /work/main/docs_corpus/SOP-1.md"]
