"""Which more lines of the sources, quoted under an answer, would put its missing key phrases in front of the operator?

The answer's quotes today (answer/quotes.py) are the line a reworded sentence rests on and the line whose
command, setting or value a supported sentence left out, at most 3. On the stored generations most answers
that miss a key phrase had it in a source they cite, in a line no sentence of theirs rests on. This script
reads a replay (`scripts/replay_answers.py --out FILE`: every answer that stood, its quotes and the chunks of
each source) and measures, per set, what each further design would add, at what length:

- `question_line`: the line of the first cited source that best matches the question (the highlight of
  evidence_sentences.py, words blended with the embedder's cosine);
- `question_line_specific`: the same, only when that line holds an identifier, number, frequency or command
  the answer does not;
- `resting_lines_3`, `resting_lines_5`: every line of a cited source holding such a specific that an answer
  sentence citing the source rests on (≥ 30% of the sentence's terms, as quotes.py), best first, up to 3 or 5
  quotes in all.

Reported: answerable answers that gain every key phrase (of those that stand), the median words of answer and
quotes before and after, and how many unanswerable questions answered get a line too. No generation, no
decision changes: a minute.

Usage: python scripts/bench_quote_designs.py --replay FILE [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.evidence_sentences import best_sentences, lexical_scores
from appliance.answer.generated.passages import Window
from appliance.answer.generated.quotes import (
    MAX_QUOTE_WORDS,
    MIN_MATCH,
    flat_line,
    line_specifics,
    missing_from,
    quotable_segments,
)
from appliance.evaluate.runner import QAItem, load_qa
from appliance.index.catalog import Catalog
from appliance.retrieve.search import Searcher
from appliance.text.sentences import split_sentences
from scripts.lib.report import finish

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_perturbations import SETS, indexed_settings
from bench_prompt_fusion import holds_all

REPO = Path(__file__).resolve().parent.parent
RUNS = ("heldout", "demo", "sampled")  # the replay's run keys, named after their golden sets

Design = Callable[[QAItem, str, dict[int, str], list[int], int], list[str]]


@dataclass
class Tally:
    gained: int = 0  # answerable answers that hold every key phrase only with the design's lines
    words: list[int] = field(default_factory=list)  # answer and quotes, per answerable answer
    unanswerable_given: int = 0  # unanswerable questions answered that get a line too


def answer_body(answer: str) -> str:
    return answer.split("\n\nCitations:")[0]


def question_line(embed: Callable[[Sequence[str]], Any], specific_only: bool) -> Design:
    def design(item: QAItem, body: str, sources: dict[int, str], cited: list[int], quotes: int) -> list[str]:
        if not cited or cited[0] not in sources:
            return []
        text = sources[cited[0]]
        found = best_sentences(item.question, text, k=1, embed=embed)
        if not found:
            return []
        start, end, _ = found[0]
        line = flat_line(text[start:end])
        if len(line.split()) > MAX_QUOTE_WORDS:
            return []
        if specific_only and not any(missing_from(s, body) for s in line_specifics(line)):
            return []
        return [line]

    return design


def resting_lines(cap: int) -> Design:
    def design(item: QAItem, body: str, sources: dict[int, str], cited: list[int], quotes: int) -> list[str]:
        sentences = [body[s.start : s.end] for s in split_sentences(body)]
        scored: list[tuple[float, str]] = []
        for n in cited:
            text = sources.get(n)
            if text is None:
                continue
            citing = [s for s in sentences if f"[{n}]" in s] or sentences
            for segment in quotable_segments(text):
                line = flat_line(text[segment.start : segment.end])
                if len(line.split()) > MAX_QUOTE_WORDS or not any(missing_from(s, body) for s in line_specifics(line)):
                    continue
                score = max(lexical_scores(sentence, [line])[0] for sentence in citing)
                if score >= MIN_MATCH:
                    scored.append((score, line))
        return [line for _, line in sorted(scored, reverse=True)[: max(0, cap - quotes)]]

    return design


def source_texts(catalog: Catalog, row: dict[str, Any]) -> dict[int, str]:
    """Each source's text as the model was given it: its window's chunks joined as the prompt joins them."""
    texts: dict[int, str] = {}
    for n, _best, chunk_ids in row["sources"]:
        chunks = catalog.chunks_by_ids(chunk_ids)
        ordered = tuple(sorted((chunks[c] for c in chunk_ids if c in chunks), key=lambda c: c.ord))
        if ordered:
            texts[n] = Window(ordered, ordered[:1]).joined()[0]
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replay", type=Path, required=True, help="Output of scripts/replay_answers.py.")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    replay = json.loads(args.replay.read_text())
    report: dict[str, Any] = {"replay": str(args.replay)}
    for corpus in ("runbooks", "demo"):
        settings, _ = indexed_settings(corpus, args.home, args.models_dir)
        searcher = Searcher(settings)
        embed = searcher.embedder.embed
        designs: dict[str, Design] = {
            "question_line": question_line(embed, specific_only=False),
            "question_line_specific": question_line(embed, specific_only=True),
            "resting_lines_3": resting_lines(3),
            "resting_lines_5": resting_lines(5),
        }
        for run in RUNS:
            if SETS[run][0] != corpus or run not in replay:
                continue
            items = {item.id: item for item in load_qa(SETS[run][1])}
            base_words: list[int] = []
            tallies = {name: Tally() for name in designs}
            answerable = unanswerable = 0
            for row in replay[run]:
                if row["refused"]:
                    continue
                item = items[row["id"]]
                body = answer_body(row["answer"])
                shown = " ".join([body, *(quote[2] for quote in row.get("quotes", []))])
                cited = sorted({citation[0] for citation in row["citations"]})
                sources = source_texts(searcher.catalog, row)
                words = int(row.get("words_with_quotes", 0))
                holds = holds_all(shown, item.answer_keyphrases)
                answerable += item.answerable
                unanswerable += not item.answerable
                if item.answerable:
                    base_words.append(words)
                for name, design in designs.items():
                    extra = [
                        line
                        for line in design(item, body, sources, cited, len(row.get("quotes", [])))
                        if not holds_all(shown, (line,))
                    ]
                    tally = tallies[name]
                    if not item.answerable:
                        tally.unanswerable_given += bool(extra)
                        continue
                    tally.words.append(words + sum(len(line.split()) for line in extra))
                    tally.gained += (not holds) and holds_all(" ".join([shown, *extra]), item.answer_keyphrases)
            entry: dict[str, Any] = {
                "answerable_answers": answerable,
                "unanswerable_answered": unanswerable,
                "median_words_today": statistics.median(base_words) if base_words else None,
            }
            for name, tally in tallies.items():
                entry[name] = {
                    "gain_every_key_phrase": tally.gained,
                    "median_words": statistics.median(tally.words) if tally.words else None,
                    "unanswerable_given_a_line": tally.unanswerable_given,
                }
            report[run] = entry
            print(f"{run}: {entry}", file=sys.stderr, flush=True)
        searcher.close()
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
