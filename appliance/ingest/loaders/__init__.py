"""Document loaders: a file on disk -> `LoadedDocument` (typed blocks with offsets), or a
`DocumentError` that names the file and says in plain words why it cannot be indexed.

The checks shared by every format (type, size, readability) happen once here, before a parser
ever sees the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from appliance.errors import NothingToIndex, UnsupportedDocument
from appliance.ingest.doc_control import read_control
from appliance.ingest.document import LoadedDocument

from .docx_loader import load_docx
from .html_loader import load_html
from .image_loader import SUFFIXES as IMAGE_SUFFIXES
from .image_loader import load_image
from .markdown_loader import load_markdown
from .page_ocr import OcrLimits, PageReader
from .pdf_loader import load_pdf
from .source import Source, read_source
from .text_loader import load_text

__all__ = ["DEFAULT_MAX_BYTES", "SUPPORTED_SUFFIXES", "OcrLimits", "PageReader", "load_bytes", "load_document"]

DEFAULT_MAX_BYTES = 50 * 1024 * 1024

Loader = Callable[[bytes, Source], LoadedDocument]

_LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".txt": load_text,
    ".text": load_text,
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
    ".docx": load_docx,
    **dict.fromkeys(IMAGE_SUFFIXES, load_image),
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_LOADERS)


def load_document(
    path: Path,
    display_path: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    ocr: PageReader | None = None,
) -> LoadedDocument:
    """Load one document. `display_path` names it in the result and in errors (default: str(path)).

    Raises SkippedDocument for a file with nothing to index (UnsupportedDocument: a type that is not
    indexed; NothingToIndex: no text in it) and DocumentError for a supported file that is broken or
    cannot be read (report it as failed); nothing else for a bad file. `ocr` reads scanned PDF pages
    and image files; without it a page without text is not read and an image file fails.
    """
    path = Path(path)
    shown = display_path if display_path is not None else str(path)
    suffix = path.suffix.lower()
    loader = _LOADERS.get(suffix)
    if loader is None:
        described = f"'{suffix}'" if suffix else "(no file extension)"
        raise UnsupportedDocument(shown, f"unsupported file type {described}")
    source = Source(path=path, display_path=shown, ocr=ocr)
    document = loader(read_source(source, max_bytes), source)
    if not document.text.strip():
        raise NothingToIndex(shown, "no text content")
    return _with_control(document)


def load_bytes(data: bytes, path: Path, display_path: str, ocr: PageReader | None = None) -> LoadedDocument:
    """Load a document from bytes already read (and checked) by the caller, as `load_document` would."""
    loader = _LOADERS.get(path.suffix.lower())
    if loader is None:
        raise UnsupportedDocument(display_path, f"unsupported file type '{path.suffix.lower()}'")
    return _with_control(loader(data, Source(path=path, display_path=display_path, ocr=ocr)))


def _with_control(document: LoadedDocument) -> LoadedDocument:
    """The document with the control block it states (number, revision, dates) read, whatever its format."""
    document.control = read_control(document)
    return document
