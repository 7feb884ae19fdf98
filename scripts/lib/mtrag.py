"""MTRAG-UN (IBM's multi-turn RAG benchmark, human tasks): follow-up retrieval and the evidence decision.

Each task is a conversation so far (user and agent turns; the last is the question), its gold passages
and a human answerability label (ANSWERABLE, PARTIAL, UNANSWERABLE, UNDERSPECIFIED). The collections'
full corpora are not available here, so the pool of every task's gold passages of one collection is
indexed as the documents (one text file per passage, in a temporary folder: the data is read from
../shared and never copied into the project), and each task is searched with:

    none      the last turn alone (the baseline)
    concat    the earlier user question, then the last, always
    evidence  concat when the evidence decision prefers it to the last turn alone (the former rule, kept to
              compare: `evidence_preferred`)
    rule      concat when the fitted decision (answer/followup_model.py) judges that the last turn needs the
              conversation, else the last turn as asked: the default
    rule2     the same with two earlier questions
    model     the local model's standalone rewrite, for the follow-ups the fitted decision reads with the
              conversation
    both      the model's rewrite, the rule's text when it fails its checks (same follow-ups)

Reported: the gold passage's recall@5 (and hit@5) on the multi-turn tasks that have gold passages, the
evidence decision's refusal rate per answerability label, on first-turn tasks and on all tasks, and how
often each method reads a follow-up with the conversation per the annotators' Multi-Turn label (N/A: a
turn the annotators did not mark as a follow-up or a clarification, often a new topic).
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.answer.followup import (
    Turn,
    acceptable_rewrite,
    clean_model_rewrite,
    earlier_questions,
    rewrite_messages,
    rule_rewrite,
)
from appliance.answer.followup_model import FollowupModel, Reader, signals
from appliance.errors import ApplianceError
from appliance.retrieve.search import Searcher

COLLECTIONS = ("ibmcloud", "clapnq")
LABELS = ("ANSWERABLE", "PARTIAL", "UNDERSPECIFIED", "UNANSWERABLE")
RECALL_K = 5
# Hits searched per query: enough chunks to rank RECALL_K distinct passages (a passage has 1-3 chunks).
SEARCH_K = 40
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class MtragTask:
    task_id: str
    collection: str
    turn: int
    answerability: str
    history: tuple[Turn, ...]
    question: str
    gold: tuple[str, ...]  # document ids of the gold passages
    multi_turn_type: str = ""  # the annotators' Multi-Turn label: Follow-up, Clarification or N/A

    @property
    def multi_turn(self) -> bool:
        return bool(self.history)


def _first(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value or "")


def load_tasks(path: Path, collection: str | None = None) -> tuple[list[MtragTask], dict[str, str]]:
    """(tasks, passage text by document id) of one collection (or all), from MTRAG-UN's reference.jsonl."""
    tasks: list[MtragTask] = []
    passages: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                name = str(row["Collection"])
                if collection is not None and name != collection:
                    continue
                turns = [(str(t["speaker"]), str(t["text"])) for t in row["input"]]
                contexts = [(str(c["document_id"]), str(c["text"])) for c in row.get("contexts") or []]
                task = MtragTask(
                    task_id=str(row["task_id"]),
                    collection=name,
                    turn=int(row.get("turn") or 1),
                    answerability=_first(row.get("answerability")).upper(),
                    history=tuple(Turn("user" if s == "user" else "assistant", t) for s, t in turns[:-1]),
                    question=turns[-1][1],
                    gold=tuple(dict.fromkeys(doc_id for doc_id, _ in contexts)),
                    multi_turn_type=_first(row.get("Multi-Turn")),
                )
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise ApplianceError(f"{path}:{number}: not an MTRAG-UN task ({type(exc).__name__}: {exc})") from None
            tasks.append(task)
            for doc_id, text in contexts:
                passages.setdefault(doc_id, text)
    if not tasks:
        raise ApplianceError(f"{path}: no task of collection {collection!r}")
    return tasks, passages


def passage_file_name(document_id: str) -> str:
    """A file name for a passage (ids hold '-' and digits; anything else is replaced, the hash keeps it unique)."""
    safe = _UNSAFE.sub("_", document_id)[:120]
    return f"{safe}-{hashlib.sha256(document_id.encode()).hexdigest()[:8]}.txt"


def write_passages(passages: dict[str, str], folder: Path) -> dict[str, str]:
    """Write each passage as a text file under `folder` (a temporary one); return display path → document id."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for doc_id, text in passages.items():
        name = passage_file_name(doc_id)
        (folder / name).write_text(text.strip() + "\n", encoding="utf-8")
        paths[f"{folder.name}/{name}"] = doc_id
    return paths


# --- rewrites ------------------------------------------------------------------------------------

Complete = Callable[[list[Any]], tuple[str, float, int]]  # messages → (text, ms, completion tokens)
# The evidence decision on a text: (sufficient, probability).
Judge = Callable[[str], tuple[bool, float]]


def evidence_preferred(question: str, joined: str, judge: Judge) -> str:
    """The former rule: the joined text, unless the last question alone has evidence and at least as much as
    the joined text (it glued questions that stand alone whenever the earlier one lent them evidence)."""
    if joined == question:
        return question
    alone_ok, alone_p = judge(question)
    joined_ok, joined_p = judge(joined)
    return question if alone_ok and (not joined_ok or alone_p >= joined_p) else joined


class RewriteCache:
    """Model rewrites by a hash of (model, prompt): a rerun (another evidence decision, issue 16) costs no
    generation. Kept outside the project (it holds text derived from the data)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path is not None and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self.entries[entry["key"]] = entry

    @staticmethod
    def key(model: str, messages: Sequence[Any]) -> str:
        blob = json.dumps([model, [(m.role, m.content) for m in messages]], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, text: str, ms: float, tokens: int) -> None:
        entry = {"key": key, "text": text, "ms": round(ms, 1), "tokens": tokens}
        self.entries[key] = entry
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")


@dataclass
class Rewrites:
    """Per task id, the text searched by each method, and what the model rewrites cost."""

    queries: dict[str, dict[str, str]] = field(default_factory=dict)
    model_ms: list[float] = field(default_factory=list)  # per follow-up, generated now (not from the cache)
    model_tokens: list[int] = field(default_factory=list)
    cached: int = 0
    fallbacks: int = 0  # "both": rewrites refused by the checks
    needs: dict[str, bool] = field(default_factory=dict)  # the fitted decision: read with the conversation


def _needs(question: str, previous: str, joined: str, reader: Reader | None, decision: FollowupModel | None) -> bool:
    if joined == question:
        return False
    if reader is None or decision is None:
        return True
    return decision.needs_conversation(signals(question, previous, joined, reader))


def make_rewrites(
    tasks: Iterable[MtragTask],
    *,
    max_turns: int,
    system: str,
    model: str | None = None,
    complete: Complete | None = None,
    cache: RewriteCache | None = None,
    progress: Callable[[int, int], None] | None = None,
    known: Callable[[str], bool] | None = None,
    judge: Judge | None = None,
    reader: Reader | None = None,
    decision: FollowupModel | None = None,
    model_limit: int | None = None,
) -> Rewrites:
    """The query of every method for every task; without `complete` no model and both. `judge` makes the
    former rule (evidence), `reader` and `decision` the fitted one (rule, rule2, and which follow-ups the
    model rewrites); without them each is concat."""
    result = Rewrites()
    task_list = list(tasks)
    for position, task in enumerate(task_list):
        joined = rule_rewrite(task.question, task.history, max_turns, known)
        queries = {"none": task.question, "concat": joined}
        queries["evidence"] = evidence_preferred(task.question, joined, judge) if judge is not None else joined
        earlier = earlier_questions(task.history, max_turns, known)
        needs = _needs(task.question, earlier[-1] if earlier else "", joined, reader, decision)
        queries["rule"] = joined if needs else task.question
        joined2 = rule_rewrite(task.question, task.history, max_turns + 1, known)
        needs2 = _needs(task.question, earlier[-1] if earlier else "", joined2, reader, decision)
        queries["rule2"] = joined2 if needs2 else task.question
        result.needs[task.task_id] = needs
        within = model_limit is None or sum(1 for t in task_list[:position] if t.history) < model_limit
        if complete is not None and task.history and not needs:
            queries["model"] = queries["both"] = task.question
        elif complete is not None and task.history and within:
            messages = rewrite_messages(task.question, task.history, max_turns, system)
            key = RewriteCache.key(model or "", messages)
            entry = cache.get(key) if cache is not None else None
            if entry is None:
                text, ms, tokens = complete(messages)
                result.model_ms.append(ms)
                result.model_tokens.append(tokens)
                if cache is not None:
                    cache.put(key, text, ms, tokens)
            else:
                text = str(entry["text"])
                result.cached += 1
            rewrite = clean_model_rewrite(text)
            queries["model"] = rewrite or task.question
            ok = acceptable_rewrite(rewrite, task.question)
            result.fallbacks += 0 if ok else 1
            queries["both"] = rewrite if ok else queries["rule"]
        elif complete is not None and not task.history:
            queries["model"] = queries["both"] = task.question
        result.queries[task.task_id] = queries
        if progress is not None:
            progress(position + 1, len(task_list))
    return result


# --- measuring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    task_id: str
    method: str
    recall: float | None  # share of the gold passages in the top RECALL_K (None: no gold passage)
    hit: bool | None
    refused: bool


def measure(searcher: Searcher, tasks: Sequence[MtragTask], rewrites: Rewrites, paths: dict[str, str]) -> list[Outcome]:
    """Search every task with every method's query: the passages ranked (distinct, best first) and the
    evidence decision of that same search."""
    outcomes: list[Outcome] = []
    searched: dict[str, Any] = {}  # methods often agree on the text: search each text once
    for task in tasks:
        for method, query in rewrites.queries[task.task_id].items():
            found = searched.get(query)
            if found is None:
                found = searched[query] = searcher.search(query, k=SEARCH_K)
            ranked: list[str] = []
            for hit in found.hits:
                doc_id = paths.get(hit.path)
                if doc_id is not None and doc_id not in ranked:
                    ranked.append(doc_id)
            top = set(ranked[:RECALL_K])
            gold = set(task.gold)
            recall = len(gold & top) / len(gold) if gold else None
            any_gold = None if not gold else bool(gold & top)
            outcomes.append(Outcome(task.task_id, method, recall, any_gold, not found.evidence.sufficient))
    return outcomes


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def read_with_conversation(tasks: Sequence[MtragTask], rewrites: Rewrites) -> dict[str, Any]:
    """Per method and annotators' Multi-Turn label: the follow-ups searched with the conversation, "n/total"."""
    kinds = sorted({task.multi_turn_type for task in tasks if task.multi_turn})
    methods = [m for m in ("concat", "evidence", "rule", "rule2") if any(m in q for q in rewrites.queries.values())]
    table: dict[str, Any] = {}
    for method in methods:
        table[method] = {}
        for kind in kinds:
            chosen = [t for t in tasks if t.multi_turn and t.multi_turn_type == kind]
            read = sum(1 for t in chosen if rewrites.queries[t.task_id][method] != t.question)
            table[method][kind] = f"{read}/{len(chosen)}"
    return table


def summarize(tasks: Sequence[MtragTask], outcomes: Sequence[Outcome], rewrites: Rewrites) -> dict[str, Any]:
    """Recall on multi-turn tasks with gold passages, refusal rates per label (first turns; all tasks)."""
    by_task = {task.task_id: task for task in tasks}
    methods = list(dict.fromkeys(o.method for o in outcomes))
    retrieval: dict[str, Any] = {}
    refusals: dict[str, Any] = {}
    for method in methods:
        mine = [o for o in outcomes if o.method == method]
        follow = [o for o in mine if by_task[o.task_id].multi_turn and o.recall is not None]
        same = {o.task_id for o in follow}
        baseline = [o for o in outcomes if o.method == "none" and o.task_id in same and o.recall is not None]
        retrieval[method] = {
            "tasks": len(follow),
            f"recall@{RECALL_K}": _mean([o.recall for o in follow if o.recall is not None]),
            f"hit@{RECALL_K}": _mean([1.0 if o.hit else 0.0 for o in follow]),
            # The last turn alone on exactly these tasks (model rewrites may cover a subset).
            f"none_recall@{RECALL_K}": _mean([o.recall for o in baseline if o.recall is not None]),
        }
        refusals[method] = {}
        for scope, keep in (("first_turn", lambda t: not t.multi_turn), ("multi_turn", lambda t: t.multi_turn),
                            ("all", lambda t: True)):  # fmt: skip
            rows = {}
            for label in LABELS:
                chosen = [o for o in mine if by_task[o.task_id].answerability == label and keep(by_task[o.task_id])]
                rows[label] = {"tasks": len(chosen), "refused": _mean([1.0 if o.refused else 0.0 for o in chosen])}
            refusals[method][scope] = rows
    cost: dict[str, Any] = {"generated": len(rewrites.model_ms), "cached": rewrites.cached}
    if rewrites.model_ms:
        cost.update(
            {
                "ms_mean": round(statistics.fmean(rewrites.model_ms), 1),
                "ms_median": round(statistics.median(rewrites.model_ms), 1),
                "ms_p90": round(sorted(rewrites.model_ms)[int(0.9 * (len(rewrites.model_ms) - 1))], 1),
                "completion_tokens_mean": round(statistics.fmean(rewrites.model_tokens), 1),
            }
        )
    follow_ups = sum(1 for task in tasks if task.multi_turn)
    cost["both_fallbacks"] = rewrites.fallbacks
    cost["both_fallback_rate"] = round(rewrites.fallbacks / follow_ups, 4) if follow_ups and "both" in methods else None
    return {
        "tasks": len(tasks),
        "multi_turn": follow_ups,
        "labels": {label: sum(1 for t in tasks if t.answerability == label) for label in LABELS},
        "retrieval_multi_turn": retrieval,
        "refusal_rate": refusals,
        "read_with_conversation": read_with_conversation(tasks, rewrites),
        "model_rewrite_cost": cost,
    }
