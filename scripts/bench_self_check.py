"""Does the generator itself tell an answer the sources give from one they do not? Measured on stored answers.

The checks after generation read words: an answer that puts a source's value to another use, or says "yes"
in the question's own words, passes them (issue 16: the unanswerable questions still answered). This script
asks the 1.5B generator one more short turn about each stored answer and reads the probability of "Yes"
against "No" from its next-token logits (a graded signal, no sampling):

- `after`: the answer is in the context; "Do the numbered sources state the answer to my question, for exactly
  what I asked about?" The prompt and the answer are already in the KV cache in a live run, so only the probe's
  ~30 tokens would be new.
- `claims`: the same context; "Is everything in your answer stated in the numbered sources?"
- `before`: no answer; the user turn ends with "Do these sources state the answer to the question?" in place
  of "Answer with citations:", so the sources' tokens are shared with the answer prompt.

Each stored question is replayed with the code this runs under (retrieval, prompt, every rule after
generation: replay_answers.py), so the prompt is the one the answer was written from. The output lists,
per run, each answer's decision, its three probabilities and the golden labels (answerable, every key phrase
held); the summary gives, for thresholds 0.1-0.9, how many unanswerable questions still answered a probe
would decline and how many answerable ones (and correct ones) it would refuse.

Usage: python scripts/bench_self_check.py --results FILE --runs KEYS --out FILE [--home DIR] [--models-dir DIR]
                                          [--probes after,claims,before,rest,best] [--stood-only]
       python scripts/bench_self_check.py --summarize OUT1 OUT2... --out scripts/results/self_check.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import replay_answers as replay

from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.generated import quotes
from appliance.answer.generated.citations import parse_citations
from appliance.models.generation import ChatMessage
from appliance.models.generation.local import hold_prefix

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.lib.separation import auc

PROBES = {
    "after": "Do the numbered sources state the answer to my question, for exactly what I asked about? "
    "Reply with Yes or No.",
    "claims": "Is everything in your answer stated in the numbered sources? Reply with Yes or No.",
}
BEFORE_TAIL = "Do these sources state the answer to the question? Reply with Yes or No."
ANSWER_TAIL = "Answer with citations:"
# Short prompts on a fresh context: a few source lines and the question, nothing else to read.
LINES_SYSTEM = "You check whether a passage answers a question. Reply with Yes or No."
LINES_USER = (
    "Passage:\n{lines}\n\nQuestion: {question}\nDoes the passage answer this exact question? Reply with Yes or No."
)
MAX_LINES = 3
THRESHOLDS = [round(0.1 * i, 1) for i in range(1, 10)]


class CapturingGenerator(replay.ReplayGenerator):
    """The stored text as the answer, and the messages the answerer built for it."""

    messages: list[ChatMessage] | None = None

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> replay.StoredText:
        self.messages = list(messages)
        return super().stream(messages, max_tokens=max_tokens)


class YesNo:
    """P(Yes) / (P(Yes) + P(No)) of the model's next token, keeping the KV cache's shared prefix."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator
        self.llm = generator._llm
        self.yes = self._first_token("Yes")
        self.no = self._first_token("No")

    def _first_token(self, word: str) -> int:
        return int(self.llm.tokenize(word.encode(), add_bos=False, special=False)[0])

    def __call__(self, messages: list[ChatMessage]) -> dict[str, float]:
        tokens = self.generator._prompt_token_ids(messages)
        held = self.llm.input_ids[: self.llm.n_tokens].tolist()
        keep = 0
        for ours, theirs in zip(tokens, held, strict=False):
            if ours != theirs:
                break
            keep += 1
        keep = min(keep, len(tokens) - 1)
        start = time.perf_counter()
        hold_prefix(self.llm, tokens[:keep])
        self.llm.eval(tokens[keep:])
        # Without logits_all llama-cpp-python keeps no scores: read the last token's logits from the context.
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),)).astype(np.float64)
        weights = np.exp(logits - logits.max())
        p_yes = float(weights[self.yes] / weights.sum())
        p_no = float(weights[self.no] / weights.sum())
        return {
            "p": p_yes / (p_yes + p_no) if p_yes + p_no > 0 else 0.5,
            "mass": p_yes + p_no,
            "new_tokens": len(tokens) - keep,
            "ms": (time.perf_counter() - start) * 1000.0,
        }


def probe_all(messages: list[ChatMessage], answer: str, ask: YesNo, wanted: set[str]) -> dict[str, dict[str, float]]:
    out = {}
    for name, probe in PROBES.items():
        if name in wanted:
            out[name] = ask([*messages, ChatMessage("assistant", answer), ChatMessage("user", probe)])
    user = messages[-1].content
    if "before" in wanted and user.endswith(ANSWER_TAIL):
        before = [*messages[:-1], ChatMessage("user", user[: -len(ANSWER_TAIL)] + BEFORE_TAIL)]
        out["before"] = ask(before)
    return out


def resting_lines(answer: str, sources: dict[int, str]) -> list[str]:
    """The source lines the answer's cited sentences rest on (quotes.py's choice), first MAX_LINES distinct."""
    report = parse_citations(answer, max(sources, default=0))
    lines: list[str] = []
    for sentence in report.sentences:
        if sentence.kind == "heading" or len(sentence.cited) != 1:
            continue
        n = next(iter(sentence.cited))
        if n not in sources:
            continue
        segments = quotes.quotable_segments(sources[n])
        index = quotes.resting_line(sentence.text, sources[n], segments)
        if index is None:
            continue
        line = " ".join(sources[n][segments[index].start : segments[index].end].split())
        if line not in lines:
            lines.append(line)
        if len(lines) == MAX_LINES:
            break
    return lines


def best_lines(question: str, answer: str, sources: dict[int, str]) -> list[str]:
    """The lines of the sources the answer cites that best match the question (evidence_sentences.py)."""
    cited = parse_citations(answer, max(sources, default=0)).cited or sorted(sources)
    scored = []
    for n in cited:
        if n in sources:
            for start, end, score in best_sentences(question, sources[n], k=2):
                scored.append((score, " ".join(sources[n][start:end].split())))
    scored.sort(key=lambda pair: -pair[0])
    return list(dict.fromkeys(line for _, line in scored))[:MAX_LINES]


def probe_lines(question: str, lines: list[str], ask: YesNo) -> dict[str, float] | None:
    if not lines:
        return None
    user = LINES_USER.format(lines="\n".join(lines), question=question.strip())
    return ask([ChatMessage("system", LINES_SYSTEM), ChatMessage("user", user)])


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per probe and threshold: what refusing the answers that stood below it would decline and cost."""
    stood = [r for r in rows if not r["refused"] and r.get("probes")]
    unanswerable = [r for r in stood if not r["answerable"]]
    answerable = [r for r in stood if r["answerable"]]
    correct = [r for r in answerable if r["hit_with_quotes"]]
    out: dict[str, Any] = {
        "stood": len(stood),
        "unanswerable_stood": len(unanswerable),
        "answerable_stood": len(answerable),
        "correct_stood": len(correct),
    }
    for name in [*PROBES, "before", "rest", "best"]:
        table = {}
        for t in THRESHOLDS:

            def below(rs: list[dict[str, Any]], t: float = t, name: str = name) -> int:
                return sum(r["probes"].get(name, {"p": 1.0})["p"] < t for r in rs)

            table[str(t)] = {
                "unanswerable_declined": below(unanswerable),
                "answerable_refused": below(answerable),
                "correct_refused": below(correct),
            }
        out[name] = table
    return out


def separation(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per probe, over the answers that stood: AUC of unanswerable below answerable, and the lowest scores."""
    stood = [r for r in rows if not r["refused"] and r.get("probes")]
    out = {}
    for name in sorted({n for r in stood for n in r["probes"]}):
        unanswerable = sorted(r["probes"][name]["p"] for r in stood if not r["answerable"] and name in r["probes"])
        answerable = sorted(r["probes"][name]["p"] for r in stood if r["answerable"] and name in r["probes"])
        correct = sorted(
            r["probes"][name]["p"] for r in stood if r["answerable"] and r["hit_with_quotes"] and name in r["probes"]
        )
        out[name] = {
            "auc_unanswerable_below_answerable": auc(unanswerable, answerable),
            "unanswerable": [round(p, 3) for p in unanswerable],
            "answerable_lowest_5": [round(p, 3) for p in answerable[:5]],
            "correct_lowest_5": [round(p, 3) for p in correct[:5]],
            "answerable_median": round(answerable[len(answerable) // 2], 3) if answerable else None,
        }
    return out


def published(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ids, labels, decisions and probabilities only: no runbook text goes into the repository."""
    keep = ("id", "answerable", "refused", "grounded", "hit", "hit_with_quotes")
    return [
        {
            **{k: r.get(k) for k in keep},
            "probes": {name: round(v["p"], 4) for name, v in r.get("probes", {}).items()},
            "probe_tokens": {name: v["new_tokens"] for name, v in r.get("probes", {}).items()},
        }
        for r in rows
    ]


def summarize(paths: list[Path], out: Path) -> None:
    """One results file from several runs of this script (their probes of one answer joined; the first file's
    row otherwise): per run, separation, thresholds and the rows."""
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        for run, rows in json.loads(path.read_text()).items():
            if run.endswith("_summary"):
                continue
            by_id = runs.setdefault(run, {})
            for row in rows:
                first = by_id.setdefault(row["id"], {**row, "probes": {}})
                first["probes"] = {**row.get("probes", {}), **first["probes"]}
    merged = {}
    for run, by_id in runs.items():
        rows = list(by_id.values())
        merged[run] = {"separation": separation(rows), "thresholds": summary(rows), "rows": published(rows)}
    out.write_text(json.dumps(merged, indent=1, ensure_ascii=False))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path)
    parser.add_argument("--runs", help="Keys of --results whose rows to probe.")
    parser.add_argument("--home", type=Path, default=replay.REPO / ".appliance" / "self_check")
    parser.add_argument("--models-dir", type=Path, default=replay.REPO / "models")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--probes", default="after,claims,before,rest,best", help="Which probes to ask.")
    parser.add_argument("--stood-only", action="store_true", help="Probe only the answers the rules let stand.")
    parser.add_argument("--fusion", choices=["rrf", "weighted", "zscore"], help="As replay_answers.py --fusion.")
    parser.add_argument("--summarize", type=Path, nargs="+", help="Merge earlier --out files into --out instead.")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize, args.out)
        return 0
    if args.results is None or args.runs is None:
        parser.error("--results and --runs are required unless --summarize")
    stored = json.loads(args.results.read_text())
    items = replay.golden()
    wanted = set(args.probes.split(","))
    out: dict[str, Any] = {}
    for run in args.runs.split(","):
        name = "demo" if run.startswith("demo") else "runbooks"
        with replay.answerer_for(name, args.home, args.models_dir, args.fusion, CapturingGenerator) as (
            answerer,
            generator,
        ):
            assert isinstance(generator, CapturingGenerator)
            ask = YesNo(generator.real)
            rows = []
            for row in stored[run]["rows"]:
                generator.text, generator.completion_tokens = row.get("generated"), row.get("completion_tokens")
                generator.asked, generator.messages = False, None
                result = answerer.ask(row["question"])
                decided: dict[str, Any] = {"id": row["id"], **replay.decisions(result)}
                del decided["prompt"], decided["sources"], decided["citations"]
                if row["id"] in items:
                    context = "\n".join(e.text for e in result.evidence if e.n is not None)
                    decided.update(replay.scored(decided, items[row["id"]], context))
                if generator.messages is not None and row.get("generated") and not (args.stood_only and result.refused):
                    probes: dict[str, Any] = {}
                    probes.update(probe_all(generator.messages, row["generated"], ask, wanted))
                    sources = {e.n: e.text for e in result.evidence if e.n is not None}
                    for kind, lines in (
                        ("rest", resting_lines(row["generated"], sources)),
                        ("best", best_lines(row["question"], row["generated"], sources)),
                    ):
                        if kind in wanted and (found := probe_lines(row["question"], lines, ask)) is not None:
                            probes[kind] = {**found, "lines": lines}
                    decided["probes"] = probes
                rows.append(decided)
                line = {k: round(v["p"], 3) for k, v in decided.get("probes", {}).items()}
                print(run, row["id"], decided.get("answerable"), decided["refused"], line, file=sys.stderr, flush=True)
                out[run] = rows
                args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False))
            out[f"{run}_summary"] = summary(rows)
            print(json.dumps({run: out[f"{run}_summary"]}, indent=1), file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
