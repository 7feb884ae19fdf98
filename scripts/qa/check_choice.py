"""Check a section-choice question file (choice_train.jsonl and the sets written like it).

For every entry: the JSON shape; unique ids and questions; the gold file exists and holds the gold section
(as the appliance's loaders read it); every step and answer phrase occurs verbatim in the gold section
(case-insensitive, whitespace collapsed, `*` and `` ` `` ignored), step phrases in document order; and the
*copy check*: a question must not reuse the section's wording, so any run of --max-run or more consecutive
words shared with the gold section (identifiers, numbers and stopword-only runs aside) is an error to rewrite.
Unanswerable entries must have no gold, and their distinctive words (capitalised or hyphenated names, words
of 4+ letters the corpus never writes) are printed for review with the number of files that hold them.

Usage: python scripts/qa/check_choice.py FILE.jsonl [...] [--max-run 4] [--quiet]
Exit 1 on any error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.loaders import load_document
from appliance.text.stopwords import STOPWORDS
from scripts.qa.procedure_outlines import heading_paths, resolve, section_text

KINDS = ("procedure", "fact", "value", "why", "unanswerable")
SCOPES = ("whole", "part")
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*")


def flat(text: str) -> str:
    return " ".join(re.sub(r"[*`]", "", text).casefold().split())


def words(text: str) -> list[str]:
    return [w.casefold().strip(".-/") for w in _WORD.findall(text)]


def _is_identifier(word: str) -> bool:
    return any(c.isdigit() for c in word) or "-" in word or "_" in word or "." in word


def copied_runs(question: str, source: str, max_run: int) -> list[str]:
    """Runs of `max_run`+ consecutive question words that the source also has consecutively, ignoring runs
    made only of stopwords or identifiers (a tag or a command must be typed as written)."""
    q = words(question)
    s = words(source)
    grams = {tuple(s[i : i + max_run]) for i in range(len(s) - max_run + 1)}
    found = []
    for i in range(len(q) - max_run + 1):
        gram = tuple(q[i : i + max_run])
        if gram in grams:
            plain = [w for w in gram if w not in STOPWORDS and not _is_identifier(w)]
            if len(plain) >= 2:
                found.append(" ".join(gram))
    return found


def corpus_texts() -> Iterable[str]:
    """Every document's text: the runbooks' Markdown as written, docs_corpus as the loaders read it (PDF, DOCX…)."""
    repo = Path(__file__).resolve().parent.parent.parent
    for path in sorted((repo / "docs_corpus").iterdir()):
        if path.is_file():
            yield "\n".join(block.text for block in load_document(path, f"docs_corpus/{path.name}").blocks)
    for path in (repo.parent / "shared" / "data" / "runbooks").rglob("*.md"):
        yield path.read_text(encoding="utf-8", errors="replace")


def check(entries: list[dict[str, object]], max_run: int, quiet: bool) -> int:
    errors = 0
    seen_ids: set[str] = set()
    seen_questions: set[str] = set()
    docs: dict[str, object] = {}
    corpus_text: str | None = None

    def error(entry_id: str, message: str) -> None:
        nonlocal errors
        errors += 1
        print(f"ERROR {entry_id}: {message}")

    for entry in entries:
        entry_id = str(entry.get("id", "?"))
        question = str(entry.get("question", ""))
        if entry_id in seen_ids:
            error(entry_id, "duplicate id")
        seen_ids.add(entry_id)
        if flat(question) in seen_questions:
            error(entry_id, "duplicate question")
        seen_questions.add(flat(question))
        kind = entry.get("kind")
        if kind not in KINDS:
            error(entry_id, f"kind {kind!r} is not one of {KINDS}")
            continue
        if entry.get("group") not in GROUPS:
            error(entry_id, f"group {entry.get('group')!r} is not one of {GROUPS}")
        if kind == "unanswerable":
            if entry.get("answerable") is not False or entry.get("gold_file") or entry.get("step_phrases"):
                error(entry_id, "an unanswerable entry has answerable false and no gold")
            if not quiet:
                corpus_text = corpus_text or "\n".join(text.casefold() for text in corpus_texts())
                names = [w for w in re.findall(r"[A-Za-z][\w-]{3,}", question) if w.casefold() not in STOPWORDS]
                present = [w for w in names if w.casefold() in corpus_text]
                print(f"  review {entry_id}: words the Markdown corpus holds: {present}")
            continue
        if entry.get("answerable") is not True:
            error(entry_id, "an answerable entry has answerable true")
        gold_file = str(entry.get("gold_file", ""))
        gold_section = str(entry.get("gold_section", ""))
        path = resolve(gold_file)
        if not path.is_file():
            error(entry_id, f"gold_file {gold_file} does not exist")
            continue
        if gold_file not in docs:
            docs[gold_file] = load_document(path, gold_file)
        doc = docs[gold_file]
        if gold_section not in {heading for _, heading in heading_paths(doc)}:  # type: ignore[arg-type]
            error(entry_id, f"no section {gold_section!r} in {gold_file}")
            continue
        text = section_text(doc, gold_section) or ""  # type: ignore[arg-type]
        flat_text = flat(text)
        if kind == "procedure":
            if entry.get("scope") not in SCOPES:
                error(entry_id, f"a procedure has scope in {SCOPES}")
            phrases = [str(p) for p in entry.get("step_phrases", [])]  # type: ignore[attr-defined]
            if not 2 <= len(phrases) <= 8:
                error(entry_id, "a procedure has 2-8 step_phrases")
        else:
            phrases = [str(p) for p in entry.get("answer_phrases", [])]  # type: ignore[attr-defined]
            if not 1 <= len(phrases) <= 3:
                error(entry_id, "a fact, value or why question has 1-3 answer_phrases")
        positions = []
        for phrase in phrases:
            at = flat_text.find(flat(phrase))
            if at < 0:
                error(entry_id, f"phrase not in the gold section: {phrase!r}")
            positions.append(at)
        if kind == "procedure" and all(p >= 0 for p in positions) and positions != sorted(positions):
            error(entry_id, "step_phrases are not in document order")
        copies = copied_runs(question, text, max_run)
        if copies:
            error(entry_id, f"copied wording (rewrite it): {copies[:3]}")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--max-run", type=int, default=4)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    entries = [
        json.loads(line)
        for path in args.files
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    errors = check(entries, args.max_run, args.quiet)
    print(f"{len(entries)} entries, {errors} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
