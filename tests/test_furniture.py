"""Running headers and footers are told apart from the text by where they stand and how often they repeat
there; lines that say what they are (page counts, "uncontrolled when printed", licences) by their words."""

from __future__ import annotations

from appliance.ingest.loaders.furniture import find_furniture, says_furniture, shape


def page(number: int, body: list[str], *, header: str = "ACME Water  SOP-7  Rev 3") -> list[str]:
    return [header, *body, f"Printed 2025-0{number}-01    Page {number} of 4"]


BODIES = [
    ["1. Purpose", "The pump is started from the panel.", "It runs for ten minutes."],
    ["2. Scope", "Applies to the high-lift pumps.", "And to the booster station."],
    ["3. Procedure", "Open VLV-1.", "Start P-1.", "Wait for the pressure to settle."],
    ["4. Records", "Log the start on form F-9."],
]


def test_a_header_and_a_footer_repeating_with_varying_numbers_and_dates_are_furniture() -> None:
    pages = [page(n, body) for n, body in enumerate(BODIES, start=1)]
    found = find_furniture(pages)
    assert found.lines_of_page == [{0, len(lines) - 1} for lines in pages]
    assert found.distinct == ["ACME Water SOP-7 Rev 3", "Printed 2025-01-01 Page 1 of 4"]


def test_the_same_words_at_another_height_are_text_not_furniture() -> None:
    pages = [["Procedure", "Open VLV-1.", "Close VLV-2."], ["Open VLV-1.", "Then drain the line.", "Close VLV-2."]]
    heights = [[700.0, 680.0, 660.0], [500.0, 480.0, 460.0]]
    assert find_furniture(pages, heights).lines_of_page == [set(), set()]


def test_a_chapters_running_head_on_consecutive_pages_is_furniture() -> None:
    heads = ["Chapter 3 Installation"] * 3 + ["Chapter 4 Operation"] * 3
    words = ["pump", "valve", "tank", "screen", "blower", "meter", "drain", "filter", "gauge", "hoist", "fan", "door"]
    pages = [[head, f"About the {words[n]}.", f"Then the {words[-n - 1]} is checked."] for n, head in enumerate(heads)]
    pages += [[f"Index of the {word}", f"See the {word} chapter."] for word in words[:6]]
    found = find_furniture(pages)
    assert all(0 in taken for taken in found.lines_of_page[:6])
    assert found.distinct == ["Chapter 3 Installation", "Chapter 4 Operation"]


def test_a_running_head_repeating_the_heading_below_it_is_furniture() -> None:
    pages = [["Preparing the gel", "Notes for the reader.", "Preparing the gel", "Mix the dye."]]
    assert find_furniture(pages).lines_of_page == [{0}]


def test_pages_alike_from_top_to_bottom_keep_their_text() -> None:
    pages = [[f"Bay {n} inspection", f"Check bay {n}."] for n in range(10)]
    assert find_furniture(pages).lines_of_page == [set()] * 10


def test_bare_page_numbers_are_dropped_without_being_kept() -> None:
    pages = [["Text of page one, long enough.", "Second line.", "1"], ["Page two starts.", "Another.", "Page 2"]]
    found = find_furniture(pages)
    assert found.lines_of_page == [{2}, {2}] and found.distinct == []


def test_lines_that_say_they_are_furniture() -> None:
    for line in (
        "Page 3 of 9",
        "SOP-7 Page 3 of 9",
        "UNCONTROLLED WHEN PRINTED",
        "Printed copies are uncontrolled",
        "This work is licensed under a Creative Commons Attribution 4.0 licence",
        "© 2015 Thermo Fisher Scientific Inc. All rights reserved.",
        "Continued on next page",
        "Procedure, continued",
    ):
        assert says_furniture(line), line
    for line in ("See page 20 for ordering information", "Open the valve.", "The copy on file is controlled"):
        assert not says_furniture(line), line


def test_shape_lets_numbers_and_month_names_vary() -> None:
    assert shape("Issued 3 May 2024  p. 2") == shape("Issued 14 June 2024 p. 11")
    assert shape("SOP-7 Rev 3") != shape("SOP-7 Draft")
