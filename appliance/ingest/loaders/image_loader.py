"""Image files (PNG, JPEG, TIFF; a multi-page TIFF is a page per frame) read by OCR.

Pillow reads only the header when it opens a file, so the size of every frame is checked against
ingest.ocr_max_pixels before any pixel is decoded (an image bomb is refused unread), and the frame
count against ingest.ocr_max_pages. Every Pillow failure on damaged bytes becomes a DocumentError.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from appliance.errors import DocumentError
from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import title_from_stem
from .source import Source

# The formats an SOP library holds as scans and photos; Pillow must agree on what the bytes are.
FORMATS = {"PNG", "JPEG", "MPO", "TIFF"}  # MPO: what phone cameras call a JPEG with a depth frame
SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")


def load_image(data: bytes, source: Source) -> LoadedDocument:
    shown = source.display_path
    reader = source.ocr
    if reader is None:
        raise DocumentError(shown, "an image file needs OCR, which is not available here")
    builder = DocumentBuilder(shown, "image")
    with warnings.catch_warnings():
        # Pillow warns (then raises) about pixel counts itself; ours is the limit that counts.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        image = _open(data, shown)
        frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
        reader.check_pages(shown, frames, "frames" if frames > 1 else "pages")
        for number in range(1, frames + 1):
            frame = _frame(image, number, shown, frames)
            reader.check_pixels(shown, *frame.size, where=f"frame {number}" if frames > 1 else "the image")
            decoded = _decode(frame, number, shown, frames)
            blocks, _ = reader.blocks(shown, decoded, number)
            for item in blocks:
                block = item.block
                builder.add(block.kind, block.text, level=block.level, page=number, ocr_confidence=item.confidence)
    if not builder.blocks:
        raise DocumentError(shown, "OCR found no text in the image")
    return builder.build(title_from_stem(source.stem))


def _open(data: bytes, shown: str) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise DocumentError(shown, f"image bomb refused before decoding ({exc})") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise DocumentError(shown, f"not a readable image ({type(exc).__name__}: {exc})") from None
    if image.format not in FORMATS:
        raise DocumentError(shown, f"image format {image.format} is not read (PNG, JPEG and TIFF are)")
    return image


def _frame(image: Image.Image, number: int, shown: str, frames: int) -> Image.Image:
    try:
        image.seek(number - 1)
    except (EOFError, OSError, ValueError) as exc:
        where = f"frame {number} of {frames}" if frames > 1 else "the image"
        raise DocumentError(shown, f"damaged image: {where} cannot be read ({exc})") from None
    return image


def _decode(image: Image.Image, number: int, shown: str, frames: int) -> Image.Image:
    """The frame's pixels, greyscale (what OCR needs); a truncated or corrupt file fails here."""
    try:
        return image.convert("L")
    except Exception as exc:  # Pillow's decoders raise OSError, ValueError, SyntaxError, struct.error…
        where = f"frame {number} of {frames}" if frames > 1 else "the image"
        raise DocumentError(shown, f"damaged image: {where} cannot be decoded ({type(exc).__name__}: {exc})") from None
