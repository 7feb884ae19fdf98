"""Markdown → a view tree, from markdown-it-py's token stream.

Raw HTML is not parsed (`html: False`): a `<script>` or `<DO NOT OPEN>` in a SOP shows as the text it
is. Links keep their words and lose their targets (they lead off the isolated network or into files
that are not indexed); images become a placeholder with their alt text and are never loaded.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

from appliance.documents.tree import TreeBuilder

# The loader's parser (CommonMark + pipe tables) with raw HTML off.
_PARSER = MarkdownIt("commonmark", {"html": False}).enable("table")
# Block tokens that open an element of the same name (the tag comes from the token).
_BLOCKS = {
    "heading_open", "paragraph_open", "bullet_list_open", "ordered_list_open", "list_item_open",
    "blockquote_open", "table_open", "thead_open", "tbody_open", "tr_open", "th_open", "td_open",
}  # fmt: skip
_INLINE = {"strong_open": "strong", "em_open": "em"}


def render_markdown(text: str) -> TreeBuilder:
    tree = TreeBuilder()
    for token in _PARSER.parse(text):
        kind = token.type
        if kind in _BLOCKS:
            if token.hidden:  # the <p> inside a tight list item
                continue
            attrs: dict[str, str | int] = {}
            start = token.attrGet("start")
            if kind == "ordered_list_open" and isinstance(start, int | str) and str(start).isdigit():
                attrs["start"] = min(int(start), 100_000)
            tree.open(token.tag, **attrs)
        elif kind.endswith("_close"):
            if not token.hidden:
                tree.close()
        elif kind == "inline":
            _inline(tree, token.children or [])
        elif kind in ("fence", "code_block"):
            tree.open("pre")
            tree.element("code", token.content.rstrip("\n"))
            tree.close()
        elif kind == "hr":
            tree.element("hr")
        elif kind == "html_block":  # not produced with html off; kept as text should a preset change
            tree.element("p", token.content)
    return tree


def _inline(tree: TreeBuilder, children: list[Token]) -> None:
    for child in children:
        kind = child.type
        if kind == "text" or kind == "html_inline":
            tree.text(child.content)
        elif kind == "code_inline":
            tree.element("code", child.content)
        elif kind in _INLINE:
            tree.open(_INLINE[kind])
        elif kind in ("strong_close", "em_close"):
            tree.close()
        elif kind == "softbreak":
            tree.text("\n")
        elif kind == "hardbreak":
            tree.element("br")
        elif kind == "image":
            tree.element("span", f"[image: {child.content or 'no description'}]", kind="image")
        # link_open / link_close: the words stay, the target goes
