"""HTML → a view tree: lxml's tree walked iteratively through an allowlist.

Scripts, styles, iframes, objects, embeds, forms' controls, SVG and the like are dropped with their
content; every attribute goes (event handlers, styles, classes, links, sources) except a table cell's
span; images become a placeholder with their alt text; any other element is unwrapped, its words kept.
Layout containers (div, section, aside…) become plain `div` blocks, flattened past a fixed depth.
"""

from __future__ import annotations

from typing import Any

import lxml.etree
import lxml.html

from appliance.documents.tree import TreeBuilder
from appliance.ingest.loaders.html_loader import parse_html
from appliance.ingest.loaders.html_stream import read_flat_html

# Dropped with everything inside them.
_DROPPED = frozenset(
    {
        "script", "style", "noscript", "template", "iframe", "frame", "frameset", "noframes", "object", "embed",
        "applet", "svg", "math", "canvas", "audio", "video", "source", "track", "picture", "map", "area", "input",
        "button", "select", "option", "optgroup", "textarea", "datalist", "output", "meter", "progress", "link",
        "meta", "base", "head", "title", "dialog", "portal", "slot",
    }
)  # fmt: skip
# Kept as the same element (no attributes), or as the element named.
_KEPT = {
    **{tag: tag for tag in ("h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "table", "thead", "tbody")},
    **{tag: tag for tag in ("tr", "th", "td", "pre", "code", "em", "strong", "blockquote", "hr", "br", "dl", "dt")},
    **{tag: tag for tag in ("dd", "sub", "sup")},
    "tfoot": "tbody", "i": "em", "b": "strong", "kbd": "code", "samp": "code", "tt": "code", "caption": "p",
    "figcaption": "p", "legend": "p", "summary": "p",
}  # fmt: skip
_CONTAINERS = frozenset(
    {
        "div", "section", "article", "main", "header", "footer", "nav", "aside", "address", "figure", "details",
        "fieldset", "form", "center", "hgroup", "search",
    }
)  # fmt: skip
_VOID = frozenset({"hr", "br"})


def _span(element: Any, name: str) -> int | None:
    value = str(element.get(name) or "").strip()
    return min(int(value), 100) if value.isdigit() and int(value) > 1 else None


def _flat(text: str) -> TreeBuilder:
    """What the loader indexes from HTML lxml cannot build: headings and paragraphs, scripts skipped."""
    tree = TreeBuilder()
    for level, words in read_flat_html(text)[1]:
        tree.element(f"h{level}" if level else "p", words)
    return tree


def render_html(text: str) -> TreeBuilder:
    root = parse_html(text)
    if root is None:
        return _flat(text)
    tree = TreeBuilder()
    body = root.find("body")
    start = body if body is not None else root
    walker = lxml.etree.iterwalk(start, events=("start", "end"))
    opened: list[bool] = []  # per element on the walk: did it open a tree element?
    for event, element in walker:
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if event == "start":
            if element is start:
                opened.append(False)
                tree.text(element.text or "")
                continue
            if tag in _DROPPED or not tag:
                walker.skip_subtree()
                opened.append(False)
                continue
            if tag == "img":
                alt = " ".join(str(element.get("alt") or "").split()) or "no description"
                tree.element("span", f"[image: {alt}]", kind="image")
                opened.append(False)
                continue
            name = _KEPT.get(tag) or ("div" if tag in _CONTAINERS else None)
            if name is None:
                opened.append(False)  # unknown or inline wrapper (span, a, font…): keep its words only
            else:
                attrs: dict[str, str | int] = {}
                for span_name in ("colspan", "rowspan"):
                    span = _span(element, span_name) if name in ("td", "th") else None
                    if span is not None:
                        attrs[span_name] = span
                tree.open(name, **attrs)
                opened.append(True)
            if tag not in _VOID:
                tree.text(element.text or "")
        else:
            if opened.pop():
                tree.close()
            if element is not start:
                tree.text(element.tail or "")
    return tree
