"""OCR: scanned PDF pages and image files are read offline with the pinned PP-OCRv6 small models from the
model store, cite the right page, carry their recognition confidence, and bad scans are reported
one by one while the rest of the folder is indexed."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.errors import DocumentError
from appliance.index.index import Index
from appliance.ingest.chunker import chunk_document
from appliance.ingest.loaders import OcrLimits, PageReader, load_document
from appliance.ingest.pipeline import ingest, page_reader, reindex
from appliance.models.packages import OCR_V6_SHA256, init_store_from_packages
from appliance.models.store import ModelStore
from tests.scans import image_bytes, mixed_pdf, page_image, tiff_pages

PROCEDURE = ["4. Restart", "Close valve VLV-3042-B before the restart.", "Open the drain for 5 minutes."]


@pytest.fixture(scope="module")
def reader(models_dir: Path) -> PageReader:
    return PageReader(models_dir / "ocr" / "ppocr-v6-small", OcrLimits(), threads=2)


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def words(text: str) -> list[str]:
    return text.split()


# --- the model store ---------------------------------------------------------------------------------


def test_the_ocr_model_enters_the_store_pinned_and_verified(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    (model,) = init_store_from_packages(store, ["ppocr-v6-small"])
    assert (model.role, model.path) == ("ocr", "ocr/ppocr-v6-small")
    assert {f.path: f.sha256 for f in model.files} == OCR_V6_SHA256
    assert store.verify() == []
    damaged = tmp_path / "ocr" / "ppocr-v6-small" / "PP-OCRv6_rec_small.onnx"
    damaged.unlink()  # a hard link into site-packages: replace it, never write through it
    damaged.write_bytes(b"not a model")
    assert any("PP-OCRv6_rec_small.onnx" in problem for problem in store.verify())


def test_the_bundle_recipe_carries_the_ocr_model_with_the_same_pins() -> None:
    from appliance.offline.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parent.parent / "bundle" / "models.toml")
    for profile in ("cpu-small", "cpu-tiny"):
        assert recipe.profile(profile).models["ocr"] == "ppocr-v6-small"
    spec = recipe.models["ppocr-v6-small"]
    assert spec.role == "ocr" and spec.source == "pypi:rapidocr==3.10.0"
    assert {name: pin.sha256 for name, pin in spec.files.items()} == OCR_V6_SHA256


# --- image files ---------------------------------------------------------------------------------------


def test_a_png_scan_is_read_by_ocr_with_its_confidence(tmp_path: Path, reader: PageReader) -> None:
    path = write(tmp_path, "restart-card.png", image_bytes(page_image(PROCEDURE), "PNG"))
    doc = load_document(path, "cards/restart-card.png", ocr=reader)
    assert doc.doc_type == "image" and doc.title == "restart card"
    assert "VLV-3042-B" in words(doc.text)
    assert "Close valve VLV-3042-B before the restart." in doc.text
    assert doc.blocks[0].kind == "heading"  # "4. Restart", as on a text page
    assert all(b.page == 1 and b.ocr_confidence is not None and 0.9 < b.ocr_confidence <= 1 for b in doc.blocks)
    chunks = chunk_document(doc, lambda texts: [len(t.split()) for t in texts])
    assert chunks and all(c.page == 1 and c.ocr_confidence is not None for c in chunks)


def test_each_frame_of_a_tiff_is_a_page(tmp_path: Path, reader: PageReader) -> None:
    pages = [page_image(["1. Isolate", "Close valve VLV-1001."]), page_image(["2. Drain", "Open drain DRN-2002."])]
    doc = load_document(write(tmp_path, "scan.tiff", tiff_pages(pages)), ocr=reader)
    by_page = {page: " ".join(b.text for b in doc.blocks if b.page == page) for page in (1, 2)}
    assert "VLV-1001." in words(by_page[1]) and "DRN-2002." in words(by_page[2])


def test_a_jpeg_photo_is_read(tmp_path: Path, reader: PageReader) -> None:
    doc = load_document(write(tmp_path, "card.JPG", image_bytes(page_image(PROCEDURE), "JPEG", quality=85)), ocr=reader)
    assert "VLV-3042-B" in words(doc.text)


# --- PDFs: per page, and mixed ---------------------------------------------------------------------------


def test_only_the_scanned_page_of_a_mixed_pdf_is_read_by_ocr(tmp_path: Path, reader: PageReader) -> None:
    path = mixed_pdf(tmp_path / "mixed.pdf", ["1. Scope", "This procedure covers pump P-101."], page_image(PROCEDURE))
    doc = load_document(path, ocr=reader)
    first = [b for b in doc.blocks if b.page == 1]
    second = [b for b in doc.blocks if b.page == 2]
    assert first and all(b.ocr_confidence is None for b in first)  # the text layer, as before
    assert second and all(b.ocr_confidence is not None for b in second)
    assert "VLV-3042-B" in words(" ".join(b.text for b in second))
    chunks = chunk_document(doc, lambda texts: [len(t.split()) for t in texts])
    cited = next(c for c in chunks if "VLV-3042-B" in c.text)
    assert cited.page == 2 and cited.ocr_confidence is not None


def test_a_scanners_stamp_is_not_a_text_layer(tmp_path: Path, reader: PageReader) -> None:
    stamp = "CONTROLLED COPY - scanned 2024-03-02"
    path = mixed_pdf(tmp_path / "stamped.pdf", ["1. Scope", "Pump P-101."], page_image(PROCEDURE), stamp=stamp)
    second = " ".join(b.text for b in load_document(path, ocr=reader).blocks if b.page == 2)
    assert "VLV-3042-B" in words(second)
    # With the threshold at 0 only pages without any text are read: the stamp alone stays.
    strict = PageReader(reader.model_dir, OcrLimits(min_words=0), threads=2)
    second = " ".join(b.text for b in load_document(path, ocr=strict).blocks if b.page == 2)
    assert "VLV-3042-B" not in second and "CONTROLLED COPY" in second


def test_a_scanned_pdf_without_ocr_says_why(tmp_path: Path) -> None:
    path = mixed_pdf(tmp_path / "scan.pdf", [], page_image(PROCEDURE))
    off = PageReader(None, OcrLimits(), unavailable="switched off (setting ingest.ocr)")
    with pytest.raises(DocumentError, match=r"no extractable text .*OCR is switched off \(setting ingest.ocr\)"):
        load_document(path, ocr=off)


# --- bad input ---------------------------------------------------------------------------------------------


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` pixels, with one tiny compressed row of data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def test_an_image_bomb_is_refused_before_decoding(tmp_path: Path, reader: PageReader) -> None:
    over_ours = write(tmp_path, "big.png", png_header_only(8000, 8000))  # 64 M pixels: over our 50 M
    with pytest.raises(DocumentError, match=r"8000 x 8000 pixels, over the limit .*ingest.ocr_max_pixels"):
        load_document(over_ours, ocr=reader)
    over_pillows = write(tmp_path, "bomb.png", png_header_only(100_000, 100_000))  # Pillow refuses at open
    with pytest.raises(DocumentError, match=r"bomb\.png: image bomb refused before decoding"):
        load_document(over_pillows, ocr=reader)


def test_truncated_and_corrupt_images_name_the_damage(tmp_path: Path, reader: PageReader) -> None:
    jpeg = image_bytes(page_image(PROCEDURE), "JPEG")
    with pytest.raises(DocumentError, match=r"cut.jpg: damaged image: the image cannot be decoded"):
        load_document(write(tmp_path, "cut.jpg", jpeg[: len(jpeg) // 2]), ocr=reader)
    with pytest.raises(DocumentError, match=r"junk.tif: not a readable image"):
        load_document(write(tmp_path, "junk.tif", b"II*\x00" + b"\xff" * 300), ocr=reader)
    with pytest.raises(DocumentError, match=r"renamed.png: image format GIF is not read"):
        load_document(write(tmp_path, "renamed.png", image_bytes(page_image(["x"]), "GIF")), ocr=reader)


def test_too_many_pages_to_ocr_is_reported_before_any_is_read(tmp_path: Path, reader: PageReader) -> None:
    limited = PageReader(reader.model_dir, OcrLimits(max_pages=2))
    pages = [page_image([f"Page {n}"], width=300) for n in range(3)]
    with pytest.raises(
        DocumentError, match=r"3 frames to read by OCR, over the limit of 2 \(setting ingest.ocr_max_pages\)"
    ):
        load_document(write(tmp_path, "long.tiff", tiff_pages(pages)), ocr=limited)
    assert limited.pages == 0


def test_a_page_over_its_time_limit_fails_its_file(tmp_path: Path, reader: PageReader) -> None:
    hurried = PageReader(reader.model_dir, OcrLimits(seconds_per_page=1e-9))
    with pytest.raises(DocumentError, match=r"page 1: OCR of the page took longer .*ingest.ocr_seconds_per_page"):
        load_document(write(tmp_path, "slow.png", image_bytes(page_image(PROCEDURE), "PNG")), ocr=hurried)


def test_without_the_model_an_image_names_the_missing_model(tmp_path: Path, home: Path) -> None:
    settings = Settings(home=home, models_dir=tmp_path / "empty-store")
    unavailable = page_reader(settings)
    with pytest.raises(DocumentError, match=r"needs OCR, which is not available: the OCR model 'ppocr-v6-small' is"):
        load_document(write(tmp_path, "card.png", image_bytes(page_image(PROCEDURE), "PNG")), ocr=unavailable)


# --- the pipeline ------------------------------------------------------------------------------------------


def test_a_folder_of_scans_is_indexed_file_by_file_and_unchanged_scans_cost_nothing(
    tmp_path: Path, settings: Settings
) -> None:
    docs = tmp_path / "sops"
    docs.mkdir()
    (docs / "pump.md").write_text("# Pump P-101\n\nStart the pump after priming.\n", encoding="utf-8")
    write(docs, "restart-card.png", image_bytes(page_image(PROCEDURE), "PNG"))
    write(docs, "bomb.png", png_header_only(8000, 8000))
    report = ingest(settings, [docs])
    assert report.added == 2 and report.ocr_pages == 1
    assert [(f["path"], "ingest.ocr_max_pixels" in f["error"]) for f in report.failed] == [("sops/bomb.png", True)]
    index = Index(settings)
    try:
        bomb = index.catalog.document("sops/bomb.png")
    finally:
        index.close()
    assert bomb is not None and (bomb.status, bomb.type) == ("failed", "image")
    again = reindex(settings)
    assert again.unchanged == 2 and again.ocr_pages == 0  # content hash: the scan is not read again
    # A damaged copy over a good scan: reported, and the indexed version stays searchable.
    card = docs / "restart-card.png"
    card.write_bytes(card.read_bytes()[:200])
    damaged = reindex(settings)
    assert any(f["path"] == "sops/restart-card.png" for f in damaged.failed)
    index = Index(settings)
    try:
        rows = index.catalog.chunks_of_documents(["sops/restart-card.png"])["sops/restart-card.png"]
    finally:
        index.close()
    assert any("VLV-3042-B" in row.text and row.type == "image" and row.ocr_confidence for row in rows)


def test_an_answer_from_a_scan_cites_its_page_says_to_check_it_and_the_view_marks_it(
    tmp_path: Path, settings: Settings
) -> None:
    from appliance.answer.answerer import Answerer
    from tests.fakes import ScriptedGenerator

    docs = tmp_path / "scans"
    docs.mkdir()
    card = ["4. Restart of pump P-101", "1. Close valve VLV-3042-B.", "2. Open drain DRN-2002 for 5 minutes."]
    mixed_pdf(docs / "pump-manual.pdf", ["1. Scope", "This manual covers pump P-101."], page_image(card))
    ingest(settings, [docs])
    settings.ingest.ocr_low_confidence = 1.0  # every OCR'd passage counts as doubtful here
    result = Answerer(settings, generator=ScriptedGenerator()).ask("How do I restart pump P-101?")  # type: ignore[arg-type]
    assert not result.refused
    cited = [c for c in result.citations if c.page == 2]
    assert cited and all(c.ocr_note == "text recognised by OCR: check the page" for c in cited)
    assert all(c.ocr_confidence is not None and c.ocr_confidence < 1.0 for c in cited)
    settings.ingest.ocr_low_confidence = 0.0
    result = Answerer(settings, generator=ScriptedGenerator()).ask("How do I restart pump P-101?")  # type: ignore[arg-type]
    assert all(c.ocr_note is None for c in result.citations)
    # The document view shows page 2 as OCR read it (indexed text: OCR is not run again), marked as such.
    from appliance.documents.original import indexed_document, read_file
    from appliance.documents.view import document_view

    index = Index(settings)
    try:
        row = index.catalog.document("scans/pump-manual.pdf")
        assert row is not None
        chunks = index.catalog.chunks_of_documents([row.path])[row.path]
        document = indexed_document(index.catalog, row.id)
    finally:
        index.close()
    view = document_view(read_file(settings, document), page=2, chunks=[c for c in chunks if c.ocr_confidence])
    pages = {node["a"]["page"]: json.dumps(node) for node in view["body"].get("c", []) if node["t"] == "section"}
    assert "Text recognised by OCR" in pages[2] and "VLV-3042-B" in pages[2]
    assert "Text recognised by OCR" not in pages[1] and "P-101" in pages[1]
