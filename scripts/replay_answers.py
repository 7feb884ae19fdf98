"""Re-run everything the appliance decides around generation on the answers stored by bench_answers.py.

The model is the slow part of an answer and the one part a rule change does not touch. This script
rebuilds each stored question's retrieval, evidence decision and prompt with the code it runs under,
then feeds the model's stored text (`generated` in the rows of scripts/results/bench_answers.json)
through the real `Answerer` in place of a generation, and writes every decision: refused or not and
why, grounded, verified, the unsupported sentences, the citations and the sources given. Run it under
two versions of the code and diff the outputs: a refactor must leave every decision identical; a rule
change shows exactly which answers it moves. It loads the generator's model only for its tokenizer
(prompt budgets are counted in its tokens) and generates nothing: minutes, not hours.

Each run also gets the issue-16 table (`summary`): answerable questions refused, unanswerable declined,
answers holding every key phrase (the answer alone, and with the sources' lines quoted under it), every
key phrase in the prompt, answers shown grounded, correct answers shown grounded, answers whose warning
names a tag, number or command in no source (or a contradiction), and the median words of answer and
quotes; the key phrases come from the golden sets of scripts/qa/.

Usage: python scripts/replay_answers.py --out FILE [--home DIR] [--models-dir DIR] [--results FILE] [--fusion weighted]
       [--runs runbooks_heldout_all75_final,demo_corpus_all34_final,runbooks_heldout_first40_prompt_v3_prefix_cache]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.config import load_settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStats, Generator, load_generator

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = "runbooks_heldout_all75_final,demo_corpus_all34_final,runbooks_heldout_first40_prompt_v3_prefix_cache"


class StoredText:
    """A stream of one stored answer: the text in one piece, with stats like the original run's."""

    def __init__(self, text: str, completion_tokens: int | None, max_tokens: int | None) -> None:
        self._pieces = iter([text] if text else [])
        limit = max_tokens or 0
        finish = "length" if completion_tokens is not None and limit and completion_tokens >= limit else "stop"
        self.stats = GenerationStats(0, completion_tokens or 0, None, None, 0.0, 0.0, 0.0, finish)

    def __iter__(self) -> Iterator[str]:
        return self._pieces

    def __enter__(self) -> StoredText:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class ReplayGenerator:
    """The real generator's tokenizer and context size; the stored text instead of a generation."""

    def __init__(self, real: Generator) -> None:
        self.real = real
        self.model_id = real.model_id
        self.n_ctx = real.n_ctx
        self.text: str | None = None
        self.completion_tokens: int | None = None
        self.asked = False

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> StoredText:
        self.asked = True
        return StoredText(self.text or "", self.completion_tokens, max_tokens)

    def close(self) -> None:
        self.real.close()


def decisions(result: Any) -> dict[str, Any]:
    """Everything the rules decided about one answer, nothing that depends on time."""
    return {
        "refused": result.refused,
        "refusal_reason": result.refusal_reason,
        "answer": result.answer,
        "grounded": result.grounded,
        "verified": result.verified,
        "unsupported": list(result.unsupported),
        "citations": [[c.n, c.chunk_id, c.path, c.section, c.page] for c in result.citations],
        "removed_citations": list(result.removed_citations),
        "attributed_citations": list(result.attributed_citations),
        # getattr: the same script replays code from before these fields, for a before/after table.
        "corrected_citations": [
            [c.sentence, list(c.cited), list(c.corrected)] for c in getattr(result, "corrected_citations", [])
        ],
        "quotes": [[q.n, q.why, q.text, q.sentence] for q in getattr(result, "quotes", [])],
        "invented": list(getattr(result, "invented", [])),
        "contradicting": list(getattr(result, "contradicting", [])),
        "truncated": result.truncated,
        "sources": [[e.n, e.chunk_id, list(e.chunk_ids)] for e in result.evidence],
        "prompt": dict(result.prompt),
    }


def golden() -> dict[str, dict[str, Any]]:
    """Every golden question of scripts/qa by id."""
    items = {}
    for path in sorted((REPO / "scripts" / "qa").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                item = json.loads(line)
                if "answer_keyphrases" in item:  # not the support labels, which share the ids
                    items[item["id"]] = item
    return items


def holds_all(text: str, phrases: list[str]) -> bool:
    flat = " ".join(text.lower().split())
    return all(" ".join(p.lower().split()) in flat for p in phrases)


def scored(row: dict[str, Any], item: dict[str, Any], context: str) -> dict[str, Any]:
    """The row's figures for the table: key phrases in the answer, with quotes, in the prompt; words."""
    phrases = item["answer_keyphrases"]
    shown = " ".join([row["answer"], *(quote[2] for quote in row["quotes"])])
    stands = not row["refused"]
    return {
        "answerable": item["answerable"],
        "hit": item["answerable"] and stands and holds_all(row["answer"], phrases),
        "hit_with_quotes": item["answerable"] and stands and holds_all(shown, phrases),
        "phrases_in_context": item["answerable"] and holds_all(context, phrases),
        "words_with_quotes": len(shown.split()),
    }


def _named(row: dict[str, Any]) -> bool:
    return not row["grounded"] and bool(row.get("invented") or row.get("contradicting"))


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    stood = [r for r in answerable if not r["refused"]]
    shown = [r for r in rows if not r["refused"]]
    correct = [r for r in stood if r["hit_with_quotes"]]

    def count(rows: list[dict[str, Any]], key: str) -> int:
        return sum(bool(r[key]) for r in rows)

    def share(part: int, whole: int) -> str:
        return f"{part / whole:.0%} ({part} of {whole})" if whole else "-"

    return {
        "answerable_refused": share(sum(r["refused"] for r in answerable), len(answerable)),
        "unanswerable_declined": share(sum(r["refused"] for r in unanswerable), len(unanswerable)),
        "answer_holds_every_key_phrase": share(sum(r["hit"] for r in answerable), len(answerable)),
        "answer_and_quotes_hold_every_key_phrase": share(count(answerable, "hit_with_quotes"), len(answerable)),
        "every_key_phrase_in_the_prompt": share(sum(r["phrases_in_context"] for r in answerable), len(answerable)),
        "answers_shown_grounded": share(sum(r["grounded"] for r in shown), len(shown)),
        "correct_answers_shown_grounded": share(sum(r["grounded"] for r in correct), len(correct)),
        # The warning that names something (a tag, number, command in no source, or a contradiction) against
        # the milder one (only the wording differs from the sources).
        "correct_answers_with_a_named_warning": share(sum(_named(r) for r in correct), len(correct)),
        "unanswerable_answered_with_a_named_warning": share(
            sum(_named(r) for r in unanswerable if not r["refused"]), sum(not r["refused"] for r in unanswerable)
        ),
        "words_median": statistics.median(r["words_with_quotes"] for r in shown) if shown else 0,
        "corrected_citations": sum(len(r["corrected_citations"]) for r in shown),
        "answers_with_quotes": sum(bool(r["quotes"]) for r in shown),
    }


@contextmanager
def answerer_for(
    name: str,
    home: Path,
    models_dir: Path,
    fusion: str | None = None,
    generator_type: type[ReplayGenerator] | None = None,
) -> Iterator[tuple[Answerer, ReplayGenerator]]:
    runbooks = REPO.parent / "shared" / "data" / "runbooks"
    roots = sorted(p for p in runbooks.iterdir() if p.is_dir()) if name == "runbooks" else [REPO / "docs_corpus"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("APPLIANCE_")}
    environ.update({"APPLIANCE_HOME": str(home / name), "APPLIANCE_MODELS_DIR": str(models_dir)})
    if fusion:
        environ["APPLIANCE_SEARCH_FUSION"] = fusion
    settings = load_settings(environ)
    ingest(settings, roots)
    generator = (generator_type or ReplayGenerator)(load_generator(settings))
    answerer = Answerer(settings, generator=generator)  # type: ignore[arg-type]
    try:
        yield answerer, generator
    finally:
        answerer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "bench_answers.json")
    parser.add_argument("--runs", default=DEFAULT_RUNS, help="Keys of --results whose rows to replay.")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "replay")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--fusion",
        choices=["rrf", "weighted", "zscore"],
        help="search.fusion of the run that wrote the answers (generations before stop 28: weighted); "
        "default: today's setting",
    )
    args = parser.parse_args()
    stored = json.loads(args.results.read_text())
    items = golden()
    out: dict[str, Any] = {}
    for run in args.runs.split(","):
        name = "demo" if run.startswith("demo") else "runbooks"
        with answerer_for(name, args.home, args.models_dir, args.fusion) as (answerer, generator):
            rows = []
            for row in stored[run]["rows"]:
                generator.text, generator.completion_tokens = row.get("generated"), row.get("completion_tokens")
                generator.asked = False
                result = answerer.ask(row["question"])
                # A question the stored run refused before generating has no text: asking it now is a change.
                decided = {"id": row["id"], "asked_model": generator.asked, **decisions(result)}
                if row["id"] in items:
                    context = "\n".join(e.text for e in result.evidence if e.n is not None)
                    decided.update(scored(decided, items[row["id"]], context))
                rows.append(decided)
            out[run] = rows
            if all("answerable" in r for r in rows):
                out[f"{run}_summary"] = table(rows)
                print(json.dumps({run: out[f"{run}_summary"]}, indent=1), file=sys.stderr, flush=True)
        print(f"{run}: {len(rows)} answers replayed", file=sys.stderr, flush=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
