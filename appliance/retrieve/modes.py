"""The retrievers a search can run: a module of its own so that the command line can offer them without
importing the search (and the index, the embedder and the vector store behind it)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["lexical", "dense", "hybrid"]
MODES: tuple[Mode, ...] = ("lexical", "dense", "hybrid")
