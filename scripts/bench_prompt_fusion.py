"""What a fusion rule changes in the prompt: gold file and key phrases in the sources given to the model.

For every answerable question of the runbook sets (tune, held-out, sampled) and the demo set, the
prompt is built exactly as the answerer builds it (search → windows → token budget with the
generator's tokenizer; no generation), once per fusion rule, and the share of questions whose prompt
holds the gold file and every key phrase is reported side by side. Retrieval only: minutes.

Usage: python scripts/bench_prompt_fusion.py [--fusions weighted,zscore] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.generated.prompt import Source, build_prompt
from appliance.config import Settings
from appliance.evaluate.runner import QAItem, load_qa
from appliance.models.generation import Generator, load_generator
from appliance.retrieve.search import Searcher
from scripts.lib.report import finish

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_perturbations import SETS, indexed_settings

REPO = Path(__file__).resolve().parent.parent


def holds_all(text: str, phrases: tuple[str, ...]) -> bool:
    text = " ".join(text.lower().split())
    return all(" ".join(p.lower().split()) in text for p in phrases)


def prompt_coverage(items: Sequence[QAItem], shown: Sequence[Sequence[Source]]) -> dict[str, Any]:
    """Over the questions, the share whose prompt sources (`shown`, one list a question) hold a gold file,
    and the share whose sources hold every key phrase of the answer."""
    gold = sum(
        any(s.chunk.path in item.gold_files for s in sources) for item, sources in zip(items, shown, strict=True)
    )
    phrases = sum(
        holds_all("\n".join(s.text for s in sources), item.answer_keyphrases)
        for item, sources in zip(items, shown, strict=True)
    )
    return {
        "questions": len(items),
        "gold_file_in_prompt": round(gold / len(items), 3),
        "keyphrases_in_prompt": round(phrases / len(items), 3),
    }


def indexed_corpus(corpus: str, home: Path, models_dir: Path) -> tuple[Settings, Generator, int]:
    """The corpus ("runbooks" or "demo") indexed under `home`, the generator (for its tokenizer) and the
    prompt budget the answerer uses, as for the CLI but without a config file."""
    settings, _ = indexed_settings(corpus, home, models_dir)
    generator = load_generator(settings)
    return settings, generator, min(settings.answer.max_prompt_tokens, generator.n_ctx - settings.generator.max_tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--fusions", default="weighted,zscore")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    for corpus in ("runbooks", "demo"):
        base, generator, budget = indexed_corpus(corpus, args.home, args.models_dir)
        for fusion in args.fusions.split(","):
            settings = base.model_copy(update={"search": base.search.model_copy(update={"fusion": fusion})})
            searcher = Searcher(settings)
            for name, (set_corpus, path) in SETS.items():
                if set_corpus != corpus:
                    continue
                items = [item for item in load_qa(path) if item.answerable]
                shown = []
                for item in items:
                    found = searcher.search(item.question, k=settings.answer.max_sources)
                    rows = searcher.index.catalog.chunks_by_ids([hit.chunk_id for hit in found.hits])
                    prompt = build_prompt(
                        item.question,
                        [rows[hit.chunk_id] for hit in found.hits],
                        count_tokens=generator.count_tokens,
                        budget_tokens=budget,
                        max_sources=settings.answer.max_sources,
                        following=searcher.index.catalog.following_chunks,
                        window_chunks=settings.answer.window_chunks,
                    )
                    shown.append(prompt.sources)
                report.setdefault(name, {})[fusion] = prompt_coverage(items, shown)
                print(f"{name} {fusion}: {report[name][fusion]}", file=sys.stderr, flush=True)
            searcher.close()
        generator.close()
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
