"""OCR on a scanned copy of the demo corpus: character error rate, retrieval against the original,
pages per second and OCR's share of ingest time (docs/measurements/ocr.md).

The scanned copy (lab only, never in the package): each page of the chosen PDF SOPs, and of the DOCX
SOPs' printouts (LibreOffice's PDF, when `soffice` is installed: `make bench-ocr`), rendered at 200 and
300 dpi, then scan noise: a grey paper background, a rotation of up to ±2°, a slight blur and a JPEG
round trip at quality 60 (a copier); or a rotation of up to ±1.5°, 0.1 % specks and 1-bit black and
white (a fax). The pages are rebuilt as image-only PDFs of the same stem (gold files match by stem),
and one SOP also as a multi-page TIFF and PNG pages.

- CER: each noisy page's text as ingest stores it (PageReader: OCR, the page turned straight, ruled
  tables as pipe tables) against the original page's text as ingest stores it (the PDF loader: text
  layer, ruled tables as pipe tables), whitespace collapsed; also without spaces, and the share of
  the layer's words OCR read (order-free). For comparison, the first measure's reading: OCR's lines
  in detection order against pdfium's raw text layer (a wrapped table cell read across the row costs
  the moved words there).
- Retrieval and answers: docs_corpus as it is, and docs_corpus with the scanned PDFs in place of the
  originals (copier, 300 dpi), each ingested into its own home; the demo and procedure golden questions
  whose gold document is scanned; gold-file recall@5 over the top hits' distinct documents, and the
  quoted answer scored as bench_sop scores it (key phrases shown; step recall, complete answers).

    .venv/bin/python scripts/bench_ocr.py [--pages-per-doc N] [--docs SOP-FLT-001,...] [--models-dir DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image, ImageFilter  # noqa: E402

from appliance.config import Settings  # noqa: E402
from appliance.ingest.loaders.page_ocr import OcrLimits, PageReader  # noqa: E402
from appliance.ingest.loaders.pdf_loader import load_pdf  # noqa: E402
from appliance.ingest.loaders.source import Source  # noqa: E402
from appliance.ingest.pipeline import ingest  # noqa: E402
from appliance.models.registry import ocr_model_path  # noqa: E402
from appliance.retrieve.search import Searcher  # noqa: E402

CORPUS = ROOT / "docs_corpus"
RESULTS = ROOT / "scripts" / "results" / "bench_ocr.json"
QUESTION_SETS = [ROOT / "scripts" / "qa" / "demo_corpus.jsonl", ROOT / "scripts" / "qa" / "procedures.jsonl"]


def scan_noise(page: Image.Image, rng: random.Random) -> Image.Image:
    """A copier's page: grey paper, a slight skew, soft focus, JPEG at quality 60."""
    grey = page.convert("L").point(lambda v: int(60 + v * (215 - 60) / 255))  # ink ~60, paper ~215
    skewed = grey.rotate(rng.uniform(-2.0, 2.0), resample=Image.Resampling.BICUBIC, expand=True, fillcolor=215)
    blurred = skewed.filter(ImageFilter.GaussianBlur(radius=0.8))
    buffer = io.BytesIO()
    blurred.save(buffer, format="JPEG", quality=60)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


def fax_noise(page: Image.Image, rng: random.Random) -> Image.Image:
    """A fax or a 1-bit office scan: a slight skew, black and white only (no grey, ragged strokes),
    specks of toner on the paper and ink lost from the letters."""
    skewed = page.convert("L").rotate(
        rng.uniform(-1.5, 1.5), resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255
    )
    speckled = skewed.copy()
    pixels = speckled.load()
    assert pixels is not None
    width, height = speckled.size
    for _ in range(width * height // 1000):  # 0.1 % of the pixels flip
        x, y = rng.randrange(width), rng.randrange(height)
        pixels[x, y] = 255 - pixels[x, y]  # type: ignore[operator,index]
    return speckled.point(lambda v: 0 if v < 140 else 255).convert("L")


def photo_noise(page: Image.Image, rng: random.Random) -> Image.Image:
    """A phone's photo of the page held flat: a perspective (each corner moved by up to 3 % of the page),
    light falling off across the page (100 % to 65 %), soft focus, JPEG at quality 80."""
    import numpy as np

    width, height = page.size
    corners = [(0, 0), (width, 0), (width, height), (0, height)]
    moved = [(x + rng.uniform(-0.03, 0.03) * width, y + rng.uniform(-0.03, 0.03) * height) for x, y in corners]
    # PIL maps each output pixel back into the input: solve for the 8 coefficients that take `moved` to `corners`.
    rows = []
    for (x, y), (u, v) in zip(moved, corners, strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
    targets = [value for corner in corners for value in corner]
    coefficients = np.linalg.solve(np.array(rows, dtype=float), np.array(targets, dtype=float))
    warped = page.convert("L").transform(
        (width, height), Image.Transform.PERSPECTIVE, tuple(coefficients), Image.Resampling.BICUBIC, fillcolor=120
    )
    light = np.linspace(1.0, 0.65, width)[None, :] * np.ones((height, 1))
    lit = Image.fromarray((np.asarray(warped, dtype=float) * light).clip(0, 255).astype("uint8"))
    buffer = io.BytesIO()
    lit.filter(ImageFilter.GaussianBlur(radius=1.0)).save(buffer, format="JPEG", quality=80)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


NOISE = {"copier": scan_noise, "fax": fax_noise, "photo": photo_noise}
PROFILES = {  # the results key of each CER measure: (noise, dpi)
    "cer_200dpi": ("copier", 200),
    "cer_300dpi": ("copier", 300),
    "cer_fax_200dpi": ("fax", 200),
    "cer_photo_200dpi": ("photo", 200),
}


def render_pages(pdf_path: Path, dpi: int, limit: int | None) -> list[tuple[Image.Image, str, str]]:
    """(page image, the page's raw text layer, the page's text as the PDF loader stores it) for the
    first `limit` pages."""
    import pypdfium2 as pdfium

    stored: dict[int, list[str]] = {}
    for block in load_pdf(pdf_path.read_bytes(), Source(pdf_path, pdf_path.name)).blocks:
        stored.setdefault(block.page or 0, []).append(block.text)
    document = pdfium.PdfDocument(str(pdf_path))
    pages = []
    for index in range(len(document) if limit is None else min(limit, len(document))):
        page = document[index]
        image = page.render(scale=dpi / 72, grayscale=True).to_pil()
        pages.append((image, page.get_textpage().get_text_range(), "\n".join(stored.get(index + 1, []))))
    document.close()
    return pages


def normalise(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return re.findall(r"[\w][\w.\-/]*[\w]|\w", text.casefold())


def _distance(read: str, truth: str) -> tuple[int, int, int, int]:
    """(errors, characters, errors ignoring spaces, characters ignoring spaces)."""
    from rapidfuzz.distance import Levenshtein

    read, truth = normalise(read), normalise(truth)
    bare_read, bare_truth = read.replace(" ", ""), truth.replace(" ", "")
    return Levenshtein.distance(read, truth), len(truth), Levenshtein.distance(bare_read, bare_truth), len(bare_truth)


def character_errors(reader: PageReader, pages: list[tuple[Image.Image, str, str, str]]) -> dict[str, Any]:
    stored = [0, 0, 0, 0]
    raw = [0, 0, 0, 0]
    per_page = []
    seconds = 0.0
    words_found = words_total = 0
    for number, (image, layer, truth, label) in enumerate(pages, start=1):
        blocks, result = reader.blocks("bench", image, number)
        seconds += result.seconds
        read = "\n".join(item.block.text for item in blocks)
        page = _distance(read, truth)
        stored = [a + b for a, b in zip(stored, page, strict=True)]
        per_page.append({"page": label, "cer": round(page[0] / max(1, page[1]), 4), "characters": page[1]})
        detection_order = " ".join(line.text for line in result.lines)
        raw = [a + b for a, b in zip(raw, _distance(detection_order, layer), strict=True)]
        read_words = Counter(_words(detection_order))
        for word, count in Counter(_words(layer)).items():
            words_found += min(count, read_words[word])
            words_total += count
    return {
        "pages": len(pages),
        "characters": stored[1],
        "cer": round(stored[0] / max(1, stored[1]), 4),
        "cer_ignoring_spaces": round(stored[2] / max(1, stored[3]), 4),
        "per_page": per_page,
        "cer_detection_order_vs_raw_layer": round(raw[0] / max(1, raw[1]), 4),
        "words_found": round(words_found / max(1, words_total), 4),
        "ocr_seconds": round(seconds, 1),
        "pages_per_second": round(len(pages) / max(seconds, 1e-9), 4),
    }


def scanned_pdf(pages: list[Image.Image], path: Path, dpi: int) -> None:
    pages[0].save(path, format="PDF", save_all=True, append_images=pages[1:], resolution=dpi)


def printed(docx: Path, out: Path) -> Path | None:
    """The DOCX as Word-like software prints it (LibreOffice, headless, to PDF); None without it
    (`make bench-ocr` installs Debian's libreoffice-writer-nogui)."""
    soffice = shutil.which("soffice")
    if soffice is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [soffice, "--headless", "--convert-to", "pdf", "--outdir", str(out), str(docx)],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "HOME": str(out)},  # LibreOffice's profile, not the user's
    )
    pdf = out / f"{docx.stem}.pdf"
    return pdf if pdf.is_file() else None


def questions(scanned: set[str]) -> list[dict[str, Any]]:
    """The answerable demo and procedure questions whose gold document (by stem: a scanned DOCX is a
    PDF of the same name) is scanned."""
    found = []
    for path in QUESTION_SETS:
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            gold = item.get("gold_files") or ([item["gold_file"]] if item.get("gold_file") else [])
            if item.get("answerable", True) and any(Path(g).stem in scanned for g in gold):
                found.append({**item, "gold": gold})
    return found


def as_scanned(item: dict[str, Any], stems: set[str]) -> dict[str, Any]:
    """The question with its scanned gold files named as in the scanned copy (.pdf)."""

    def renamed(path: str) -> str:
        return str(Path(path).with_suffix(".pdf")) if Path(path).stem in stems else path

    copy = {**item, "gold": [renamed(g) for g in item["gold"]]}
    if item.get("gold_file"):
        copy["gold_file"] = renamed(item["gold_file"])
    if item.get("gold_files"):
        copy["gold_files"] = [renamed(g) for g in item["gold_files"]]
    return copy


def recall_at_5(settings: Settings, asked: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    searcher = Searcher(settings)
    hits_per_question = {}
    found = 0
    for item in asked:
        result = searcher.search(item["question"], k=30)
        documents: list[str] = []
        for hit in result.hits:
            name = Path(hit.path).name
            if name not in documents:
                documents.append(name)
        top = documents[:5]
        ok = any(Path(g).name in top for g in item["gold"])
        found += ok
        hits_per_question[item["id"]] = ok
    searcher.index.close()
    return {
        "recall@5": round(found / max(1, len(asked)), 4),
        "found": found,
        "of": len(asked),
        "per_question": hits_per_question,
    }


def answers(settings: Settings, asked: list[dict[str, Any]]) -> dict[str, Any]:
    """What the operator is shown (the default quoted answer) for each question, scored as bench_sop
    scores it: every key phrase shown (demo set), step recall and complete answers (procedure set)."""
    from appliance.answer.answerer import Answerer
    from scripts.bench_sop import row_for

    answerer = Answerer(settings)
    rows = []
    for item in asked:
        started = time.perf_counter()
        result = answerer.ask(item["question"])
        rows.append(row_for(item, result, time.perf_counter() - started))
    keyed = [row for row in rows if "keyphrases_shown" in row]
    stepped = [row for row in rows if "step_recall" in row]
    return {
        "keyphrases_shown": sum(row["keyphrases_shown"] for row in keyed),
        "keyphrase_questions": len(keyed),
        "step_recall": round(sum(row["step_recall"] for row in stepped) / max(1, len(stepped)), 4),
        "complete": sum(row["complete"] for row in stepped),
        "procedure_questions": len(stepped),
        "refused": sum(row["refused"] for row in rows),
        "gold_cited": sum(bool(row["gold_cited"]) for row in rows),
        "rows": [
            {k: row.get(k) for k in ("id", "refused", "keyphrases_shown", "step_recall", "gold_cited", "sections")}
            for row in rows
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--docs", default="", help="comma-separated name prefixes of the PDF SOPs to scan (default: all)"
    )
    parser.add_argument("--cer-docs", default="", help="name prefixes of the SOPs the CER reads (default: all)")
    parser.add_argument("--pages-per-doc", type=int, default=0, help="CER: at most this many pages per SOP (0: all)")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument(
        "--profiles", default=",".join(PROFILES), help="the CER measures to run: " + ", ".join(PROFILES)
    )
    parser.add_argument("--copy-noise", choices=sorted(NOISE), default="copier", help="the scanned copy's noise")
    parser.add_argument("--cer-only", action="store_true", help="measure the CER only; merge it into the results file")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-ocr-"))
    base = Settings(home=work / "probe", **({"models_dir": args.models_dir} if args.models_dir else {}))
    reader = PageReader(ocr_model_path(base), OcrLimits(), threads=args.threads)
    chosen = [p for p in sorted(CORPUS.iterdir()) if not args.docs or p.name.startswith(tuple(args.docs.split(",")))]
    pdfs = [p for p in chosen if p.suffix == ".pdf"]
    # DOCX SOPs are scanned from their printout (the PDF LibreOffice makes), when LibreOffice is here.
    docx_printouts = {p: printed(p, work / "printed") for p in chosen if p.suffix == ".docx"}
    printouts = [pdf for pdf in docx_printouts.values() if pdf is not None]
    cer_docs = [p for p in pdfs + printouts if not args.cer_docs or p.name.startswith(tuple(args.cer_docs.split(",")))]
    rng = random.Random(args.seed)
    results: dict[str, Any] = {
        "scanned_documents": [p.name for p in pdfs] + [p.name for p, pdf in docx_printouts.items() if pdf],
        "docx_not_scanned": [p.name for p, pdf in docx_printouts.items() if pdf is None],
        "cer_documents": [p.name for p in cer_docs],
    }
    limit = args.pages_per_doc or None

    # 1. Character error rate: copier scans at 200 and 300 dpi, fax-like 1-bit scans and phone photos at 200 dpi.
    for key in filter(None, args.profiles.split(",")):
        noise, dpi = PROFILES[key]
        pages = []
        for pdf in cer_docs:
            rendered = render_pages(pdf, dpi, limit)
            pages += [
                (NOISE[noise](image, rng), layer, text, f"{pdf.name[:11]} p{number}")
                for number, (image, layer, text) in enumerate(rendered, start=1)
            ]
        results[key] = {"noise": noise, "dpi": dpi, **character_errors(reader, pages)}
        print(f"{key}: " + json.dumps({k: v for k, v in results[key].items() if k != "per_page"}), flush=True)

    if args.cer_only:
        previous = json.loads(args.results.read_text(encoding="utf-8")) if args.results.is_file() else {}
        args.results.write_text(json.dumps({**previous, **results}, indent=2) + "\n", encoding="utf-8")
        return 0

    # 2. The scanned copy: docs_corpus with the PDFs replaced by image-only scans at 300 dpi (copier noise,
    # or --copy-noise).
    scan_corpus = work / "docs_corpus"
    shutil.copytree(CORPUS, scan_corpus)
    for pdf in pdfs + printouts:
        noisy = [NOISE[args.copy_noise](image, rng) for image, _, _ in render_pages(pdf, 300, None)]
        scanned_pdf(noisy, scan_corpus / pdf.name, 300)
    for docx, printout in docx_printouts.items():
        if printout is not None:
            (scan_corpus / docx.name).unlink()  # the scan of its printout takes its place
    # One SOP also as a multi-page TIFF and PNG pages: the image loaders in the same ingest.
    extra = work / "images"
    extra.mkdir()
    first = [scan_noise(image, rng) for image, _, _ in render_pages(pdfs[0], 200, 2)]
    first[0].save(extra / "scan.tiff", save_all=True, append_images=first[1:], compression="tiff_deflate")
    first[0].save(extra / "scan-page1.png")

    stems = {p.stem for p in pdfs + printouts}
    asked = questions(stems)
    results["questions"] = len(asked)
    runs: dict[str, Any] = {}
    scanned_asked = [as_scanned(item, stems) for item in asked]
    for name, folder, items in (("original", CORPUS, asked), ("scanned", scan_corpus, scanned_asked)):
        settings = Settings(home=work / name, **({"models_dir": args.models_dir} if args.models_dir else {}))
        settings.ingest.ocr_threads = args.threads
        settings.ingest.ocr_dpi = 300
        started = time.monotonic()
        report = ingest(settings, [folder])
        seconds = time.monotonic() - started
        runs[name] = {
            "ingest_seconds": round(seconds, 1),
            "ocr_pages": report.ocr_pages,
            "ocr_seconds": round(report.ocr_seconds, 1),
            "ocr_share_of_ingest": round(report.ocr_seconds / max(seconds, 1e-9), 3),
            "failed": report.failed,
            **recall_at_5(settings, items, name),
            "answers": answers(settings, items),
        }
        print(name, {k: v for k, v in runs[name].items() if k not in ("per_question", "answers")}, flush=True)
    images = Settings(home=work / "images-home", **({"models_dir": args.models_dir} if args.models_dir else {}))
    images.ingest.ocr_threads = args.threads
    image_report = ingest(images, [extra])
    runs["images"] = {"added": image_report.added, "failed": image_report.failed, "ocr_pages": image_report.ocr_pages}
    results["retrieval"] = runs
    original, scanned = runs["original"]["recall@5"], runs["scanned"]["recall@5"]
    results["recall@5_ratio"] = round(scanned / original, 4) if original else None
    identifier = [q["id"] for q in asked if q.get("kind") == "identifier"]
    results["identifier_questions_found_scanned"] = sum(runs["scanned"]["per_question"][i] for i in identifier)
    results["identifier_questions"] = len(identifier)
    results["threads"] = args.threads
    results["copy_noise"] = args.copy_noise
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in results.items() if k != "retrieval"}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
