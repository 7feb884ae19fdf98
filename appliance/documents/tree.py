"""The rendered view of a document: a tree of a few harmless elements, sent to the page as JSON.

The page builds DOM nodes from it with createElement and textContent (never innerHTML), and only for
the tags listed here, so nothing a document holds (a script, an event handler, a remote image, a form,
an iframe) can reach the browser as markup: the renderers drop or unwrap everything else, and the page
applies the same allowlist again. Attributes are a fixed, typed few, set by the server only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Block and inline elements a view may hold. "div" is a plain block container (an HTML warning box);
# "section" is one PDF page. "mark" is a highlighted sentence; "span" with kind "image" stands in for an
# image, which is never loaded.
TAGS = frozenset(
    {
        "section", "div", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "table", "thead", "tbody",
        "tr", "th", "td", "pre", "code", "em", "strong", "blockquote", "hr", "br", "dl", "dt", "dd", "sub", "sup",
        "mark", "span",
    }
)  # fmt: skip
HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Containers nested deeper than this are flattened into their parent (HTML 10,000 levels deep).
MAX_DEPTH = 24
# A view stops after this much text; the rest is in the original file.
MAX_VIEW_CHARS = 2_000_000


@dataclass
class Node:
    tag: str
    children: list[Node | str] = field(default_factory=list)
    attrs: dict[str, str | int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tag not in TAGS:
            raise ValueError(f"tag {self.tag!r} is not allowed in a document view")

    def add(self, child: Node | str) -> None:
        """Append a child; adjacent strings are merged (highlights then find sentences in one piece)."""
        if isinstance(child, str):
            if not child:
                return
            if self.children and isinstance(self.children[-1], str):
                self.children[-1] += child
                return
        self.children.append(child)

    def text(self) -> str:
        parts: list[str] = []
        stack: list[Node | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
            else:
                stack.extend(reversed(item.children))
        return "".join(parts)

    def as_json(self) -> dict[str, Any]:
        """{"t": tag, "c": [children], "a": {attrs}}: compact, since a long SOP has thousands of nodes."""
        data: dict[str, Any] = {"t": self.tag}
        if self.children:
            data["c"] = [child if isinstance(child, str) else child.as_json() for child in self.children]
        if self.attrs:
            data["a"] = dict(self.attrs)
        return data


class TreeBuilder:
    """Opens and closes elements on a stack, flattening past MAX_DEPTH and stopping at MAX_VIEW_CHARS."""

    def __init__(self) -> None:
        self.root = Node("div")
        self._stack: list[Node | None] = [self.root]  # None: an element flattened into its parent
        self.chars = 0
        self.truncated = False

    @property
    def current(self) -> Node:
        for node in reversed(self._stack):
            if node is not None:
                return node
        return self.root  # pragma: no cover - the root is never popped

    def open(self, tag: str, **attrs: str | int) -> None:
        depth = sum(1 for node in self._stack if node is not None)
        if depth > MAX_DEPTH and tag not in HEADINGS and tag not in ("tr", "td", "th", "li"):
            self._stack.append(None)
            return
        node = Node(tag, attrs=dict(attrs))
        self.current.add(node)
        self._stack.append(node)

    def close(self) -> None:
        if len(self._stack) > 1:
            self._stack.pop()

    def text(self, text: str) -> None:
        if not text or self.truncated:
            return
        room = MAX_VIEW_CHARS - self.chars
        if len(text) > room:
            text, self.truncated = text[:room], True
        self.chars += len(text)
        self.current.add(text)

    def element(self, tag: str, text: str = "", **attrs: str | int) -> None:
        self.open(tag, **attrs)
        self.text(text)
        self.close()
