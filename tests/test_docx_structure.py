"""A Word file read as its reader sees it: headings from heading styles and outline levels, then bold or
large Normal paragraphs; the header and footer kept as furniture; the control block from the core
properties and the first page."""

from __future__ import annotations

from pathlib import Path

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt

from appliance.ingest.document import LoadedDocument
from appliance.ingest.loaders import load_document

STEP_TEXT = "Open the helpdesk portal and find the request in the queue of the node."


def headings(doc: LoadedDocument) -> list[tuple[int, str]]:
    return [(block.level, block.text) for block in doc.blocks if block.kind == "heading"]


def bold_paragraph(document: docx.document.Document, text: str, size: float | None = None) -> None:
    run = document.add_paragraph().add_run(text)
    run.bold = True
    if size is not None:
        run.font.size = Pt(size)


def test_bold_normal_paragraphs_are_headings_and_a_larger_one_is_the_title(tmp_path: Path) -> None:
    document = docx.Document()
    bold_paragraph(document, "SOP for releasing a dataset", 18)
    bold_paragraph(document, "Purpose")
    document.add_paragraph("This SOP describes how a helpdesk officer releases a dataset to the public.")
    bold_paragraph(document, "Procedure")
    for step in ("Log in to the portal.", "Open the dataset.", "Press Release."):
        document.add_paragraph(step, style="List Number")
    bold_paragraph(document, "Contact")
    document.add_paragraph("Write to the helpdesk when a release fails twice.")
    path = tmp_path / "release.docx"
    document.save(str(path))
    doc = load_document(path)
    assert doc.title == "SOP for releasing a dataset"
    assert headings(doc) == [(2, "Purpose"), (2, "Procedure"), (2, "Contact")]
    assert "1. Log in to the portal.\n2. Open the dataset.\n3. Press Release." in [b.text for b in doc.blocks]


def test_an_outline_level_makes_a_heading_whatever_the_style_is_called(tmp_path: Path) -> None:
    document = docx.Document()
    style = document.styles.add_style("Kapitel", WD_STYLE_TYPE.PARAGRAPH)
    outline = OxmlElement("w:outlineLvl")
    outline.set(qn("w:val"), "0")
    style.element.get_or_add_pPr().append(outline)
    document.add_paragraph("Installation", style="Kapitel")
    document.add_paragraph(STEP_TEXT)
    document.add_paragraph("Wartung", style="Kapitel")
    document.add_paragraph(STEP_TEXT)
    path = tmp_path / "anleitung.docx"
    document.save(str(path))
    assert headings(load_document(path)) == [(1, "Installation"), (1, "Wartung")]


def test_header_and_footer_are_furniture_and_the_core_properties_give_the_control_block(tmp_path: Path) -> None:
    document = docx.Document()
    section = document.sections[0]
    section.header.paragraphs[0].text = "Riverbend WTP\tSOP-LAB-009\tRev 2"
    section.footer.paragraphs[0].text = "Uncontrolled when printed"
    document.core_properties.title = "Lab sample custody"
    document.core_properties.identifier = "SOP-LAB-009"
    document.add_paragraph("Effective date: 2025-02-03")
    document.add_paragraph(STEP_TEXT)
    path = tmp_path / "custody.docx"
    document.save(str(path))
    doc = load_document(path)
    assert doc.furniture == ["Riverbend WTP SOP-LAB-009 Rev 2", "Uncontrolled when printed"]
    assert "Riverbend" not in doc.text
    control = doc.control
    assert (control.number, control.revision, control.effective) == ("SOP-LAB-009", "2", "2025-02-03")
