"""The name an uploaded file is stored under: the client's own file name, accepted only when it is plainly
one file name in the upload folder, or refused with the reason (never silently rewritten, so the name an
admin sees in a citation is the one they uploaded).

Refused: anything that could leave the folder or hide there (separators, `..`, absolute names, a leading
dot: the scanner ignores hidden files), characters a terminal, a log or another file system reads
otherwise (NUL and other controls, bidirectional overrides and other invisible format characters,
unassigned code points, surrogates), names that turn into separators or dots under compatibility
normalisation (fullwidth solidus, one-dot leader), Windows' reserved device names, trailing dots or
spaces, names longer than a file system takes, and types the appliance does not index.
"""

from __future__ import annotations

import unicodedata

from appliance.errors import UploadRefused
from appliance.ingest.loaders import SUPPORTED_SUFFIXES

MAX_NAME_BYTES = 255  # ext4, xfs, btrfs: a file name of at most 255 bytes
# Device names Windows reserves in any folder and with any extension (the file may be copied there).
WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{n}" for n in "123456789¹²³"}
    | {f"lpt{n}" for n in "123456789¹²³"}
)
# Control, format (bidi overrides, zero width), surrogate, private use, unassigned, line/paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def checked_upload_name(raw: str | None) -> str:
    """The NFC form of `raw` when it is an acceptable upload name; UploadRefused (field `file`) otherwise."""
    if raw is None or raw == "":
        raise _refused("the part has no file name (send it as a file: filename=... in its Content-Disposition)")
    shown = raw.encode("unicode_escape").decode("ascii")[:120]
    name = unicodedata.normalize("NFC", raw)
    for char in name:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            code = f"U+{ord(char):04X}"
            raise _refused(f"file name '{shown}' holds an invisible or control character ({code})")
    folded = unicodedata.normalize("NFKC", name)
    if any(sep in text for text in (name, folded) for sep in ("/", "\\")):
        raise _refused(f"file name '{shown}' holds a path separator: send a bare file name, no folders")
    if folded in (".", "..") or folded.startswith("."):
        raise _refused(f"file name '{shown}' starts with a dot (hidden files are never indexed)")
    if name != name.rstrip(". ") or name != name.lstrip(" "):
        raise _refused(f"file name '{shown}' starts with a space or ends with a dot or a space")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise _refused(f"file name '{shown}' is longer than {MAX_NAME_BYTES} bytes")
    stem = folded.split(".", 1)[0].rstrip(" ").lower()
    if stem in WINDOWS_RESERVED:
        raise _refused(f"file name '{shown}' is a reserved device name ({stem.upper()})")
    suffix = "." + name.rsplit(".", 1)[1].lower() if "." in name else ""
    if suffix not in SUPPORTED_SUFFIXES:
        described = f"'{suffix}'" if suffix else "no extension"
        allowed = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise UploadRefused(415, "file", f"file name '{shown}': type {described} is not indexed (accepted: {allowed})")
    return name


def _refused(message: str) -> UploadRefused:
    return UploadRefused(422, "file", message)
