"""A controlled document's number, title, revision and dates, read from where people write them.

In order of trust: a labelled control block on the first page (a "Field | Value" table, a row of labels
over a row of values, "Revision: 3" lines), the running header and footer (the page furniture the loader
took out of the text), prose in the opening text or the furniture ("Document number SOP-OPS-001,
revision 4, effective 2024-01-02", "SOP-7 Rev 3"), then the file's own properties (DOCX core properties,
PDF info: a template's properties often outlive many revisions of its text). Labels are the structure
read here, never a value's words. A review date not stated but implied by a stated cycle ("Review cycle:
Annual") is the effective date plus that cycle, and marked so.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace

from appliance.index.records import DocumentControl
from appliance.ingest.document import Block, LoadedDocument
from appliance.text.dates import DateRead, read_date

# The part of a document that holds its control block: its first page, or (no pages) its opening blocks.
_OPENING_BLOCKS = 12
_OPENING_CHARS = 3000
_MAX_VALUE_CHARS = 40

_NUMBER_LABEL = re.compile(
    r"^(?:(?:sop|document|doc|procedure|policy|form|work instruction|wi|qms|reference|ref|control|controlled document)"
    r"\.?\s*(?:no|nr|number|num|#|id|code|ref(?:erence)?)?\.?|sop|document\s+(?:no|number|id|code)\.?)$",
    re.IGNORECASE,
)
_TITLE_LABEL = re.compile(r"^(?:(?:sop|document|procedure)\s+)?(?:title|name)$", re.IGNORECASE)
_REVISION_LABEL = re.compile(
    r"^(?:(?:sop|document|doc|procedure|irm|policy)\s+)?(?:rev|revision|version|ver|issue|edition)\.?\s*"
    r"(?:no|nr|number|#|level)?\.?$",
    re.IGNORECASE,
)
_EFFECTIVE_LABEL = re.compile(
    r"^(?:effective|effective\s+(?:date|from|on)|date\s+effective|issue\s+date|date\s+of\s+issue|issued(?:\s+on)?"
    r"|release\s+date|date\s+released|approval\s+date|date\s+approved|date\s+of\s+approval|implementation\s+date"
    r"|in\s+force\s+from)$",
    re.IGNORECASE,
)
_REVIEW_LABEL = re.compile(
    r"^(?:next\s+review|(?:next\s+)?review\s+(?:date|due|by|due\s+date)|review|date\s+of\s+next\s+review"
    r"|due\s+for\s+review(?:\s+(?:on|by))?|re-?review\s+date|expiry(?:\s+date)?|expiration(?:\s+date)?|valid\s+until"
    r"|scheduled\s+review)$",
    re.IGNORECASE,
)
_CYCLE_LABEL = re.compile(r"^review\s+(?:cycle|period|frequency|interval)$", re.IGNORECASE)

_NUMBER_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9\-_./ ]{0,28}[A-Za-z0-9]$|^[A-Za-z0-9]$")
_REVISION_VALUE = re.compile(r"^(?:v\.?\s*)?(\d{1,6}(?:\.\d{1,3}){0,2}|[A-Z]{1,2}\d{0,2}|\d{1,3}[A-Z])$", re.IGNORECASE)
# A document number written in prose or a running header: letters, a separator, digits ("SOP-CL-004",
# "QA.SOP.012", "SOP 17"); only one that says it is an SOP or that a label names counts.
_SOP_NUMBER = re.compile(r"\b(?=[A-Z0-9.\-_]*SOP)[A-Z][A-Z0-9]*(?:[-_.][A-Z0-9]+)*[-_. ]?\d{1,5}(?:[-_.][A-Z0-9]+)*\b")
_INLINE_PAIR = re.compile(
    r"(?P<label>[A-Za-z][A-Za-z .#/]{1,38}?)\s*[:：]\s*(?P<value>[^|;:]{1,60}?)(?=\s{2,}|\s*[|;]|$)"
)
_PROSE = [
    (
        "number",
        re.compile(
            r"\b(?:SOP|document|doc\.?|procedure)\s+(?:no\.?|number|#|id)\s*[:.]?\s*(?P<v>[A-Z0-9][A-Z0-9\-_./]*\d[A-Z0-9\-_./]*)",
            re.IGNORECASE,
        ),
    ),
    (
        "revision",
        re.compile(
            r"\b(?:rev(?:ision)?)\.?\s*(?:no\.?|number|#)?\s*[:.]?\s*(?P<v>\d{1,6}(?:\.\d{1,3}){0,2})\b",
            re.IGNORECASE,
        ),
    ),
    (
        "effective",
        re.compile(
            r"\b(?:effective(?:\s+date)?|effective\s+from|issued(?:\s+on)?|date\s+of\s+issue)\s*[:.]?\s*(?P<v>.{6,24})",
            re.IGNORECASE,
        ),
    ),
    (
        "review",
        re.compile(r"\b(?:next\s+review(?:\s+date)?|review\s+(?:due|by))\s*[:.]?\s*(?P<v>.{6,24})", re.IGNORECASE),
    ),
]
_CYCLE = re.compile(
    r"\b(?:(?P<annual>annual(?:ly)?|yearly|every\s+year|once\s+a\s+year)|(?P<biennial>biennial(?:ly)?)"
    r"|every\s+(?P<n>\d|one|two|three|four|five)\s+years?|(?P<m>\d|one|two|three|four|five)[-\s]?years?(?:ly)?)\b",
    re.IGNORECASE,
)
_PROSE_CYCLE = re.compile(r"\breview(?:ed)?\b[^.]{0,40}", re.IGNORECASE)
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_PIPE_ROW = re.compile(r"^\|(.*)\|$")
_SEPARATOR_ROW = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


def read_control(doc: LoadedDocument) -> DocumentControl:
    """The control block `doc` states, from its opening text, its furniture and its properties."""
    fields: dict[str, str] = {}
    opening = _opening_blocks(doc.blocks)
    sources = (
        _labelled(opening),
        _labelled_lines(doc.furniture),
        _prose([block.text for block in opening] + list(doc.furniture)),
        _properties(doc.properties),  # last: a template's properties outlive many revisions of the text
    )
    for source in sources:
        for name, value in source:
            fields.setdefault(name, value)
    if "number" not in fields:
        number = _sop_number([doc.title, *doc.furniture, *(block.text for block in opening)])
        if number is not None:
            fields["number"] = number
    control = DocumentControl(
        number=fields.get("number"),
        title=fields.get("title"),
        revision=fields.get("revision"),
        effective=fields.get("effective"),
        review=fields.get("review"),
    )
    cycle = fields.get("cycle")
    if control.review is None and cycle is not None and control.effective is not None:
        due = _add_years(control.effective, int(cycle))
        if due is not None:
            control = replace(control, review=due, review_from_cycle=True)
    return control


def _opening_blocks(blocks: list[Block]) -> list[Block]:
    if any(block.page is not None for block in blocks):
        return [block for block in blocks if block.page == 1]
    taken: list[Block] = []
    chars = 0
    for block in blocks[:_OPENING_BLOCKS]:
        taken.append(block)
        chars += len(block.text)
        if chars > _OPENING_CHARS:
            break
    return taken


def _labelled(blocks: list[Block]) -> Iterator[tuple[str, str]]:
    for block in blocks:
        if block.kind == "table":
            yield from _table_fields(block.text)
        else:
            yield from _labelled_lines(block.text.split("\n"))


def _table_fields(text: str) -> Iterator[tuple[str, str]]:
    """Fields of a pipe table: label | value rows, a row of labels over a row of values, label: value cells."""
    rows = [_cells(line) for line in text.split("\n") if not _SEPARATOR_ROW.match(line.strip())]
    rows = [row for row in rows if row]
    for index, row in enumerate(rows):
        labels = [_field_name(cell) for cell in row]
        if sum(1 for label in labels if label) >= 2 and index + 1 < len(rows):
            values = rows[index + 1]
            for label, value in zip(labels, values, strict=False):
                if label is not None:
                    yield from _field(label, value)
        for left, right in itertools.pairwise(row):
            name = _field_name(left)
            if name is not None:
                yield from _field(name, right)
        for cell in row:
            yield from _labelled_lines([cell])


def _cells(line: str) -> list[str]:
    match = _PIPE_ROW.match(line.strip())
    if match is None:
        return []
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", match.group(1))]


def _labelled_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    for line in lines:
        for match in _INLINE_PAIR.finditer(line):
            name = _field_name(match.group("label"))
            if name is not None:
                yield from _field(name, match.group("value"))


def _field_name(label: str) -> str | None:
    label = " ".join(label.replace("*", "").split()).strip(" :.-")
    for name, pattern in (
        ("number", _NUMBER_LABEL),
        ("title", _TITLE_LABEL),
        ("revision", _REVISION_LABEL),
        ("effective", _EFFECTIVE_LABEL),
        ("review", _REVIEW_LABEL),
        ("cycle", _CYCLE_LABEL),
    ):
        if pattern.match(label):
            return name
    return None


def _field(name: str, value: str) -> Iterator[tuple[str, str]]:
    """The field's value, normalised, when it reads as a value of that kind."""
    value = " ".join(value.replace("*", "").split()).strip(" :;,|")
    if not value or (len(value) > _MAX_VALUE_CHARS and name != "title"):
        return
    if (name == "number" and _NUMBER_VALUE.match(value) and any(ch.isdigit() for ch in value)) or (
        name == "title" and len(value) >= 3
    ):
        yield name, value
    elif name == "revision":
        match = _REVISION_VALUE.match(value)
        if match:
            yield name, match.group(1)
    elif name in ("effective", "review"):
        date = read_date(value)
        if date is not None:
            yield name, _shown(date)
    elif name == "cycle":
        years = _cycle_years(value)
        if years is not None:
            yield name, str(years)


def _shown(date: DateRead) -> str:
    return date.iso or date.text


def _properties(properties: dict[str, str]) -> Iterator[tuple[str, str]]:
    """DOCX core properties and PDF info: only the fields whose meaning is fixed."""
    for key, name in (("identifier", "number"), ("title", "title"), ("version", "revision")):
        value = properties.get(key)
        if value:
            yield from _field(name, value)


def _prose(texts: list[str]) -> Iterator[tuple[str, str]]:
    for text in texts:
        flat = " ".join(text.split())
        for name, pattern in _PROSE:
            for match in pattern.finditer(flat):
                yield from _field(
                    name, _date_prefix(match.group("v")) if name in ("effective", "review") else match.group("v")
                )
        for match in _PROSE_CYCLE.finditer(flat):
            years = _cycle_years(match.group(0))
            if years is not None:
                yield "cycle", str(years)


def _date_prefix(text: str) -> str:
    """The longest start of `text` that reads as a date ("2024-01-02. Owner: …" → "2024-01-02")."""
    words = text.split()
    for end in range(len(words), 0, -1):
        candidate = " ".join(words[:end]).rstrip(".,;)")
        if read_date(candidate) is not None:
            return candidate
    return ""


def _cycle_years(text: str) -> int | None:
    match = _CYCLE.search(text)
    if match is None:
        return None
    if match.group("annual"):
        return 1
    if match.group("biennial"):
        return 2
    word = (match.group("n") or match.group("m") or "").lower()
    return int(word) if word.isdigit() else _WORD_NUMBERS.get(word)


def _sop_number(texts: Iterable[str]) -> str | None:
    for text in texts:
        match = _SOP_NUMBER.search(text or "")
        if match:
            return match.group(0)
    return None


def _add_years(iso: str, years: int) -> str | None:
    try:
        day = dt.date.fromisoformat(iso)
    except ValueError:
        return None
    try:
        return day.replace(year=day.year + years).isoformat()
    except ValueError:  # 29 February
        return day.replace(year=day.year + years, day=28).isoformat()
