"""Document loaders: what each format turns into, and how every kind of bad file is reported.

Every fixture is built here, in tmp_path, from code: PDFs with fpdf2, DOCX files with python-docx,
zip bombs with zipfile.
"""

from __future__ import annotations

import io
import logging
import os
import zipfile
from pathlib import Path

import docx
import pytest
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from fpdf import FPDF

from appliance.errors import DocumentError, SkippedDocument, UnsupportedDocument
from appliance.ingest.document import BLOCK_SEPARATOR, LoadedDocument
from appliance.ingest.loaders import SUPPORTED_SUFFIXES, load_document
from appliance.ingest.loaders import source as source_module

MB = 1024 * 1024


# --- helpers -------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def assert_consistent(doc: LoadedDocument) -> None:
    """Offsets point at the block texts, and the text is exactly the blocks joined by blank lines."""
    assert doc.blocks, "a loaded document has at least one block"
    for block in doc.blocks:
        assert doc.text[block.start : block.end] == block.text
        assert block.text.strip() == block.text.strip("\n").strip()  # no surrounding blank lines
    assert doc.text == BLOCK_SEPARATOR.join(block.text for block in doc.blocks)


def kinds(doc: LoadedDocument) -> list[str]:
    return [block.kind for block in doc.blocks]


def headings(doc: LoadedDocument) -> list[tuple[int, str]]:
    return [(block.level, block.text) for block in doc.blocks if block.kind == "heading"]


def reason_of(path: Path, max_bytes: int = 50 * MB, *, skipped: bool = False) -> str:
    """Load a file that must fail (`skipped`: be skipped); return the reason, after checking the message
    names the file."""
    with pytest.raises(DocumentError) as caught:
        load_document(path, max_bytes=max_bytes)
    assert isinstance(caught.value, SkippedDocument) is skipped
    assert caught.value.path == str(path)
    assert str(caught.value).startswith(f"{path}: ")
    return caught.value.reason


def make_pdf(
    path: Path,
    pages: list[list[str]],
    *,
    title: str | None = None,
    user_password: str | None = None,
) -> Path:
    """One list of paragraphs per page; paragraphs are separated by a blank line's height."""
    pdf = FPDF()
    if title is not None:
        pdf.set_title(title)
    if user_password is not None:
        pdf.set_encryption(owner_password="owner-secret", user_password=user_password)
    pdf.set_font("helvetica", size=11)
    for paragraphs in pages:
        pdf.add_page()
        for paragraph in paragraphs:
            pdf.multi_cell(0, 5, text=paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(5)
    pdf.output(str(path))
    return path


LONG_PARAGRAPH = (
    "Close the isolation valve upstream of the pump and confirm that the pressure gauge reads zero "
    "before any maintenance work begins on the seal housing. Record the reading in the log book."
)


# --- dispatch and the checks shared by every format ----------------------------------------------


def test_supported_suffixes_cover_every_format() -> None:
    expected = {
        ".md",
        ".markdown",
        ".txt",
        ".text",
        ".html",
        ".htm",
        ".pdf",
        ".docx",
        ".png",
        ".jpg",
        ".jpeg",
        ".tif",
        ".tiff",
    }
    assert expected == SUPPORTED_SUFFIXES


def test_unsupported_suffix_raises_unsupported_document(tmp_path: Path) -> None:
    path = write(tmp_path, "sheet.xyz", "data")
    with pytest.raises(UnsupportedDocument) as caught:
        load_document(path)
    assert caught.value.reason == "unsupported file type '.xyz'"
    assert isinstance(caught.value, DocumentError)  # callers can catch both with one clause


def test_suffix_matching_ignores_case(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "NOTES.MD", "# Upper case suffix\n\nBody."))
    assert doc.doc_type == "md"


def test_display_path_names_the_document_and_its_errors(tmp_path: Path) -> None:
    good = write(tmp_path, "good.txt", "Hello.")
    assert load_document(good, "sops/good.txt").path == "sops/good.txt"
    empty = write(tmp_path, "empty.txt", b"")
    with pytest.raises(DocumentError, match=r"^sops/empty\.txt: empty file$"):
        load_document(empty, "sops/empty.txt")


def test_zero_byte_file_is_reported_as_empty(tmp_path: Path) -> None:
    assert reason_of(write(tmp_path, "empty.md", b"")) == "empty file"


def test_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "big.txt", "x" * 2000)
    assert reason_of(path, max_bytes=1000) == (
        "file is 2 KB, over the limit of 1000 bytes (setting ingest.max_file_bytes)"
    )


def test_huge_file_is_refused_in_megabytes_without_being_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "huge.pdf"
    with open(path, "wb") as handle:
        handle.truncate(60 * MB)  # sparse: no disk space, no time

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("an oversized file must not be opened")

    monkeypatch.setattr(source_module, "open", no_open, raising=False)
    assert reason_of(path) == "file is 60 MB, over the limit of 50 MB (setting ingest.max_file_bytes)"


def test_directory_with_a_document_suffix_is_not_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "folder.md"
    path.mkdir()
    assert reason_of(path) == "not a regular file (it is a directory)"


def test_missing_file_is_reported(tmp_path: Path) -> None:
    reason = reason_of(tmp_path / "gone.txt")
    assert reason == "cannot read the file: it does not exist (or is a broken symlink)"


def test_symlink_loop_is_reported_in_words(tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.symlink_to(second)
    second.symlink_to(first)
    assert reason_of(first) == "cannot open the file: too many levels of symbolic links (a symlink loop?)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_unreadable_file_reports_permission_denied(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.txt", "classified")
    path.chmod(0)
    try:
        assert reason_of(path) == "cannot read the file: permission denied"
    finally:
        path.chmod(0o644)


def test_permission_error_while_opening_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulates chmod 000 even when the tests run as root.
    path = write(tmp_path, "secret.txt", "classified")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(source_module, "open", denied, raising=False)
    assert reason_of(path) == "cannot read the file: permission denied"


@pytest.mark.parametrize("name", ["blank.txt", "blank.md", "blank.html"])
def test_whitespace_only_document_has_nothing_to_index(tmp_path: Path, name: str) -> None:
    assert reason_of(write(tmp_path, name, " \n\t\n  \n"), skipped=True) == "no text content"


# --- decoding of the text formats ----------------------------------------------------------------


def test_binary_content_with_a_markdown_suffix_is_refused(tmp_path: Path) -> None:
    png_header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)
    assert reason_of(write(tmp_path, "image.md", png_header)) == "binary content in a text file"


def test_invalid_utf8_names_the_byte_and_its_offset(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.txt", b"Valid start. \xff then junk")
    assert reason_of(path) == "not valid UTF-8 (invalid byte 0xff at offset 13); save the file as UTF-8"


def test_latin1_file_is_rejected_with_advice_to_save_as_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "cafe.md", "# Café procedure\n\nServe crème brûlée.".encode("latin-1"))
    assert reason_of(path) == "not valid UTF-8 (invalid byte 0xe9 at offset 5); save the file as UTF-8"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_unicode_file_with_a_bom_is_decoded(tmp_path: Path, encoding: str) -> None:
    content = "Crème brûlée procedure\n\nHeat to 180 °C."
    data = content.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data  # the BE codec writes no BOM of its own
    doc = load_document(write(tmp_path, "unicode.txt", data))
    assert doc.text == content
    assert doc.title == "Crème brûlée procedure"


def test_windows_and_old_mac_newlines_are_normalized(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "crlf.txt", b"First line\r\nsame paragraph\r\n\r\nSecond\rpara"))
    assert [block.text for block in doc.blocks] == ["First line\nsame paragraph", "Second\npara"]


# --- Markdown ------------------------------------------------------------------------------------

MARKDOWN = """\
---
title: "Pump Maintenance"
owner: plant-ops
---
# Pump maintenance SOP

Isolate the pump **before** work.
Wear gloves.

Preparation
-----------

```bash
lockout --pump P-101
```

    indented code line
    second line

| Step | Check |
|------|-------|
| 1    | valve |

- bring tools
  - torque wrench
- bring the log book

1. close valve
2. drain line

### Sign-off

> Supervisor signs the form.
"""


def test_markdown_blocks_keep_kinds_levels_and_order(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "pump.md", MARKDOWN))
    assert doc.doc_type == "md"
    assert kinds(doc) == [
        "heading",
        "paragraph",
        "heading",
        "code",
        "code",
        "table",
        "list",
        "list",
        "heading",
        "paragraph",
    ]
    assert headings(doc) == [(1, "Pump maintenance SOP"), (2, "Preparation"), (3, "Sign-off")]
    assert_consistent(doc)


def test_markdown_blocks_keep_their_original_source(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "pump.md", MARKDOWN))
    texts = [block.text for block in doc.blocks]
    assert "Isolate the pump **before** work.\nWear gloves." in texts
    assert "```bash\nlockout --pump P-101\n```" in texts  # fences kept: the chunker keeps code whole
    assert "    indented code line\n    second line" in texts
    assert "| Step | Check |\n|------|-------|\n| 1    | valve |" in texts
    assert "- bring tools\n  - torque wrench\n- bring the log book" in texts
    assert "1. close valve\n2. drain line" in texts
    assert "> Supervisor signs the form." in texts


def test_markdown_front_matter_is_dropped_but_gives_the_title(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "pump.md", MARKDOWN))
    assert doc.title == "Pump Maintenance"
    assert doc.text.startswith("Pump maintenance SOP\n\nIsolate")
    assert "owner: plant-ops" not in doc.text


def test_markdown_title_falls_back_to_first_h1_then_file_stem(tmp_path: Path) -> None:
    with_h1 = load_document(write(tmp_path, "a.md", "Intro.\n\n## Minor\n\n# The `main` title\n\nText."))
    assert with_h1.title == "The main title"
    without = load_document(write(tmp_path, "valve_check-procedure.md", "## Only level two\n\nText."))
    assert without.title == "valve check procedure"


def test_markdown_with_only_front_matter_has_nothing_to_index(tmp_path: Path) -> None:
    path = write(tmp_path, "meta.md", "---\ntitle: Nothing else\n---\n\n<!-- a comment -->\n")
    assert reason_of(path, skipped=True) == "no text content"


# --- plain text ----------------------------------------------------------------------------------


def test_plain_text_splits_paragraphs_on_blank_lines_and_titles_with_first_line(tmp_path: Path) -> None:
    text = "Boiler start-up\n\nOpen the damper.\nLight the pilot.\n  \n\nWait.\n"
    path = write(tmp_path, "notes.txt", text)
    doc = load_document(path)
    assert doc.doc_type == "txt"
    assert doc.title == "Boiler start-up"
    assert [block.text for block in doc.blocks] == [
        "Boiler start-up",
        "Open the damper.\nLight the pilot.",
        "Wait.",
    ]
    assert set(kinds(doc)) == {"paragraph"}
    assert_consistent(doc)


def test_plain_text_title_is_the_stem_when_the_first_line_is_long(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "shift_handover.txt", LONG_PARAGRAPH))
    assert doc.title == "shift handover"


# --- HTML ----------------------------------------------------------------------------------------

HTML = """\
<!DOCTYPE html>
<html><head><title>Valve Inspection</title>
<style>p { color: red }</style><script>var secret = "from the head";</script></head>
<body>
<h1>Valve <em>inspection</em></h1>
<p>Check   the
   <b>valve</b> body<br>for cracks.</p>
<h2>Tools</h2>
<ul><li>Torch</li><li>Mirror<ul><li>small</li></ul></li></ul>
<ol><li>Open</li><li>Inspect</li></ol>
<pre>gauge --read
  --unit bar</pre>
<table><tr><th>Part</th><th>Limit</th></tr><tr><td>Seal</td><td>2 | 3 mm</td></tr></table>
<div>Loose text in a div</div>
<script>document.write("injected by script")</script>
<noscript>enable javascript</noscript><template><p>template text</p></template>
</body></html>
"""


def test_html_blocks_keep_kinds_levels_and_order(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "valve.html", HTML))
    assert doc.doc_type == "html"
    assert doc.title == "Valve Inspection"
    assert kinds(doc) == ["heading", "paragraph", "heading", "list", "list", "code", "table", "paragraph"]
    assert headings(doc) == [(1, "Valve inspection"), (2, "Tools")]
    assert_consistent(doc)


def test_html_lists_tables_and_pre_are_rendered_as_text(tmp_path: Path) -> None:
    texts = [block.text for block in load_document(write(tmp_path, "valve.html", HTML)).blocks]
    assert "Check the valve body for cracks." in texts  # inline text joined with single spaces
    assert "- Torch\n- Mirror\n  - small" in texts
    assert "1. Open\n2. Inspect" in texts
    assert "gauge --read\n  --unit bar" in texts
    assert "| Part | Limit |\n| --- | --- |\n| Seal | 2 \\| 3 mm |" in texts


def test_html_script_style_and_hidden_content_never_reach_the_text(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "valve.html", HTML))
    for hidden in ("secret", "injected", "color: red", "enable javascript", "template text"):
        assert hidden not in doc.text


def test_html_layout_table_is_walked_not_flattened(tmp_path: Path) -> None:
    page = (
        "<table><tr><td>Menu</td><td><h1>Hoist SOP</h1><p>Check the chain.</p>"
        "<table><tr><th>Load</th><th>Limit</th></tr><tr><td>Drum</td><td>2 t</td></tr></table>"
        "</td></tr></table>"
    )
    doc = load_document(write(tmp_path, "intranet.html", page))
    assert [(block.kind, block.text) for block in doc.blocks] == [
        ("paragraph", "Menu"),
        ("heading", "Hoist SOP"),
        ("paragraph", "Check the chain."),
        ("table", "| Load | Limit |\n| --- | --- |\n| Drum | 2 t |"),
    ]


def test_html_title_falls_back_to_first_h1_then_stem(tmp_path: Path) -> None:
    with_h1 = load_document(write(tmp_path, "a.html", "<p>intro</p><h1>Main heading</h1>"))
    assert with_h1.title == "Main heading"
    without = load_document(write(tmp_path, "cooling-tower.htm", "<p>Only a paragraph.</p>"))
    assert without.title == "cooling tower"


def test_html_survives_10000_deep_nesting(tmp_path: Path) -> None:
    depth = 10_000
    page = (
        "<html><head><title>Deep</title></head><body><h1>Top</h1>"
        + "<div>" * depth
        + "deepest text<script>hidden()</script>"
        + "</div>" * depth
        + "<p>after the nest</p></body></html>"
    )
    doc = load_document(write(tmp_path, "deep.html", page))
    assert doc.title == "Deep"
    assert "deepest text" in doc.text
    assert "after the nest" in doc.text  # libxml2 stops at its depth limit; nothing may be lost
    assert "hidden" not in doc.text
    assert_consistent(doc)


def test_html_honours_a_meta_charset_for_legacy_encodings(tmp_path: Path) -> None:
    page = '<html><head><meta charset="windows-1252"></head><body><p>Crème brûlée</p></body></html>'
    doc = load_document(write(tmp_path, "legacy.html", page.encode("cp1252")))
    assert doc.text == "Crème brûlée"


def test_html_without_charset_in_latin1_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "legacy.html", "<p>Crème</p>".encode("latin-1"))
    assert reason_of(path) == "not valid UTF-8 (invalid byte 0xe8 at offset 5); save the file as UTF-8"


# --- PDF -----------------------------------------------------------------------------------------


def test_pdf_paragraphs_carry_their_page_number(tmp_path: Path) -> None:
    path = make_pdf(
        tmp_path / "three.pdf",
        [
            ["Page one heading", LONG_PARAGRAPH, "First page closing remark."],
            ["Second page only paragraph."],
            ["Third page text.", "- check seal\n- check bolts"],
        ],
    )
    doc = load_document(path)
    assert doc.doc_type == "pdf"
    assert [(block.page, block.kind, block.text) for block in doc.blocks] == [
        (1, "paragraph", "Page one heading"),
        (1, "paragraph", LONG_PARAGRAPH),  # wrapped lines joined back with spaces
        (1, "paragraph", "First page closing remark."),
        (2, "paragraph", "Second page only paragraph."),
        (3, "paragraph", "Third page text."),
        (3, "list", "- check seal\n- check bolts"),
    ]
    assert_consistent(doc)


def test_pdf_numbered_headings_tables_and_lists_are_recognised(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 5, text="1. Purpose", new_x="LMARGIN", new_y="NEXT")
    purpose = "This procedure keeps the chiller within its limits."
    pdf.multi_cell(0, 5, text=purpose, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)
    for row in [
        ("Tag", "Limit", "Action"),
        ("TT-101", "45 C", "Trip pump"),
        ("PT-102", "6 bar", "Open relief"),
    ]:
        for cell in row:
            pdf.cell(50, 6, text=cell)  # columns: wide gaps in layout-mode text
        pdf.ln(6)
    pdf.ln(5)
    pdf.multi_cell(0, 5, text="2. Steps\n1. Open the valve\n2. Start the pump", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "chiller.pdf"))
    doc = load_document(tmp_path / "chiller.pdf")
    assert [(block.kind, block.level, block.text) for block in doc.blocks] == [
        ("heading", 1, "1. Purpose"),
        ("paragraph", 0, "This procedure keeps the chiller within its limits."),
        (
            "table",
            0,
            "| Tag | Limit | Action |\n| --- | --- | --- |\n| TT-101 | 45 C | Trip pump |\n"
            "| PT-102 | 6 bar | Open relief |",
        ),
        ("heading", 1, "2. Steps"),  # numbering restarts below it: a heading, not item 2
        ("list", 0, "1. Open the valve\n2. Start the pump"),
    ]
    assert {block.page for block in doc.blocks} == {1}
    assert_consistent(doc)


def test_pdf_title_prefers_meaningful_metadata(tmp_path: Path) -> None:
    titled = make_pdf(tmp_path / "a.pdf", [["Body first line", "Text."]], title="Chiller Start-up")
    assert load_document(titled).title == "Chiller Start-up"
    junk = make_pdf(tmp_path / "b.pdf", [["Body first line", "Text."]], title="Microsoft Word - draft.docx")
    assert load_document(junk).title == "Body first line"
    long_first_line = make_pdf(tmp_path / "compressor_sop.pdf", [[LONG_PARAGRAPH]])
    assert load_document(long_first_line).title == "compressor sop"


def test_pdf_hyphenated_line_breaks_are_joined(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "hyphen.pdf", [["Perform the mainte-\nnance weekly."]])
    assert load_document(path).text == "Perform the maintenance weekly."


def test_pdf_bare_page_numbers_are_dropped(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "numbers.pdf", [["Real text one.", "Page 1 of 2"], ["Real text two.", "2"]])
    assert load_document(path).text == "Real text one.\n\nReal text two."


def test_pdf_encrypted_with_a_user_password_is_refused(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "locked.pdf", [["Secret text."]], user_password="secret")
    assert reason_of(path) == "encrypted PDF: a password is required"


def test_pdf_encrypted_with_an_empty_user_password_is_read(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "restricted.pdf", [["Print-restricted text."]], user_password="")
    assert load_document(path).text == "Print-restricted text."


def test_truncated_pdf_is_reported_as_damaged(tmp_path: Path) -> None:
    data = make_pdf(tmp_path / "whole.pdf", [[LONG_PARAGRAPH]]).read_bytes()
    path = write(tmp_path, "truncated.pdf", data[: len(data) // 2])
    assert reason_of(path).startswith("damaged PDF: ")


def test_pdf_with_a_broken_xref_is_reported_as_damaged(tmp_path: Path) -> None:
    data = make_pdf(tmp_path / "whole.pdf", [[LONG_PARAGRAPH]]).read_bytes()
    path = write(tmp_path, "badxref.pdf", data.replace(b"startxref", b"startxyzw"))
    assert reason_of(path) == "damaged PDF: startxref not found"


def test_file_that_is_not_a_pdf_at_all_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "fake.pdf", "just some text pretending to be a PDF")
    assert reason_of(path) == "not a PDF file (no %PDF- header at the start)"


def test_pdf_without_text_is_reported_as_probably_scanned(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "scan.pdf", [[], []])
    assert reason_of(path) == "no extractable text (scanned PDF? OCR is not available here)"


def test_image_only_pdf_is_reported_as_probably_scanned(tmp_path: Path) -> None:
    from PIL import Image

    image = tmp_path / "page.png"
    Image.new("RGB", (40, 40), "gray").save(image)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=100)
    pdf.output(str(tmp_path / "photo.pdf"))
    assert reason_of(tmp_path / "photo.pdf") == "no extractable text (scanned PDF? OCR is not available here)"


def test_pdf_with_a_corrupt_content_stream_says_what_pypdf_reported(tmp_path: Path) -> None:
    data = bytearray(make_pdf(tmp_path / "whole.pdf", [[LONG_PARAGRAPH]]).read_bytes())
    start = data.find(b"stream") + 10
    data[start : start + 50] = bytes(50)  # the page's compressed text no longer inflates
    reason = reason_of(write(tmp_path, "corrupt.pdf", bytes(data)))
    assert reason.startswith("no extractable text (scanned PDF? OCR is not available here); pypdf reported: ")
    assert "decompressing" in reason


def test_pdf_warnings_stay_out_of_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = make_pdf(tmp_path / "whole.pdf", [[LONG_PARAGRAPH]]).read_bytes()
    path = write(tmp_path, "noisy.pdf", data[: len(data) // 2])
    with caplog.at_level(logging.DEBUG):
        assert "EOF marker not found" in reason_of(path)  # quoted in the error instead
    assert not [record for record in caplog.records if record.name.startswith("pypdf")]
    assert logging.getLogger("pypdf").propagate  # restored once the load is over


# --- DOCX ----------------------------------------------------------------------------------------


def make_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_paragraph("Generator Test Run", style="Title")
    document.add_heading("Purpose", level=1)
    document.add_paragraph("Run the generator monthly.")
    document.add_paragraph("ear defenders", style="List Bullet")
    document.add_paragraph("foam plugs", style="List Bullet 2")
    document.add_paragraph("gloves", style="List Bullet")
    document.add_heading("Steps", level=2)
    document.add_paragraph("start the engine", style="List Number")
    document.add_paragraph("check the load", style="List Number")
    table = document.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "Reading", (0, 1): "Limit", (1, 0): "Oil | bar", (1, 1): "4"}.items():
        table.cell(row, col).text = text
    document.add_paragraph("Sign the log.")
    document.save(str(path))
    return path


def test_docx_blocks_keep_kinds_levels_and_order(tmp_path: Path) -> None:
    doc = load_document(make_docx(tmp_path / "generator.docx"))
    assert doc.doc_type == "docx"
    assert doc.title == "Generator Test Run"
    assert [(block.kind, block.level, block.text) for block in doc.blocks] == [
        ("heading", 1, "Generator Test Run"),
        ("heading", 1, "Purpose"),
        ("paragraph", 0, "Run the generator monthly."),
        ("list", 0, "- ear defenders\n  - foam plugs\n- gloves"),
        ("heading", 2, "Steps"),
        ("list", 0, "1. start the engine\n2. check the load"),
        ("table", 0, "| Reading | Limit |\n| --- | --- |\n| Oil \\| bar | 4 |"),
        ("paragraph", 0, "Sign the log."),
    ]
    assert_consistent(doc)


def test_docx_direct_numbering_makes_list_items(tmp_path: Path) -> None:
    # Word's own lists: "List Paragraph" plus a w:numPr pointing into numbering.xml.
    document = docx.Document()
    document.add_paragraph("Before.")
    for num_id, level, text in [("5", "0", "drain the tank"), ("5", "1", "open V-1"), ("5", "0", "flush")]:
        paragraph = document.add_paragraph(text, style="List Paragraph")
        numbering = OxmlElement("w:numPr")
        for tag, value in (("w:ilvl", level), ("w:numId", num_id)):
            child = OxmlElement(tag)
            child.set(qn("w:val"), value)
            numbering.append(child)
        paragraph._p.get_or_add_pPr().append(numbering)
    document.save(str(tmp_path / "numbered.docx"))
    doc = load_document(tmp_path / "numbered.docx")
    assert [(block.kind, block.text) for block in doc.blocks] == [
        ("paragraph", "Before."),
        ("list", "1. drain the tank\n  - open V-1\n2. flush"),  # level 1 of numId 5 has no format: bullets
    ]


def test_docx_title_falls_back_to_first_heading_then_stem(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Main heading", level=1)
    document.save(str(tmp_path / "a.docx"))
    assert load_document(tmp_path / "a.docx").title == "Main heading"
    document = docx.Document()
    document.add_paragraph("Just text.")
    document.save(str(tmp_path / "fuel_transfer.docx"))
    assert load_document(tmp_path / "fuel_transfer.docx").title == "fuel transfer"


def test_docx_that_is_not_a_zip_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "fake.docx", "plain text with a docx suffix")
    assert reason_of(path) == "not a valid .docx (not a zip archive)"


def test_zip_without_a_word_document_is_reported(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "not a word file")
    path = write(tmp_path, "other.docx", buffer.getvalue())
    assert reason_of(path) == "not a valid .docx (the archive has no word/document.xml)"


def test_zip_bomb_docx_is_refused_before_anything_is_inflated(tmp_path: Path) -> None:
    path = tmp_path / "bomb.docx"
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as member,
    ):
        zeros = bytes(MB)
        for _ in range(300):  # 300 MB inflated, ~1.3 MB on disk
            member.write(zeros)
    assert path.stat().st_size < 2 * MB
    # Garble the compressed data, keep the directory: inflating any of it would now fail with another reason.
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("word/document.xml")
    with path.open("r+b") as handle:
        handle.seek(member.header_offset + 30 + len(member.filename.encode()) + 64)
        handle.write(b"\xff" * 4096)
    reason = reason_of(path)
    assert reason == "refusing a suspicious .docx (zip bomb?): it expands to 300 MB, over 200 MB"


def test_docx_member_with_an_absurd_compression_ratio_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ratio.docx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", bytes(20 * MB))
    assert reason_of(path).startswith("refusing a suspicious .docx (zip bomb?): word/document.xml expands ")
