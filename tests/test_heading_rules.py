"""The heading rules below a file's own outline: type calibrated on each document's body text, numbering
in its common forms, a step kept a step, levels from numbering and type, the title set apart."""

from __future__ import annotations

import pytest

from appliance.ingest.loaders.headings import TITLE, Piece, assign_levels, heading_number, is_step

BODY = "The operator opens the valve slowly and watches the pressure gauge until it reads zero."


def body(size: float = 10.0, text: str = BODY) -> Piece:
    return Piece("paragraph", text, 2, size, False)


@pytest.mark.parametrize(
    ("text", "parts", "form"),
    [
        ("5 Scope", (5,), "bare"),
        ("5. Scope", (5,), "decimal"),
        ("5.1 Prepare", (5, 1), "decimal"),
        ("5.1.2 Isolate the bank", (5, 1, 2), "decimal"),
        ("A. Forms", (1,), "letter"),
        ("IV. Maintenance", (4,), "roman"),
        ("Section 5 Records", (5,), "named"),
        ("Appendix B", (2,), "named"),
    ],
)
def test_numbering_in_its_common_forms(text: str, parts: tuple[int, ...], form: str) -> None:
    number = heading_number(text)
    assert number is not None and (number.parts, number.form) == (parts, form)


def test_step_n_is_a_step_and_never_numbers_a_heading() -> None:
    assert is_step("Step 3: Open the valve") and is_step("STEP 12 Close it")
    assert heading_number("Step 3 Open the valve") is None
    assert heading_number("5 mL of reagent") is None  # a quantity, not a section


def test_larger_or_bolder_than_this_documents_body_is_a_heading_whatever_the_size() -> None:
    for size in (8.0, 11.0, 14.0):  # the same rule on a small-print and a large-print document
        pieces = [
            Piece("paragraph", "Purpose", 1, size * 1.3, True),
            body(size),
            Piece("paragraph", "Isolation", 1, size, True),
            body(size),
            body(size, "Short plain line"),
            body(size),
        ]
        assert assign_levels(pieces) == [1, 0, 2, 0, 0, 0]


def test_a_numbered_step_in_body_type_stays_a_step_where_headings_are_set_apart() -> None:
    pieces = [
        Piece("paragraph", "1. Purpose", 1, 13, True),
        body(),
        Piece("paragraph", "2. Procedure", 1, 13, True),
        body(),
        Piece("list", "2. Weight-based dosing", 1, 10, False),
        body(),
        Piece("paragraph", "3. Records", 1, 13, True),
        body(),
    ]
    assert assign_levels(pieces) == [1, 0, 1, 0, 0, 0, 1, 0]


def test_numbering_decides_where_the_type_says_nothing_and_a_list_stays_a_list() -> None:
    pieces = [
        Piece("paragraph", "1. Purpose", 1, 10, False),
        body(),
        Piece("paragraph", "2. Procedure", 1, 10, False),
        Piece("list", "1. Open the valve", 1, 10, False),
        Piece("list", "2. Start the pump", 1, 10, False),
        Piece("paragraph", "2.1 After the start", 1, 10, False),
        body(),
    ]
    assert assign_levels(pieces) == [1, 0, 1, 0, 0, 2, 0]


def test_a_bare_number_needs_the_type_of_a_heading() -> None:
    plain = [body(), Piece("paragraph", "5 Scope", 1, 10, False), body()]
    assert assign_levels(plain) == [0, 0, 0]
    bold = [body(), Piece("paragraph", "5 Scope", 1, 10, True), body()]
    assert assign_levels(bold) == [0, 1, 0]


def test_large_lines_with_nothing_under_them_are_a_cover_not_headings() -> None:
    pieces = [
        Piece("paragraph", "Author: CERT", 1, 14, False),
        Piece("paragraph", "Version: 2.0", 1, 14, False),
        Piece("paragraph", "E-Mail: cert@example.org", 1, 14, False),
        Piece("paragraph", "Abstract", 1, 20, True),
        body(),
    ]
    assert assign_levels(pieces) == [0, 0, 0, 1, 0]


def test_a_title_above_every_other_heading_is_set_apart() -> None:
    pieces = [
        Piece("paragraph", "Pump Station Manual", 1, 24, True),
        Piece("paragraph", "Installation", 1, 14, True),
        body(),
        Piece("paragraph", "Operation", 1, 14, True),
        body(),
    ]
    assert assign_levels(pieces) == [TITLE, 2, 0, 2, 0]


def test_a_flat_outline_takes_its_depth_from_its_numbering() -> None:
    pieces = [
        Piece("paragraph", "Safety", 1, given_level=1),
        body(),
        Piece("paragraph", "Section 1 Introduction", 1, given_level=1),
        Piece("paragraph", "General Description", 1, given_level=1),
        body(),
        Piece("paragraph", "Section 2 Installation", 1, given_level=1),
        Piece("paragraph", "Mounting", 1, given_level=1),
        body(),
    ]
    assert assign_levels(pieces) == [1, 0, 1, 2, 0, 1, 2, 0]


def test_signal_words_and_contents_lines_are_never_headings() -> None:
    pieces = [
        Piece("paragraph", "NOTE", 1, 12, True),
        body(),
        Piece("paragraph", "Introduction ........................ 4", 1, 12, True),
        body(),
    ]
    assert assign_levels(pieces) == [0, 0, 0, 0]
