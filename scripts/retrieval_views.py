"""Retrieval test collections for scripts/bench_fusion.py: queries and judgments, and the index to run them on.

* SciFact (../shared/data/scifact, BEIR format): the train judgments, on which the fusion weight was fitted.
* The runbook golden sets (scripts/qa/*.jsonl): each answerable question's gold files are its relevant
  documents (grade 1), over the real index of ../shared/data/runbooks (the Markdown loaders, not a flat
  BEIR corpus), and the demo set over docs_corpus/.
* MTRAG-UN (../shared/data/mtrag-un/tasks.jsonl): per collection (ibmcloud, clapnq) the pool of every
  task's gold passages is the corpus, written as a BEIR folder in a temporary directory (never in the
  repository); the queries are the last user turn of each ANSWERABLE or PARTIAL task, its gold passages
  the relevant documents. `first` judgments keep the first-turn tasks only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from appliance.evaluate.beir import load_qrels, load_queries
from appliance.evaluate.runner import load_qa

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
MTRAG_TASKS = SHARED / "mtrag-un" / "tasks.jsonl"


@dataclass(frozen=True)
class Judged:
    """Queries and their relevant documents (ids as the index names them: paths or BEIR ids)."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def qa_judged(name: str, path: Path) -> Judged:
    items = [item for item in load_qa(path) if item.answerable]
    return Judged(
        name,
        {item.id: item.question for item in items},
        {item.id: dict.fromkeys(item.gold_files, 1) for item in items},
    )


def beir_judged(name: str, folder: Path, split: str) -> Judged:
    qrels = load_qrels(folder, split)
    queries = load_queries(folder)
    return Judged(name, {qid: queries[qid] for qid in qrels}, qrels)


def write_mtrag_view(collection: str, out: Path) -> Path:
    """A BEIR folder for one MTRAG-UN collection: the pooled gold passages, last-turn queries, qrels."""
    tasks = [json.loads(line) for line in MTRAG_TASKS.read_text(encoding="utf-8").splitlines() if line.strip()]
    tasks = [t for t in tasks if t["Collection"] == collection]
    passages: dict[str, str] = {}
    for task in tasks:
        for context in task["contexts"]:
            passages.setdefault(context["document_id"], context["text"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for doc_id, text in sorted(passages.items()):
            corpus.write(json.dumps({"_id": doc_id, "title": "", "text": text}) + "\n")
    judged = [t for t in tasks if t["contexts"] and set(t["answerability"]) & {"ANSWERABLE", "PARTIAL"} and t["input"]]
    with (out / "queries.jsonl").open("w", encoding="utf-8") as queries:
        for task in judged:
            last = [turn for turn in task["input"] if turn["speaker"] == "user"][-1]
            queries.write(json.dumps({"_id": task["task_id"], "text": last["text"]}) + "\n")
    for split, keep in (("test", judged), ("first", [t for t in judged if str(t["turn"]) == "1"])):
        lines = ["query-id\tcorpus-id\tscore"]
        lines += [f"{t['task_id']}\t{c['document_id']}\t1" for t in keep for c in t["contexts"]]
        (out / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
