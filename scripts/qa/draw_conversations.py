"""Seeded draws for the conversation sets: does a question need the conversation, or does it stand alone?

Two writing methods, each starting from a seeded draw so that nobody picks the subjects:

* `pairs` (the training set, followups_train.jsonl): seeded draws of two sections A and B (a third of the
  time two sections of one document, else two documents of one corpus group: operators on one shift stay
  on one plant or one platform). Each pair gets two seeded style cards, one for a question that stands
  alone, one for an elliptical follow-up. The packet shows both sections' text; the writer writes the
  operator's first question about A, then two last questions: one about B that makes sense without the
  conversation (label `standalone`, gold B), one about A that does not (label `elliptical`, gold A).
  Two conversations per pair: [first → standalone] and [first → elliptical]. Then, for the same first
  question, two about something the documents do not cover (every unknown name checked against the index:
  no chunk holds it): one that stands alone ("how do I scale up the RabbitMQ cluster?"), one elliptical
  ("and for the CockroachDB nodes?"); no gold. Written first for every third pair; after the first fit showed
  the demo SOPs' fold short of such questions in plain English words (ozone, forklift, crane), for every
  docs_corpus pair too (40 + 42 pairs).
* `walks` (the reporting set, followups_walks.jsonl): a seeded draw of two or three documents of one group,
  shown as heading outlines only (no body text). The writer writes one conversation of four or five turns,
  as a shift goes, moving between the documents as he likes, and labels every turn after the first
  (`standalone` or `elliptical`) with the document that answers it. No style cards: the writer chooses.

The groups are draw_sections.py's (docs_corpus, openshift, gitlab, incident-response + prometheus-operator).

Usage: python scripts/qa/draw_conversations.py pairs --seed 41 --pairs 120 OUTDIR
       python scripts/qa/draw_conversations.py walks --seed 42 --walks 16 OUTDIR
Writes OUTDIR/draw.jsonl (what was drawn) and OUTDIR/packets.md (what the writer reads).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.document import LoadedDocument
from scripts.qa.draw_sections import GROUPS, group_files, read_document
from scripts.qa.procedure_outlines import SEPARATOR, heading_paths, section_text

# How the question that stands alone is typed: several look conversational, none needs the conversation.
STANDALONE_CARDS = (
    "a full, formal question that names its subject",
    "terse, lower case, no question mark, one typo",
    "a conversational opener first ('ok thanks', 'got it', 'one more thing'), then a complete question",
    "starts with 'and' or 'also', yet names its own subject in full",
    "a narrative lead-in (what is happening on shift), then the question",
    "shares a word with the first question (the same area, system or chemical) but asks about B's own subject",
    "short: five words or fewer, naming the subject (an alarm, a tag, a piece of equipment, a tool)",
    "uses 'it', 'that' or 'this', referring to something the same question names",
)
# How the elliptical follow-up is typed: some carry no pronoun at all, some look like complete questions.
ELLIPTICAL_CARDS = (
    "a fragment naming only the new detail ('and for …?', 'what about …?', 'same for …?')",
    "a pronoun for the first question's subject ('it', 'that', 'this', 'they', 'there')",
    "a complete-looking question whose subject is implied: a detail (a time, whom to call, a form, PPE, a limit)",
    "a conversational opener first ('ok', 'thanks'), then a pronoun or an implied subject",
    "a 'why' or 'what happens if' about a step of the first question's subject, without naming it",
    "terse, lower case, a typo, the subject implied",
    "what comes next, before or after ('and after that?', 'what's the next step once that's done?')",
    "names a generic part of the job ('the valve', 'the form', 'the alert', 'the pod') but not which one",
)
# Pairs per group: the demo SOPs are the product's own case; the runbooks share the other half.
PAIR_SHARE = {"docs_corpus": 0.5, "openshift": 1 / 6, "gitlab": 1 / 6, "ir-prometheus": 1 / 6}
SAME_DOCUMENT = 1 / 3
MIN_WORDS = 40
PACKET_WORDS = 220


def sections_of(doc: LoadedDocument) -> list[str]:
    """Heading paths with at least MIN_WORDS words under them."""
    return [h for _, h in heading_paths(doc) if len((section_text(doc, h) or "").split()) >= MIN_WORDS]


def _related(a: str, b: str) -> bool:
    """One heading path holds the other: not two subjects."""
    return a == b or a.startswith(b + SEPARATOR) or b.startswith(a + SEPARATOR)


def _documents(group: str) -> list[LoadedDocument]:
    docs = [read_document(path) for path in group_files(group)]
    return [doc for doc in docs if doc is not None and sections_of(doc)]


def draw_pairs(seed: int, pairs: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    drawn: list[dict[str, object]] = []
    for group, share in PAIR_SHARE.items():
        docs = _documents(group)
        for _ in range(round(pairs * share)):
            a_doc = rng.choice(docs)
            a = rng.choice(sections_of(a_doc))
            same = rng.random() < SAME_DOCUMENT
            others = [s for s in sections_of(a_doc) if not _related(s, a)]
            if same and others:
                b_doc, b = a_doc, rng.choice(others)
            else:
                b_doc = rng.choice([d for d in docs if d.path != a_doc.path])
                b = rng.choice(sections_of(b_doc))
            drawn.append(
                {
                    "group": group,
                    "a_file": a_doc.path,
                    "a_section": a,
                    "b_file": b_doc.path,
                    "b_section": b,
                    "standalone_card": rng.choice(STANDALONE_CARDS),
                    "elliptical_card": rng.choice(ELLIPTICAL_CARDS),
                }
            )
    rng.shuffle(drawn)
    for number, entry in enumerate(drawn, start=1):
        entry["pair"] = number
    return drawn


def draw_walks(seed: int, walks: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    drawn: list[dict[str, object]] = []
    groups = list(GROUPS)
    docs = {group: _documents(group) for group in groups}
    for number in range(1, walks + 1):
        group = "docs_corpus" if number % 2 else groups[1 + (number // 2) % 3]
        chosen = rng.sample(docs[group], rng.choice((2, 3)))
        drawn.append({"walk": number, "group": group, "files": [doc.path for doc in chosen]})
    return drawn


def _capped(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + " […]"


def _document(display: str) -> LoadedDocument:
    from scripts.qa.procedure_outlines import resolve

    doc = read_document(resolve(display))
    if doc is None:
        raise SystemExit(f"{display}: cannot be read")
    return doc


def pair_packet(entry: dict[str, object]) -> str:
    parts = [f"## Pair {entry['pair']} ({entry['group']})"]
    for side in ("a", "b"):
        doc = _document(str(entry[f"{side}_file"]))
        section = str(entry[f"{side}_section"])
        parts += [
            f"### {side.upper()}: `{entry[f'{side}_file']}` — {doc.title}",
            f"section: `{section}`",
            "```text",
            _capped(section_text(doc, section) or "", PACKET_WORDS),
            "```",
        ]
    parts += [
        f"- standalone card: **{entry['standalone_card']}**",
        f"- elliptical card: **{entry['elliptical_card']}**",
    ]
    return "\n".join(parts) + "\n"


def walk_packet(entry: dict[str, object]) -> str:
    parts = [f"## Walk {entry['walk']} ({entry['group']})"]
    for display in entry["files"]:  # type: ignore[attr-defined]
        doc = _document(str(display))
        parts += [f"### `{display}` — {doc.title}"]
        parts += [f"{'  ' * (level - 1)}- {heading.split(SEPARATOR)[-1]}" for level, heading in heading_paths(doc)]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    pairs = commands.add_parser("pairs")
    pairs.add_argument("out", type=Path)
    pairs.add_argument("--seed", type=int, default=41)
    pairs.add_argument("--pairs", type=int, default=120)
    walks = commands.add_parser("walks")
    walks.add_argument("out", type=Path)
    walks.add_argument("--seed", type=int, default=42)
    walks.add_argument("--walks", type=int, default=16)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "pairs":
        drawn, packet = draw_pairs(args.seed, args.pairs), pair_packet
    else:
        drawn, packet = draw_walks(args.seed, args.walks), walk_packet
    with (args.out / "draw.jsonl").open("w", encoding="utf-8") as handle:
        for entry in drawn:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    (args.out / "packets.md").write_text("\n".join(packet(entry) for entry in drawn), encoding="utf-8")
    print(f"{len(drawn)} {args.command} drawn into {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
