"""The lines that answer a value, fact or why question, chosen by a fitted model (fitted/line_ranker.json,
scripts/fit_lines.py over the training set's answer phrases).

Candidates are the lines of the likeliest sections of the choice (the chosen one and the best rivals outside
it): each table row with its header rows, each list item, each sentence of a long paragraph, each code block.
Each line's signals: its cosine with the question (a standard score among the candidate lines, and the level),
how much of the question's weight it holds (its words' rarity among the lines), whether it states a value of
the kind asked (answer/generated/abstention.py's reading of values), its section's probability, whether a
retrieved chunk holds it and how high, its layout kind and length, where it stands in its section. A softmax
over the lines gives each its probability; the answer shows the likeliest, and the next ones while they are
nearly as likely and fit the word budget, in document order with their section headings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from appliance.answer.generated.abstention import stated_values
from appliance.answer.quoted.features import question_stems
from appliance.answer.quoted.sections import Section
from appliance.errors import ApplianceError
from appliance.text.pipe_tables import is_rule
from appliance.text.sentences import split_sentences

EmbedTexts = Callable[[Sequence[str]], np.ndarray]
LONG_PARAGRAPH_WORDS = 40  # a paragraph longer than this is offered sentence by sentence
KINDS = ("table", "step", "item", "text", "code", "warning")
LINE_FEATURES = (
    "cos_z",
    "cos",
    "lex",
    "value",
    "section_p",
    "chosen",
    "hit_rr",
    "log_words",
    "first_in_section",
    *(f"kind_{kind}" for kind in KINDS),
)
FITTED = Path(__file__).resolve().parent.parent / "fitted" / "line_ranker.json"


@dataclass(frozen=True)
class Line:
    text: str
    kind: str
    section: Section
    item: int  # the position of its item in the section's items
    chunk_id: str
    part: int = 0  # its place inside the item: a table's row, a paragraph's sentence


def section_lines(section: Section) -> list[Line]:
    """A section's own lines (not its subsections'): table rows with their header rows, list items, the
    sentences of a long paragraph, code blocks whole; headings are not lines."""
    lines: list[Line] = []
    for position, item in enumerate(section.items):
        if item.kind == "heading":
            continue
        chunk_id = item.chunk.chunk_id
        if item.kind == "table":
            rows = item.text.split("\n")
            # The header is the rows above the rule; a table without a rule (a chunk that starts inside it) has none.
            header = rows[:2] if len(rows) > 2 and is_rule(rows[1]) else []
            for number, row in enumerate(rows[len(header) :]):
                lines.append(Line("\n".join([*header, row]), "table", section, position, chunk_id, number))
        elif item.kind in ("text", "note") and len(item.text.split()) > LONG_PARAGRAPH_WORDS:
            for number, segment in enumerate(split_sentences(item.text)):
                text = item.text[segment.start : segment.end]
                lines.append(Line(text, "text", section, position, chunk_id, number))
        else:
            lines.append(Line(item.text, item.kind, section, position, chunk_id))
    return lines


def _kind(line: Line) -> str:
    if line.kind in ("warning", "caution", "hold", "note"):
        return "warning"
    return line.kind if line.kind in KINDS else "text"


def line_features(
    question: str,
    vector: np.ndarray,
    lines: Sequence[Line],
    section_probability: Mapping[tuple[str, str], float],
    chosen: Section,
    hit_ranks: Mapping[str, int],
    embed_texts: EmbedTexts,
) -> np.ndarray:
    """One row per line, one column per name of LINE_FEATURES."""
    if not lines:
        return np.zeros((0, len(LINE_FEATURES)), dtype=np.float32)
    cosines = embed_texts([line.text for line in lines]) @ vector
    spread = float(cosines.std())
    stems = question_stems(question)
    line_stems = [set(question_stems(line.text)) for line in lines]
    idf = {w: math.log((len(lines) + 1) / (sum(w in own for own in line_stems) + 0.5)) for w in stems}
    total = sum(idf.values()) or 1.0
    seen_sections: set[tuple[str, str]] = set()
    rows = []
    for line, cos, own in zip(lines, cosines, line_stems, strict=True):
        key = (line.section.path, line.section.heading)
        first = key not in seen_sections
        seen_sections.add(key)
        rank = hit_ranks.get(line.chunk_id)
        features = {
            "cos_z": float((cos - cosines.mean()) / spread) if spread > 1e-6 else 0.0,
            "cos": float(cos),
            "lex": sum(idf[w] for w in stems if w in own) / total,
            "value": 1.0 if stated_values(line.text, question) else 0.0,
            "section_p": section_probability.get(key, 0.0),
            "chosen": 1.0 if key == (chosen.path, chosen.heading) else 0.0,
            "hit_rr": 1.0 / rank if rank else 0.0,
            "log_words": math.log1p(len(line.text.split())),
            "first_in_section": 1.0 if first else 0.0,
            **{f"kind_{kind}": 1.0 if _kind(line) == kind else 0.0 for kind in KINDS},
        }
        rows.append([features[name] for name in LINE_FEATURES])
    return np.asarray(rows, dtype=np.float32)


@dataclass(frozen=True)
class LineRanker:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    next_ratio: float  # a further line is shown while it is at least this share as likely as the best
    source: str

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        if len(features) == 0:
            return np.zeros(0)
        scores = ((features - self.mean) / self.scale) @ self.weights
        exp = np.exp(scores - scores.max())
        return exp / exp.sum()


def load_line_ranker(path: Path = FITTED) -> LineRanker:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != LINE_FEATURES:
            raise ApplianceError(f"line ranker {path}: fitted on other features; run scripts/fit_lines.py --write")
        scale = np.asarray(data["scale"], dtype=np.float64)
        return LineRanker(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.where(scale > 0, scale, 1.0),
            weights=np.asarray(data["weights"], dtype=np.float64),
            next_ratio=float(data["next_ratio"]),
            source=str(path),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApplianceError(f"line ranker {path}: cannot be read ({exc})") from exc


@lru_cache(maxsize=1)
def default_line_ranker() -> LineRanker:
    return load_line_ranker()


def pick_lines(lines: Sequence[Line], probabilities: np.ndarray, max_words: int, next_ratio: float) -> list[Line]:
    """The likeliest line, then the next likeliest while at least `next_ratio` as likely as the best and within
    `max_words` (the first line is shown whatever its length), in document order."""
    order = np.argsort(-probabilities)
    picked: list[int] = []
    words = 0
    for index in order:
        cost = len(lines[index].text.split())
        if picked and (probabilities[index] < next_ratio * probabilities[order[0]] or words + cost > max_words):
            continue
        picked.append(int(index))
        words += cost
    return [lines[i] for i in picked]
