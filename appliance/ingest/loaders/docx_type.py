"""The type a Word paragraph is set in (size, bold) and the outline level it carries, as Word resolves them.

A run's own properties win; then its character style; then the paragraph's style and the styles it is
based on; then the document defaults (Word's own default is 10 points, not bold). The outline level
(w:outlineLvl, 0-8; 9 is body text) comes from the paragraph or its style chain: it is what Word's
navigation pane shows as a heading, whatever the style is called.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from docx.oxml.ns import qn

_DEFAULT_SIZE = 10.0
_BODY_OUTLINE = 9
_MAX_CHAIN = 20  # basedOn links followed at most (a loop in a damaged styles part)


@dataclass(frozen=True)
class ParagraphType:
    size: float | None
    bold: bool
    uniform: bool  # every run of it has that size and weight
    outline_level: int  # 1-9 from Word's outline level, 0 for body text


@dataclass(frozen=True)
class _Props:
    size: float | None = None
    bold: bool | None = None
    outline: int | None = None


class TypeReader:
    """Resolves paragraphs' types in one document (styles read once each)."""

    def __init__(self, document: Any) -> None:
        self._styles: dict[str, Any] = {}
        self._cache: dict[str, _Props] = {}
        self._default = _Props(_DEFAULT_SIZE, False)
        try:
            root = document.styles.element
            for style in root.iterchildren(qn("w:style")):
                style_id = style.get(qn("w:styleId"))
                if style_id:
                    self._styles[style_id] = style
            defaults = root.find(f"{qn('w:docDefaults')}/{qn('w:rPrDefault')}/{qn('w:rPr')}")
            if defaults is not None:
                props = _run_props(defaults)
                self._default = _Props(props.size or _DEFAULT_SIZE, bool(props.bold))
            default_style = next(
                (
                    s
                    for s in root.iterchildren(qn("w:style"))
                    if s.get(qn("w:default")) in ("1", "true") and s.get(qn("w:type")) == "paragraph"
                ),
                None,
            )
            self._default_paragraph = default_style.get(qn("w:styleId")) if default_style is not None else None
        except (AttributeError, KeyError, NotImplementedError):  # no styles part: Word's defaults
            self._default_paragraph = None

    def paragraph(self, paragraph: Any) -> ParagraphType:
        p_pr = paragraph.find(qn("w:pPr"))
        style_id = None
        own_outline = None
        if p_pr is not None:
            p_style = p_pr.find(qn("w:pStyle"))
            style_id = p_style.get(qn("w:val")) if p_style is not None else None
            own_outline = _outline(p_pr)
        style = self._style_props(style_id or self._default_paragraph)
        outline = own_outline if own_outline is not None else style.outline
        weights: Counter[tuple[float | None, bool]] = Counter()
        for run in paragraph.iter(qn("w:r")):
            length = sum(len(t.text or "") for t in run.iter(qn("w:t")))
            if not length:
                continue
            r_pr = run.find(qn("w:rPr"))
            own = _run_props(r_pr) if r_pr is not None else _Props()
            character = self._style_props(_run_style(r_pr)) if r_pr is not None else _Props()
            size = own.size or character.size or style.size or self._default.size
            bold = _first(own.bold, character.bold, style.bold, self._default.bold)
            weights[(size, bold)] += length
        if not weights:
            return ParagraphType(style.size or self._default.size, bool(style.bold), True, _level(outline))
        (size, bold), _ = weights.most_common(1)[0]
        return ParagraphType(size, bold, len(weights) == 1, _level(outline))

    def _style_props(self, style_id: str | None) -> _Props:
        if not style_id:
            return _Props()
        if style_id not in self._cache:
            self._cache[style_id] = self._resolve(style_id)
        return self._cache[style_id]

    def _resolve(self, style_id: str) -> _Props:
        size: float | None = None
        bold: bool | None = None
        outline: int | None = None
        seen: set[str] = set()
        current: str | None = style_id
        while current and current not in seen and len(seen) < _MAX_CHAIN:
            seen.add(current)
            element = self._styles.get(current)
            if element is None:
                break
            r_pr = element.find(qn("w:rPr"))
            if r_pr is not None:
                props = _run_props(r_pr)
                size = size if size is not None else props.size
                bold = bold if bold is not None else props.bold
            p_pr = element.find(qn("w:pPr"))
            if outline is None and p_pr is not None:
                outline = _outline(p_pr)
            based = element.find(qn("w:basedOn"))
            current = based.get(qn("w:val")) if based is not None else None
        return _Props(size, bold, outline)


def _run_props(r_pr: Any) -> _Props:
    size = None
    sz = r_pr.find(qn("w:sz"))
    if sz is not None:
        value = sz.get(qn("w:val"), "")
        if value.isdigit() and int(value) > 0:
            size = int(value) / 2  # half-points
    bold = None
    b = r_pr.find(qn("w:b"))
    if b is not None:
        bold = b.get(qn("w:val"), "true").lower() not in ("0", "false", "off")
    return _Props(size, bold)


def _run_style(r_pr: Any) -> str | None:
    r_style = r_pr.find(qn("w:rStyle"))
    return r_style.get(qn("w:val")) if r_style is not None else None


def _outline(p_pr: Any) -> int | None:
    element = p_pr.find(qn("w:outlineLvl"))
    if element is None:
        return None
    value = element.get(qn("w:val"), "")
    return int(value) if value.isdigit() else None


def _level(outline: int | None) -> int:
    """Word's outline level (0 = level 1 … 8; 9 = body text) as a heading level, 0 for body text."""
    if outline is None or outline >= _BODY_OUTLINE:
        return 0
    return outline + 1


def _first(*values: bool | None) -> bool:
    return next((value for value in values if value is not None), False)
