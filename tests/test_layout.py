"""How a section's text is laid out for an operator: steps whole, tables whole, signal words marked."""

from __future__ import annotations

import pytest

from appliance.text.layout import layout_items, list_marker, signal_kind


def _items(text: str) -> list[tuple[str, str]]:
    return [(item.kind, text[item.start : item.end]) for item in layout_items(text)]


def test_a_numbered_step_keeps_its_wrapped_lines_and_nothing_of_the_next_step() -> None:
    text = "1. Close the bank header isolation valve\n   VLV-4501-A.\n2. Close the gas valve of CYL-1."
    assert _items(text) == [
        ("step", "1. Close the bank header isolation valve\n   VLV-4501-A."),
        ("step", "2. Close the gas valve of CYL-1."),
    ]


def test_bullets_are_items_with_their_nesting_level() -> None:
    items = layout_items("7. Stop the leak:\n  - packing: tighten the nut;\n  - yoke: close the valve.")
    assert [(i.kind, i.level, i.numbered) for i in items] == [("step", 0, True), ("item", 1, False), ("item", 1, False)]


def test_a_table_and_a_code_block_are_one_item_each() -> None:
    table = "| Check | Requirement |\n| --- | --- |\n| AIT-452 | < 0.5 ppm |"
    text = table + "\n\n```bash\nkubectl get pods\nkubectl logs x\n```"
    assert [kind for kind, _ in _items(text)] == ["table", "code"]
    assert _items(text)[1][1].startswith("```bash") and _items(text)[1][1].endswith("```")


def test_paragraphs_are_separated_by_blank_lines() -> None:
    assert _items("One paragraph\nwrapped.\n\nAnother one.") == [
        ("text", "One paragraph\nwrapped."),
        ("text", "Another one."),
    ]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("WARNING: Chlorine is toxic.", "warning"),
        ("**WARNING:** never heat a container.", "warning"),
        ("Warning: never heat a container.", "warning"),
        ("DANGER - high voltage", "warning"),
        ("CAUTION: hot surface.", "caution"),
        ("**Caution** the pump may start.", "caution"),
        ("HOLD POINT: the supervisor signs before restart.", "hold"),
        ("**Hold point:** supervisor signs.", "hold"),
        ("NOTE: the alarm resets itself.", "note"),
        ("3. **WARNING:** do not open the door.", "warning"),
        ("- CAUTION: wear gloves.", "caution"),
    ],
)
def test_signal_words_are_marked_however_they_are_written(line: str, kind: str) -> None:
    assert signal_kind(line) == kind
    assert layout_items(line)[0].kind == kind


@pytest.mark.parametrize(
    "line",
    [
        "Note that the alarm resets itself.",
        "The warning light flashes amber.",
        "Hold the button for 5 seconds.",
        "Stop the pump at the local station.",
    ],
)
def test_running_text_that_merely_uses_a_signal_word_is_not_a_signal(line: str) -> None:
    assert signal_kind(line) is None


@pytest.mark.parametrize(
    ("line", "numbered"),
    [
        ("1. Close", True),
        ("12) Open", True),
        ("a. Check", True),
        ("Step 3: Vent", True),
        ("- Bullet", False),
        ("• Bullet", False),
    ],
)
def test_list_markers(line: str, numbered: bool) -> None:
    marker = list_marker(line)
    assert marker is not None and marker[0] is numbered


def test_a_decimal_or_a_version_opening_a_line_is_not_a_list_marker() -> None:
    assert list_marker("0.5 ppm before anyone enters") is None
    assert list_marker("1.2.3 is the version") is None


def test_the_thing_a_how_many_question_counts() -> None:
    from appliance.text.questions import counted_noun, counts

    assert counted_noun("How many gitaly-ruby workers does each node run?") == "workers"
    assert counted_noun("HOW MANY WORKERS ARE THERE") == "workers"
    assert counted_noun("how often does it run") is None
    assert counts("each node runs 16 workers", "workers") and counts("workers: 4", "workers")
    assert counts("runs 3 Sidekiq workers", "workers")
    assert not counts("Wait 5 seconds between killing gitaly-ruby workers", "workers")
