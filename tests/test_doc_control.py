"""A controlled document's number, revision and dates are read from where people write them, labelled
or in a sentence, and only what reads as such a value is taken; dates that read two ways stay as written."""

from __future__ import annotations

import pytest

from appliance.index.records import DocumentControl
from appliance.ingest.doc_control import read_control
from appliance.ingest.document import DocumentBuilder, LoadedDocument
from appliance.text.dates import read_date


def document(*blocks: tuple[str, str], furniture: list[str] | None = None, **properties: str) -> LoadedDocument:
    builder = DocumentBuilder("sop.docx", "docx")
    for kind, text in blocks:
        builder.add(kind, text)  # type: ignore[arg-type]
    doc = builder.build("A procedure")
    doc.furniture = furniture or []
    doc.properties = dict(properties)
    return doc


def test_a_field_value_table_gives_every_field() -> None:
    table = (
        "| Field | Value |\n| --- | --- |\n| Document number | SOP-CL-004 |\n| Revision | 5 |\n"
        "| Effective date | 2023-08-07 |\n| Next review | 2024-08-07 |"
    )
    control = read_control(document(("heading", "SOP-CL-004 Chlorine"), ("table", table)))
    assert control == DocumentControl("SOP-CL-004", None, "5", "2023-08-07", "2024-08-07")
    assert control.label() == "SOP-CL-004 rev 5, effective 2023-08-07"


def test_a_row_of_labels_over_a_row_of_values_is_read_by_column() -> None:
    table = (
        "| SOP No. | Rev. | Effective Date | Review Date |\n| --- | --- | --- | --- |\n"
        "| QA-012 | B | 1 May 2025 | May 2027 |"
    )
    control = read_control(document(("table", table)))
    assert (control.number, control.revision, control.effective, control.review) == (
        "QA-012",
        "B",
        "2025-05-01",
        "2027-05",
    )


def test_labelled_lines_and_a_sentence_are_read_too() -> None:
    doc = document(
        ("paragraph", "Author: M. Gravina\nRevision: 171002\nEffective date: 10/22/2017"),
        ("paragraph", "Plant SOP. Document number SOP-OPS-001, revision 4, effective 2024-01-02."),
    )
    control = read_control(doc)
    assert (control.number, control.revision, control.effective) == ("SOP-OPS-001", "171002", "2017-10-22")


def test_the_running_footer_and_the_core_properties_fill_what_the_page_does_not_say() -> None:
    doc = document(("paragraph", "How to start the pump."), furniture=["SOP-PMP-009  Rev 7"], version="7.1")
    assert (read_control(doc).number, read_control(doc).revision) == ("SOP-PMP-009", "7")
    doc = document(("paragraph", "How to start the pump."), identifier="WI-44", version="2.1")
    assert (read_control(doc).number, read_control(doc).revision) == ("WI-44", "2.1")


def test_a_review_cycle_gives_the_review_date_marked_as_worked_out() -> None:
    doc = document(("paragraph", "Effective date: 2023-02-20\nReview cycle: Annual"))
    control = read_control(doc)
    assert (control.review, control.review_from_cycle) == ("2024-02-20", True)
    doc = document(("paragraph", "Revision 4, effective 2024-01-02. Reviewed every two years."))
    assert read_control(doc).review == "2026-01-02"


def test_software_versions_and_dates_without_a_label_are_not_the_documents() -> None:
    doc = document(("paragraph", "You will need R version 4.2.3 and the script of 05/12/23."))
    assert read_control(doc) == DocumentControl()


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2025-05-01", "2025-05-01"),
        ("1 May 2025", "2025-05-01"),
        ("May 1, 2025", "2025-05-01"),
        ("01-May-25", "2025-05-01"),
        ("15/05/2025", "2025-05-15"),
        ("05/15/2025", "2025-05-15"),
        ("05/01/2025", None),  # 5 January or 1 May: kept as written
        ("September 2025", "2025-09"),
    ],
)
def test_dates_are_read_in_their_common_forms(text: str, iso: str | None) -> None:
    found = read_date(text)
    assert found is not None and found.iso == iso and found.text == text


def test_what_is_no_date_is_not_read_as_one() -> None:
    assert read_date("Annual") is None and read_date("31/31/2025") is None and read_date("2025-13-01") is None


def test_a_review_date_in_the_past_is_overdue_and_one_written_two_ways_never_is() -> None:
    assert DocumentControl(review="2024-08-07").review_overdue("2025-01-01")
    assert not DocumentControl(review="2026-08-07").review_overdue("2025-01-01")
    assert DocumentControl(review="2024-12").review_overdue("2025-01-01")
    assert not DocumentControl(review="05/01/2024").review_overdue("2025-01-01")
    assert not DocumentControl().review_overdue("2025-01-01")
