"""Validate golden question sets (JSON Lines) against the runbooks folder.

Checks, per entry:
  * JSON shape: exactly the fields id, question, gold_files, answer_keyphrases, answerable, kind,
    with the right types;
  * ids are unique (across every file given, so the tune and held-out sets cannot collide), and
    no question text appears twice;
  * answerable entries: kind is "identifier" or "paraphrase", 1-3 gold files that exist under the
    runbooks folder, 1-4 keyphrases, and every keyphrase occurs in the FIRST gold file
    (case-insensitive substring match after collapsing whitespace);
  * unanswerable entries: kind is "out-of-corpus" or "near-miss", and both lists are empty.

For out-of-corpus entries it also prints, as a warning for human review, the distinctive words of
the question that DO occur somewhere in the corpus (the distinctive term of an out-of-corpus
question should occur nowhere). Warnings never fail the run; errors exit 1.

Usage: python scripts/qa/check_qa.py FILE.jsonl [FILE.jsonl ...] [--runbooks DIR] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"

FIELDS = ("id", "question", "gold_files", "answer_keyphrases", "answerable", "kind")
ANSWERABLE_KINDS = ("identifier", "paraphrase")
UNANSWERABLE_KINDS = ("out-of-corpus", "near-miss")
ID_RE = re.compile(r"^[a-z]+-[0-9]{3}$")

# Words a question may share with the corpus without that meaning anything: question words and
# the generic vocabulary of operations. Only used to decide what counts as "distinctive".
_STOPWORDS_TEXT = """
    a about after again all also am an and any are as at be been before being but by can cannot
    could did do does doing done down during each even every for from get gets getting got had
    has have having here how i if in into is it its just keep keeps kept know last like look me
    more most much must my need needs new no not now of off ok on once one only or other our out
    over please really right same see should show shows so some still stop stuck such than that
    the their them then there these they this those through to too try up us use used using very
    want was way we were what whats when where which while who why will with without would you
    your isn didn doesn don won aren wasn haven shouldn couldn can't won't
    anything something nothing everything someone already instead since until
    alert alerts alerting firing fired fire fires page paged paging error errors failing failed
    fails fail broken issue issues problem problems check checks fix fixed restart restarts
    running run runs start started stopped status ready pending node nodes pod pods cluster
    clusters service services server servers host hosts instance instances namespace namespaces
    prod production staging config configuration settings setting logs log debug value values
    default exact exactly command commands steps step procedure runbook runbooks doc docs
    minutes minute hours hour days day seconds second time times number many high low full
    usage limit limits rate rates threshold thresholds size disk memory cpu network storage
    version versions upgrade upgraded team support data queue queues job jobs on-call
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
# A word is "distinctive" if it is not a stopword and either looks like a name or an identifier in
# the question (has a capital letter, a digit, "_", "-" or ".", or is in `backticks`), or is rare
# in the corpus (occurs in at most RARE_FILES files). Only distinctive words that occur at all are
# reported.
RARE_FILES = 3
WORD_RE = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
NAME_LIKE_RE = re.compile(r"[A-Z0-9_.\-]")


def normalise(text: str) -> str:
    """Lowercase and collapse every run of whitespace to one space."""
    return " ".join(text.lower().split())


@dataclass
class Corpus:
    root: Path
    texts: dict[str, str] = field(default_factory=dict)  # relative path -> normalised text
    words: dict[str, set[str]] = field(default_factory=dict)  # relative path -> word set

    @classmethod
    def load(cls, root: Path) -> Corpus:
        corpus = cls(root)
        for path in sorted(root.rglob("*.md")):
            rel = path.relative_to(root).as_posix()
            text = normalise(path.read_text(encoding="utf-8", errors="replace"))
            corpus.texts[rel] = text
            corpus.words[rel] = set(WORD_RE.findall(text))
        return corpus

    def files_with_word(self, word: str) -> list[str]:
        return [rel for rel, words in self.words.items() if word in words]

    def files_with_substring(self, needle: str) -> list[str]:
        return [rel for rel, text in self.texts.items() if needle in text]


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"ERROR {where}: {message}")

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"WARN  {where}: {message}")


def question_words(question: str) -> list[tuple[str, bool]]:
    """Distinct lowercased words of a question, each with whether it looks like a name/identifier.

    Words of identifiers written in `backticks` count as name-like, as does the whole identifier.
    """
    seen: dict[str, bool] = {}
    for token in TOKEN_RE.findall(question):
        word = token.lower().strip(".-_")
        if word:
            seen[word] = seen.get(word, False) or bool(NAME_LIKE_RE.search(token))
    for ident in re.findall(r"`([^`]+)`", question):
        seen[normalise(ident)] = True
        for token in TOKEN_RE.findall(ident):
            seen[token.lower()] = True
    return list(seen.items())


def distinctive_hits(question: str, corpus: Corpus) -> list[tuple[str, int]]:
    """Distinctive words of the question that occur in the corpus, with their file counts."""
    hits = []
    for word, name_like in question_words(question):
        if word in STOPWORDS or len(word) < 2 or re.fullmatch(r"[0-9.]+", word):
            continue
        files = corpus.files_with_word(word) if WORD_RE.fullmatch(word) else []
        if not files and (not WORD_RE.fullmatch(word) or name_like):
            files = corpus.files_with_substring(word) if len(word) >= 4 else []
        if files and (name_like or len(files) <= RARE_FILES):
            hits.append((word, len(files)))
    return hits


def check_entry(entry: Any, where: str, corpus: Corpus, report: Report) -> None:
    if not isinstance(entry, dict):
        report.error(where, "line is not a JSON object")
        return
    missing = [f for f in FIELDS if f not in entry]
    extra = sorted(set(entry) - set(FIELDS))
    if missing:
        report.error(where, f"missing fields {missing}")
        return
    if extra:
        report.error(where, f"unexpected fields {extra}")
    qid, question, gold, phrases = entry["id"], entry["question"], entry["gold_files"], entry["answer_keyphrases"]
    answerable, kind = entry["answerable"], entry["kind"]
    if not isinstance(qid, str) or not ID_RE.match(qid):
        report.error(where, f"id {qid!r} is not like 'rb-001'")
    if not isinstance(question, str) or not question.strip():
        report.error(where, "question must be a non-empty string")
    if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
        report.error(where, "gold_files must be a list of strings")
        return
    if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
        report.error(where, "answer_keyphrases must be a list of non-empty strings")
        return
    if not isinstance(answerable, bool):
        report.error(where, "answerable must be true or false")
        return

    if not answerable:
        if kind not in UNANSWERABLE_KINDS:
            report.error(where, f"unanswerable entry has kind {kind!r}, expected one of {UNANSWERABLE_KINDS}")
        if gold or phrases:
            report.error(where, "unanswerable entry must have empty gold_files and answer_keyphrases")
        if kind == "out-of-corpus" and isinstance(question, str):
            hits = distinctive_hits(question, corpus)
            if hits:
                found = ", ".join(f"{w!r} ({n} files)" for w, n in hits)
                report.warn(where, f"out-of-corpus question has words that occur in the corpus: {found}")
        return

    if kind not in ANSWERABLE_KINDS:
        report.error(where, f"answerable entry has kind {kind!r}, expected one of {ANSWERABLE_KINDS}")
    if not 1 <= len(gold) <= 3:
        report.error(where, f"answerable entry needs 1-3 gold files, has {len(gold)}")
    if len(set(gold)) != len(gold):
        report.error(where, "gold_files has duplicates")
    if not 1 <= len(phrases) <= 4:
        report.error(where, f"answerable entry needs 1-4 keyphrases, has {len(phrases)}")
    for rel in gold:
        if rel.startswith("/") or ".." in Path(rel).parts:
            report.error(where, f"gold file {rel!r} must be relative to the runbooks folder")
        elif rel not in corpus.texts:
            report.error(where, f"gold file {rel!r} does not exist under {corpus.root}")
    if gold and gold[0] in corpus.texts:
        first = corpus.texts[gold[0]]
        for phrase in phrases:
            if normalise(phrase) not in first:
                report.error(where, f"keyphrase {phrase!r} not found in first gold file {gold[0]}")
            elif len(phrase.split()) > 6:
                report.warn(where, f"keyphrase {phrase!r} is longer than 6 words")


def summarise(name: str, entries: list[dict[str, Any]]) -> str:
    answerable = [e for e in entries if e.get("answerable") is True]
    unanswerable = [e for e in entries if e.get("answerable") is False]
    by_kind_a = Counter(str(e.get("kind")) for e in answerable)
    by_kind_u = Counter(str(e.get("kind")) for e in unanswerable)
    by_folder = Counter(str(e["gold_files"][0]).split("/", 1)[0] for e in answerable if e.get("gold_files"))
    lines = [
        f"{name}: {len(entries)} entries",
        f"  answerable   {len(answerable):3d}  " + "  ".join(f"{k}={v}" for k, v in sorted(by_kind_a.items())),
        f"  unanswerable {len(unanswerable):3d}  " + "  ".join(f"{k}={v}" for k, v in sorted(by_kind_u.items())),
        "  answerable by folder (first gold file): "
        + "  ".join(f"{k}={v}" for k, v in sorted(by_folder.items(), key=lambda kv: -kv[1])),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path, help="QA files (JSON Lines)")
    parser.add_argument("--runbooks", type=Path, default=DEFAULT_RUNBOOKS, help="runbooks folder")
    parser.add_argument("--quiet", action="store_true", help="print errors and the summary only")
    args = parser.parse_args(argv)

    if not args.runbooks.is_dir():
        print(f"runbooks not found at {args.runbooks}", file=sys.stderr)
        return 1
    corpus = Corpus.load(args.runbooks)
    report = Report()
    seen_ids: dict[str, str] = {}
    seen_questions: dict[str, str] = {}
    summaries = []

    for path in args.files:
        entries: list[dict[str, Any]] = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            report.error(str(path), f"cannot read: {exc}")
            continue
        for lineno, line in enumerate(lines, 1):
            where = f"{path.name}:{lineno}"
            if not line.strip():
                report.error(where, "empty line")
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                report.error(where, f"invalid JSON: {exc}")
                continue
            check_entry(entry, where, corpus, report)
            if not isinstance(entry, dict):
                continue
            entries.append(entry)
            qid = entry.get("id")
            if isinstance(qid, str):
                if qid in seen_ids:
                    report.error(where, f"duplicate id {qid!r} (first at {seen_ids[qid]})")
                seen_ids.setdefault(qid, where)
            question = entry.get("question")
            if isinstance(question, str):
                key = normalise(question)
                if key in seen_questions:
                    report.error(where, f"duplicate question (first at {seen_questions[key]})")
                seen_questions.setdefault(key, where)
        summaries.append(summarise(path.name, entries))

    for line in report.errors:
        print(line)
    if not args.quiet:
        for line in report.warnings:
            print(line)
    print(f"corpus: {len(corpus.texts)} Markdown files under {args.runbooks}")
    for summary in summaries:
        print(summary)
    print(f"{len(report.errors)} errors, {len(report.warnings)} warnings")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
