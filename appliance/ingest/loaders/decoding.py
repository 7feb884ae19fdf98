"""Bytes to text for the text formats (Markdown, plain text, HTML).

Policy: UTF-8 (BOM optional), or UTF-16/32 when a BOM says so. Anything else is refused with the
offending byte and offset rather than guessed: a wrong guess silently indexes mojibake.
"""

from __future__ import annotations

import codecs

from appliance.errors import DocumentError

# Longest BOMs first: the UTF-32-LE BOM begins with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)

_BINARY_SNIFF_BYTES = 8192


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_not_binary(data: bytes, display_path: str) -> None:
    # Real text never contains NUL; binaries (images, archives, executables) almost always do early on.
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        raise DocumentError(display_path, "binary content in a text file")


def decode_text(data: bytes, display_path: str, *, declared_encoding: str | None = None) -> str:
    """Decode a text file; `declared_encoding` (from an HTML <meta charset>) is tried if UTF-8 fails."""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :]
            if label == "UTF-8":
                _check_not_binary(body, display_path)
            try:
                return normalize_newlines(body.decode(codec))
            except UnicodeDecodeError as exc:
                reason = f"not valid {label} (invalid data at offset {exc.start + len(bom)})"
                raise DocumentError(display_path, reason) from None
    _check_not_binary(data, display_path)
    try:
        return normalize_newlines(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        utf8_error = exc
    if declared_encoding is not None:
        try:
            return normalize_newlines(data.decode(declared_encoding))
        except UnicodeDecodeError as exc:
            raise DocumentError(
                display_path,
                f"not valid {declared_encoding} as its <meta charset> declares "
                f"(invalid byte 0x{data[exc.start]:02x} at offset {exc.start})",
            ) from None
    bad = data[utf8_error.start]
    raise DocumentError(
        display_path,
        f"not valid UTF-8 (invalid byte 0x{bad:02x} at offset {utf8_error.start}); save the file as UTF-8",
    )
