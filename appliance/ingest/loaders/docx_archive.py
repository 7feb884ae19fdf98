"""Checking a .docx zip archive before python-docx opens it.

python-docx would happily inflate whatever the archive holds; a few hundred KB can expand to
gigabytes (a zip bomb). The declared sizes in the zip directory bound what zipfile will inflate
(it stops at the declared size), so checking them up front is enough.
"""

from __future__ import annotations

import io
import re
import zipfile

from appliance.errors import DocumentError

from .source import format_size

_MB = 1024 * 1024
MAX_EXPANDED_BYTES = 200 * _MB  # the whole archive, inflated; raised for a genuinely larger .docx
MAX_MEMBER_RATIO = 100  # XML compresses ~10-40x; a big member compressed 100x+ is padding or an attack
_RATIO_CHECK_FROM = 10 * _MB  # small members may compress absurdly well (empty parts) and harm no one
MAX_MEMBERS = 10_000
_MAIN_PART = re.compile(r"^word/document\d*\.xml$")  # Word Online sometimes writes document2.xml


def _refuse(shown: str, why: str) -> DocumentError:
    return DocumentError(shown, f"refusing a suspicious .docx (zip bomb?): {why}")


def check_docx_archive(data: bytes, shown: str) -> None:
    """Raise DocumentError unless `data` is a zip with a Word main part and sane expansion sizes."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentError(shown, "not a valid .docx (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise DocumentError(shown, f"not a valid .docx (damaged zip archive: {exc})") from None
    if len(members) > MAX_MEMBERS:
        raise _refuse(shown, f"it holds {len(members):,} files")
    limit = max(MAX_EXPANDED_BYTES, 2 * len(data))
    expanded = sum(member.file_size for member in members)
    if expanded > limit:
        raise _refuse(shown, f"it expands to {format_size(expanded)}, over {format_size(limit)}")
    for member in members:
        if member.file_size >= _RATIO_CHECK_FROM:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > MAX_MEMBER_RATIO:
                expanded_to = format_size(member.file_size)
                raise _refuse(shown, f"{member.filename} expands {ratio:.0f}x to {expanded_to}")
    if not any(_MAIN_PART.match(member.filename) for member in members):
        raise DocumentError(shown, "not a valid .docx (the archive has no word/document.xml)")
