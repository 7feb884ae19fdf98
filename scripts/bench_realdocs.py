"""How the project's own ingest reads real procedure documents the team did not write (issue 41, item 5).

The set: 44 PDF/DOCX procedures of 21 organisations (scripts/realdocs/sources.json), kept outside the
project and rebuilt by scripts/realdocs/rebuild.py (default /work/realdocs/files). Hand labels per
document (scripts/realdocs/labels/<id>.json) and procedure questions (scripts/realdocs/questions.jsonl).
The set is ingested into a temporary APPLIANCE_HOME with appliance.ingest.pipeline.ingest, then:

  headings      precision and recall of the section headings ingest made (every distinct part of the
                chunks' heading paths, level = its depth) against the labelled tree, matched by normalised
                text and level (strict) and by text alone; precision leaves out documents whose label
                covers only the top levels ("coverage" in their layout). A document with two or more
                labelled headings and none found is "flat".
  furniture     running header/footer lines leaked into chunks: chunk lines (the overlap between
                neighbouring chunks counted once) that match a labelled furniture pattern whole, per 100
                pages; also without the bare page-number patterns.
  steps         labelled numbered steps found as numbered step items by appliance.text.layout in the
                document's sections (appliance.answer.quoted.sections), against found as any item.
  control       labelled document-control fields (number, title, revision, effective and review date)
                whose value appears among what the catalog stores for the document.
  questions     procedure step recall / complete / right document cited of the quoted answer, matched as
                scripts/bench_sop.py does (shown_text, phrase_positions, row_for).

Usage: python scripts/bench_realdocs.py [--set /work/realdocs/files] [--home DIR] [--models-dir DIR]
       [--no-questions] [--json scripts/results/bench_realdocs.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.answer.quoted.sections import SEPARATOR, document_sections
from appliance.config import load_settings
from appliance.index.records import ChunkRow
from appliance.ingest.pipeline import ingest
from scripts.bench_sop import flat, replace_mode, row_for, summarize

REPO = Path(__file__).resolve().parent.parent
REALDOCS = REPO / "scripts" / "realdocs"
DEFAULT_SET = Path("/work/realdocs/files")
_MARKER = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3})*[.)]|[A-Za-z][.)]|\(?[ivx]{1,4}\)|[-*+•▪◦‣])\s+")
_BARE_NUMBER = {r"\d{1,2}", r"\d{1,3}"}
QUESTION_FIGURES = (
    "questions",
    "step_recall_mean",
    "complete",
    "gold_document_cited",
    "answerable_refused",
    "words_shown_median",
)


def norm(text: str) -> str:
    """Heading text for matching: case, punctuation, dashes and spacing ignored."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


def check_set(folder: Path, sources: list[dict[str, Any]]) -> None:
    for entry in sources:
        path = folder / entry["file"]
        if not path.is_file():
            sys.exit(f"{path}: missing; run python scripts/realdocs/rebuild.py --out {folder}")
        if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            sys.exit(f"{path}: sha256 differs from scripts/realdocs/sources.json; rebuild the set")


def predicted_headings(chunks: list[ChunkRow]) -> list[tuple[str, int]]:
    """Every distinct heading path part ingest gave the document's chunks, as (text, level)."""
    seen: dict[str, tuple[str, int]] = {}
    for chunk in chunks:
        parts = chunk.section.split(SEPARATOR) if chunk.section else []
        for depth in range(1, len(parts) + 1):
            seen.setdefault(SEPARATOR.join(parts[:depth]), (parts[depth - 1], depth))
    return list(seen.values())


def heading_scores(label: dict[str, Any], predicted: list[tuple[str, int]]) -> dict[str, Any]:
    gold = [(norm(h["text"]), h["level"]) for h in label["headings"]]
    found = [(norm(text), level) for text, level in predicted]
    strict = sum((Counter(gold) & Counter(found)).values())
    loose = sum((Counter(t for t, _ in gold) & Counter(t for t, _ in found)).values())
    partial = "only" in str(label.get("layout", {}).get("coverage", ""))
    return {
        "labelled": len(gold),
        "predicted": len(found),
        "matched_strict": strict,
        "matched_text": loose,
        "precision_counts": not partial,
        "flat": len(gold) >= 2 and not found,
        "missed": [h["text"] for h in label["headings"] if norm(h["text"]) not in {t for t, _ in found}][:8],
    }


def document_lines(chunks: list[ChunkRow]) -> list[str]:
    """The chunks' lines with the overlap between neighbours counted once."""
    lines: list[str] = []
    covered = 0
    for chunk in sorted(chunks, key=lambda c: (c.start, c.end)):
        text = chunk.text[max(0, covered - chunk.start) :] if chunk.end > covered else ""
        covered = max(covered, chunk.end)
        lines.extend(line.strip() for line in text.splitlines() if line.strip())
    return lines


def furniture_leaks(label: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    patterns = [(f["pattern"], re.compile(f["pattern"])) for f in label.get("furniture", [])]
    leaked = [line for line in lines if any(rx.fullmatch(line) for _, rx in patterns)]
    worded = [line for line in lines if any(rx.fullmatch(line) for p, rx in patterns if p not in _BARE_NUMBER)]
    return {"lines": len(leaked), "lines_without_page_numbers": len(worded), "examples": sorted(set(worded))[:4]}


def step_scores(label: dict[str, Any], chunks: list[ChunkRow]) -> dict[str, int]:
    sections = document_sections(chunks)
    items = sections[""].items if "" in sections else ()
    texts = [(flat(_MARKER.sub("", item.text)), item.kind) for item in items]
    labelled = as_step = as_any = 0
    for steps in label.get("steps", []):
        for first in steps["first_words"]:
            labelled += 1
            want = flat(first)
            kinds = {kind for text, kind in texts if text.startswith(want)}
            as_step += "step" in kinds
            as_any += bool(kinds)
    return {"labelled": labelled, "as_step": as_step, "as_any_item": as_any}


def control_scores(label: dict[str, Any], document: Any, meta: Any = None) -> dict[str, Any]:
    """Labelled control fields found among what the catalog stores for the document: its row and the control
    block ingest read (Catalog.document_meta)."""
    stored = [flat(str(v)) for v in dataclasses.asdict(document).values() if isinstance(v, str) and v]
    metadata = getattr(document, "metadata", None)
    if isinstance(metadata, dict):
        stored += [flat(str(v)) for v in metadata.values() if v]
    if meta is not None:
        stored += [flat(str(v)) for v in dataclasses.asdict(meta.control).values() if isinstance(v, str) and v]
    fields = {k: v for k, v in label.get("document_control", {}).items() if v}
    found = [k for k, v in fields.items() if any(flat(v) in s for s in stored)]
    return {"labelled": len(fields), "found": len(found), "fields_found": found}


def _share(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def run_questions(answerer: Answerer, paths: dict[str, str]) -> dict[str, Any]:
    items = [json.loads(line) for line in (REALDOCS / "questions.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for item in items:
        started = time.perf_counter()
        result = answerer.ask(item["question"])
        row = row_for({**item, "gold_file": paths[item["gold_file"]]}, result, time.perf_counter() - started)
        row["org"] = item["org"]
        rows.append(row)
        brief = f"recall {row['step_recall']:.2f} cited {row['gold_cited']} {row['words']}w"
        print(f"{item['id']}: {brief}", file=sys.stderr)
    return {"summary": summarize(rows), "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=DEFAULT_SET, help="folder of the rebuilt set")
    parser.add_argument("--home", type=Path, default=None, help="APPLIANCE_HOME to ingest into (default: a temp dir)")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--no-questions", action="store_true")
    parser.add_argument("--json", type=Path, default=REPO / "scripts" / "results" / "bench_realdocs.json")
    args = parser.parse_args()
    sources = json.loads((REALDOCS / "sources.json").read_text(encoding="utf8"))
    check_set(args.set, sources)
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-realdocs-"))
    environ = {**os.environ, "APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(args.models_dir)}
    environ.setdefault("APPLIANCE_ANSWER_LLM_JUDGE", "off")  # the section choice alone, as its results were measured
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings(environ)
    started = time.perf_counter()
    ingest(settings, [args.set])
    ingest_s = time.perf_counter() - started
    answerer = Answerer(settings.model_copy(update={"answer": replace_mode(settings, "quoted")}))
    catalog = answerer.searcher.catalog
    documents = {Path(d.path).name: d for d in catalog.documents()}
    paths = {name: d.path for name, d in documents.items()}
    chunks_by_path = catalog.chunks_of_documents(list(paths.values()))
    metas = catalog.document_meta(list(paths.values()))

    per_doc: dict[str, Any] = {}
    for entry in sources:
        label = json.loads((REALDOCS / "labels" / f"{entry['id']}.json").read_text(encoding="utf8"))
        document = documents.get(entry["file"])
        chunks = chunks_by_path.get(document.path, []) if document else []
        per_doc[entry["id"]] = {
            "format": entry["format"],
            "pages": entry["pages"],
            "indexed": bool(chunks),
            "headings": heading_scores(label, predicted_headings(chunks)),
            "furniture": furniture_leaks(label, document_lines(chunks)),
            "steps": step_scores(label, chunks),
            "control": control_scores(label, document, metas.get(document.path))
            if document
            else {"labelled": 0, "found": 0},
        }

    docs = list(per_doc.values())
    pages = sum(d["pages"] for d in docs)
    scored = [d for d in docs if d["headings"]["precision_counts"]]

    stepped = [d for d in docs if d["steps"]["labelled"]]

    def total(part: str, key: str, over: list[dict[str, Any]] = docs) -> int:
        return sum(d[part][key] for d in over)

    summary: dict[str, Any] = {
        "documents": len(docs),
        "pages": pages,
        "indexed": sum(d["indexed"] for d in docs),
        "ingest_s": round(ingest_s, 1),
        "heading_precision_strict": _share(
            total("headings", "matched_strict", scored), total("headings", "predicted", scored)
        ),
        "heading_recall_strict": _share(total("headings", "matched_strict"), total("headings", "labelled")),
        "heading_precision_text": _share(
            total("headings", "matched_text", scored), total("headings", "predicted", scored)
        ),
        "heading_recall_text": _share(total("headings", "matched_text"), total("headings", "labelled")),
        "flat_documents": sorted(k for k, d in per_doc.items() if d["headings"]["flat"]),
        "furniture_lines_per_100_pages": round(100 * total("furniture", "lines") / pages, 1),
        "furniture_lines_per_100_pages_without_page_numbers": round(
            100 * total("furniture", "lines_without_page_numbers") / pages, 1
        ),
        "documents_leaking_furniture": sum(d["furniture"]["lines_without_page_numbers"] > 0 for d in docs),
        "steps_as_steps": _share(total("steps", "as_step"), total("steps", "labelled")),
        "steps_as_any_item": _share(total("steps", "as_any_item"), total("steps", "labelled")),
        # Per document, then averaged: the 132-page manual's 585 numbered lines would otherwise decide alone.
        "steps_as_steps_mean_per_document": _share(
            round(1000 * sum(d["steps"]["as_step"] / d["steps"]["labelled"] for d in stepped)), 1000 * len(stepped)
        ),
        "control_fields_found": _share(total("control", "found"), total("control", "labelled")),
    }
    report: dict[str, Any] = {"summary": summary, "documents": per_doc}
    if not args.no_questions:
        report["questions"] = run_questions(answerer, paths)
        summary["questions"] = {k: report["questions"]["summary"][k] for k in QUESTION_FIGURES}
    answerer.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
