"""Measure the gaps report: precision and recall of its "not covered" label, and its time over 100,000 records.

For one question set (scripts/qa/*.jsonl) and the index it was written for, a seeded audit log holds every
question of the set and up to three operator-style rewordings of it (appliance/evaluate/perturb.py: a typo,
a synonym, a lead-in, an alert pasted from a pager), each asked one to three times. Each asking is written
as the server writes an answer's record: refused when the search's evidence model refuses it, with its
evidence confidence otherwise. Operators rate down a fixed share of answers, more of the answers given to
unanswerable questions (wrong answers) than of the others. The report over that log is scored against the
set's own truth: a question marked unanswerable, or a rewording of one, is "not covered"; any other is covered.

  * question-level precision of "not covered": of the distinct wordings the report labels not covered,
    the share that are unanswerable; recall: of the unanswerable wordings in the log, the share labelled
    not covered (one the appliance answered with confidence and nobody rated down is not in the report:
    a miss).
  * topic purity: pairwise precision and recall of "same topic" against "same original question".
  * time: the whole report (read, embed, cluster, search again) over 100,000 records of the same questions.

Homes are copied to a temporary folder first; the originals (/tmp/bench_homes/…) are never written.
`--tune` sweeps reports.cluster_similarity and reports.covered_confidence on a tune set; report the sets
you did not tune on.

  python scripts/bench_gaps.py --tune runbooks_tune:runbooks
  python scripts/bench_gaps.py --sets demo_corpus:demo,runbooks_heldout:runbooks --json scripts/results/bench_gaps.json
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from appliance.audit import writer as audit_writer  # noqa: E402
from appliance.audit.writer import AuditLog  # noqa: E402
from appliance.config import ReportsSettings, Settings, load_settings  # noqa: E402
from appliance.reports.gaps import NOT_COVERED, gaps_report, searcher_probe  # noqa: E402
from appliance.reports.period import parse_period  # noqa: E402
from appliance.retrieve.search import Searcher  # noqa: E402
from scripts.lib.perturb import perturb  # noqa: E402

QA = REPO / "scripts" / "qa"
HOMES = Path("/tmp/bench_homes")
REWORDINGS = ("typo", "synonym", "lead_in", "pager")
NOW = 1_780_000_000.0
DAY = 86400.0


def _fraction(key: str) -> float:
    """A stable number in [0, 1) from a key: every choice of the seeding is repeatable."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 2**32


def questions_of(set_name: str) -> list[dict[str, Any]]:
    """Each question and its rewordings: {text, topic (the original's id), unanswerable}."""
    rows = [json.loads(line) for line in (QA / f"{set_name}.jsonl").read_text().splitlines() if line.strip()]
    items: list[dict[str, Any]] = []
    for row in rows:
        variants = [p.text for p in perturb(row["question"], row["id"]) if p.kind in REWORDINGS][:3]
        for text in [row["question"], *variants]:
            items.append({"text": text, "topic": row["id"], "unanswerable": not row["answerable"]})
    return items


def copy_home(name: str, into: Path) -> Settings:
    home = into / name
    shutil.copytree(HOMES / name, home, symlinks=False, ignore=shutil.ignore_patterns("index.lock"))
    environ = {**os.environ, "APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(REPO / "models")}
    environ.pop("APPLIANCE_CONFIG", None)
    return load_settings(environ)


class Memo:
    """Searches and embeddings once per text: a sweep then costs only the clustering."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.searches: dict[str, Any] = {}
        self.vectors: dict[str, np.ndarray] = {}

    def search(self, text: str) -> Any:
        if text not in self.searches:
            self.searches[text] = self.searcher.search(text, k=1)
        return self.searches[text]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.searcher.embedder.embed(missing), strict=True):
                self.vectors[text] = vector
        return np.stack([self.vectors[text] for text in texts])


def seed_log(settings: Settings, items: list[dict[str, Any]], search: Callable[[str], Any], records: int = 0) -> None:
    """The audit log of the seeded askings; with `records`, that many records cycling over the same askings."""
    clock = [NOW - 6 * DAY]
    log = AuditLog(settings, clock=lambda: clock[0])
    askings = [(item, n) for item in items for n in range(1 + int(_fraction(item["text"]) * 3))]
    total = records or len(askings)
    step = 5 * DAY / total
    with mock.patch.object(audit_writer.os, "fsync", lambda fd: None):  # seeding speed only
        for number, (item, n) in zip(range(total), itertools.cycle(askings), strict=False):
            clock[0] += step
            result = search(item["text"])
            refused = not result.evidence.sufficient
            request_id = f"r{number}"
            log.record(
                endpoint="ask",
                status=200,
                request_id=request_id,
                principal="desk",
                client="127.0.0.1",
                question=item["text"],
                sources=[{"path": hit.path, "chunk_id": hit.chunk_id, "score": hit.score} for hit in result.hits],
                refused=refused,
                extra={
                    "answer_kind": "refusal" if refused else "excerpt",
                    "evidence_confidence": result.evidence.probability,
                },
            )
            # Wrong answers (to unanswerable questions) are rated down more often than the others.
            share = 0.5 if item["unanswerable"] else 0.1
            if not refused and _fraction(f"{item['text']}#{n}#down") < share:
                log.record(
                    endpoint="feedback",
                    status=200,
                    request_id=f"f{number}",
                    principal="desk",
                    client="127.0.0.1",
                    extra={"rated_request_id": request_id, "rating": "down", "reason": "wrong"},
                )


def score(report: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    truth = {item["text"][:80]: item for item in items}  # the audit keeps 80 characters
    labelled: dict[str, str] = {}
    pairs_same = pairs_together = pairs_right = 0
    topic_right = 0
    for topic in report["topics"]:
        texts = topic.get("_questions", topic["examples"])
        for text in texts:
            labelled[text] = topic["label"]
        owners = [truth[text]["topic"] for text in texts if text in truth]
        for a, b in itertools.combinations(owners, 2):
            pairs_together += 1
            pairs_right += a == b
        unanswerable = sum(truth[text]["unanswerable"] for text in texts if text in truth)
        topic_right += (topic["label"] == NOT_COVERED) == (unanswerable * 2 > len(texts))
    by_topic: dict[str, int] = {}
    for text in labelled:
        if text in truth:
            by_topic[truth[text]["topic"]] = by_topic.get(truth[text]["topic"], 0) + 1
    pairs_same = sum(n * (n - 1) // 2 for n in by_topic.values())
    predicted = [text for text, label in labelled.items() if label == NOT_COVERED]
    right = [text for text in predicted if truth[text]["unanswerable"]]
    unanswerable = {item["text"][:80] for item in items if item["unanswerable"]}
    return {
        "wordings_in_log": len(truth),
        "unanswerable_wordings": len(unanswerable),
        "wordings_in_report": len(labelled),
        "topics": len(report["topics"]),
        "not_covered_labelled": len(predicted),
        "precision": round(len(right) / len(predicted), 3) if predicted else None,
        "recall": round(len(right) / len(unanswerable), 3) if unanswerable else None,
        "recall_of_reported": round(len(right) / sum(truth[t]["unanswerable"] for t in labelled), 3)
        if any(truth[t]["unanswerable"] for t in labelled)
        else None,
        "topic_label_accuracy": round(topic_right / len(report["topics"]), 3) if report["topics"] else None,
        "topic_pair_precision": round(pairs_right / pairs_together, 3) if pairs_together else None,
        "topic_pair_recall": round(pairs_right / pairs_same, 3) if pairs_same else None,
    }


def full_report(settings: Settings, config: ReportsSettings, embed: Any, probe: Any) -> dict[str, Any]:
    """The report with every distinct wording of each topic (the bench scores them all, not five examples)."""
    import appliance.reports.gaps as gaps

    with mock.patch.object(gaps, "EXAMPLES", 10**6):
        report = gaps_report(settings.audit_dir, parse_period("7d", now=NOW), config, embed, probe)
    for topic in report["topics"]:
        topic["_questions"] = topic["examples"]
    return report


def run_set(spec: str, base: Path, tune: bool, timed_records: int) -> dict[str, Any]:
    set_name, home_name = spec.split(":")
    items = questions_of(set_name)
    settings = copy_home(home_name, base / set_name)
    searcher = Searcher(settings)
    memo = Memo(searcher)
    seed_log(settings, items, memo.search)
    probe = searcher_probe(memo.search)
    out: dict[str, Any] = {"set": set_name, "home": str(HOMES / home_name), "questions": len(items)}
    if tune:
        sweep = []
        for similarity in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8):
            for covered in (0.3, 0.4, 0.5, 0.6, 0.7):
                config = ReportsSettings(cluster_similarity=similarity, covered_confidence=covered)
                result = score(full_report(settings, config, memo.embed, probe), items)
                sweep.append({"cluster_similarity": similarity, "covered_confidence": covered, **result})
                print(json.dumps(sweep[-1]), flush=True)
        out["sweep"] = sweep
        searcher.close()
        return out
    config = settings.reports
    out["settings"] = config.model_dump()
    out["label"] = score(full_report(settings, config, memo.embed, probe), items)
    print(json.dumps(out["label"]), flush=True)
    if timed_records:
        timed = copy_home(home_name, base / f"{set_name}-timed")
        seed_log(timed, items, memo.search, records=timed_records)
        fresh = Searcher(timed)
        fresh.search("warm up", k=1)  # the model load is not the report's time
        started = time.perf_counter()
        report = gaps_report(
            timed.audit_dir,
            parse_period("7d", now=NOW),
            config,
            fresh.embedder.embed,
            searcher_probe(lambda text: fresh.search(text, k=1)),
        )
        seconds = time.perf_counter() - started
        out["timed"] = {
            "records": timed_records,
            "answers": report["answers"],
            "gap_questions": report["gap_questions"],
            "topics": len(report["topics"]),
            "seconds": round(seconds, 1),
            "audit_bytes": sum(p.stat().st_size for p in timed.audit_dir.glob("audit-*.jsonl")),
        }
        print(json.dumps(out["timed"]), flush=True)
        fresh.close()
    searcher.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="demo_corpus:demo,runbooks_heldout:runbooks", help="SET:HOME,…")
    parser.add_argument("--tune", default="", help="SET:HOME to sweep the two settings on (not reported).")
    parser.add_argument("--records", type=int, default=100_000, help="Records of the timed report (0: none).")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gaps-") as tmp:
        if args.tune:
            result: dict[str, Any] = {"tune": run_set(args.tune, Path(tmp), tune=True, timed_records=0)}
        else:
            result = {
                "sets": [
                    run_set(spec, Path(tmp), tune=False, timed_records=args.records) for spec in args.sets.split(",")
                ]
            }
    result["cpu"] = os.cpu_count()
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
