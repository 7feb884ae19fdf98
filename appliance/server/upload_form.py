"""Reading the multipart body of an upload as it streams in: one part, the form field `file`, kept in memory
and cut off with a 413 the moment it passes the upload limit.

Starlette's own form parser would spool the file to a temporary file first and only then let anyone look
at its size; here nothing is written anywhere until the whole file is in and has passed its checks
(appliance.uploads.store). Any other field, a second file, or a part that is not a file is refused by
name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from appliance.errors import UploadRefused

FIELD = "file"
# Multipart framing around the file (boundaries, part headers): what the body may hold beyond the file.
FRAMING_BYTES = 64 * 1024


@dataclass
class UploadedFile:
    name: str | None
    data: bytes


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    is_file: bool = False
    name: str = ""
    filename: str | None = None


async def read_upload(request: Request, limit: int) -> UploadedFile:
    """The one file of a multipart/form-data body, at most `limit` bytes; UploadRefused otherwise."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise UploadRefused(415, "body", "send the file as multipart/form-data in the form field 'file'")
    parts: list[_Part] = []
    header_field: list[bytes] = []
    header_value: list[bytes] = []

    def on_part_begin() -> None:
        if len(parts) >= 1:
            raise UploadRefused(422, "body", "send exactly one part: the form field 'file'")
        parts.append(_Part())

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header_field.append(data[start:end])

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header_value.append(data[start:end])

    def on_header_end() -> None:
        parts[-1].headers[b"".join(header_field).lower()] = b"".join(header_value)
        header_field.clear()
        header_value.clear()

    def on_headers_finished() -> None:
        part = parts[-1]
        _, disposition = parse_options_header(part.headers.get(b"content-disposition", b""))
        part.name = disposition.get(b"name", b"").decode("latin-1")
        if part.name != FIELD:
            raise UploadRefused(422, part.name or "body", f"unexpected form field '{part.name}': send only 'file'")
        raw = disposition.get(b"filename")
        if raw is None:
            raise UploadRefused(422, FIELD, "the field 'file' must be a file (no filename was sent)")
        try:
            part.filename = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise UploadRefused(422, FIELD, "the file name is not valid UTF-8") from None
        part.is_file = True

    def on_part_data(data: bytes, start: int, end: int) -> None:
        part = parts[-1]
        part.size += end - start
        if part.size > limit:
            shown = f"'{part.filename}' " if part.filename else ""
            raise UploadRefused(
                413, FIELD, f"the file {shown}is larger than {limit} bytes (setting uploads.max_file_bytes)"
            )
        part.chunks.append(data[start:end])

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
        },
    )
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise UploadRefused(400, "body", f"the multipart body is malformed ({exc})") from None
    if not parts or not parts[0].is_file:
        raise UploadRefused(422, FIELD, "the form field 'file' is required")
    part = parts[0]
    return UploadedFile(part.filename, b"".join(part.chunks))
