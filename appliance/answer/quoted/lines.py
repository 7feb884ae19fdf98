"""The lines that answer a value, fact or why question, chosen by a fitted model (fitted/line_ranker.json,
scripts/fit_lines.py over the training set's answer phrases).

Candidates are the lines of the likeliest sections of the choice (the chosen one and the best rivals outside
it): each table row with its header rows, each list item, each sentence of a long paragraph, each code block.
Each line's signals: its cosine with the question (a standard score among the candidate lines, and the level),
the same read under the last two parts of its heading path, how much of the question's weight it holds (its
words' rarity among the lines), where those two place it among the candidate lines, the best cosine and coverage
of the line before or after it, whether it states a value of the kind asked (answer/generated/abstention.py's
reading of values), its section's probability, whether a retrieved chunk holds it and how high, its layout kind
and length, where it stands in its section. A softmax over the lines gives each its probability. The fitted model
says which of these signals it reads (one it does not read is not computed: the line read alone costs an
embedding per line), how many sections give lines, and how the shown lines are picked: the likeliest lines, or
passages grown from the likeliest few (shown_lines), within the word budget, in document order with their
section headings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from appliance.answer.generated.abstention import stated_values
from appliance.answer.quoted.features import question_stems, standard_scores
from appliance.answer.quoted.sections import Section, heading_parts
from appliance.errors import ApplianceError
from appliance.index.records import ChunkRow
from appliance.text.pipe_tables import is_rule
from appliance.text.sentences import split_sentences

EmbedTexts = Callable[[Sequence[str]], np.ndarray]
# A paragraph longer than this is offered sentence by sentence. The fitted model holds the value it was fitted
# with (scripts/fit_lines.py --paragraph-words compares others); this is the one a model file without it used.
LONG_PARAGRAPH_WORDS = 40
KINDS = ("table", "step", "item", "text", "code", "warning")
# The signals that read the line alone (its own embedding); the others read it under its headings.
ALONE_COSINES = frozenset({"cos_z", "cos", "neighbour_cos_z"})
# Where the line stands among the candidates, by its cosine read under its headings and by its share of the
# question's weight: 1 / (1 + how many lines score higher). A level says how close the line is; the place says
# whether another line is closer (stop 62, scripts/fit_lines.py).
RANKS = ("ctx_cos_rr", "lex_rr")
LINE_FEATURES = (
    "cos_z",
    "cos",
    "ctx_cos_z",
    "ctx_cos",
    "lex",
    "ctx_cos_rr",
    "lex_rr",
    "neighbour_cos_z",
    "neighbour_lex",
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
    chunk: ChunkRow  # the chunk it starts in: its citation
    part: int = 0  # its place inside the item: a table's row, a paragraph's sentence


def section_lines(section: Section, paragraph_words: int = LONG_PARAGRAPH_WORDS) -> list[Line]:
    """A section's lines, its subsections' included: table rows with their header rows, list items, the
    sentences of a paragraph longer than `paragraph_words`, code blocks whole; headings are not lines."""
    lines: list[Line] = []
    for position, item in enumerate(section.items):
        if item.kind == "heading":
            continue
        chunk = item.chunk
        if item.kind == "table":
            rows = item.text.split("\n")
            # The header is the rows above the rule; a table without a rule (a chunk that starts inside it) has none.
            header = rows[:2] if len(rows) > 2 and is_rule(rows[1]) else []
            for number, row in enumerate(rows[len(header) :]):
                lines.append(Line("\n".join([*header, row]), "table", section, position, chunk, number))
        elif item.kind in ("text", "note") and len(item.text.split()) > paragraph_words:
            for number, segment in enumerate(split_sentences(item.text)):
                text = item.text[segment.start : segment.end]
                lines.append(Line(text, "text", section, position, chunk, number))
        else:
            lines.append(Line(item.text, item.kind, section, position, chunk))
    return lines


def in_context(line: Line) -> str:
    """The line under the last two parts of its heading path: what a short line ("Set it to 30 s") is about."""
    where = " › ".join(heading_parts(line.chunk.section)[-2:]) or line.section.title
    return f"{where}: {line.text}"


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
    needed: Collection[str] = LINE_FEATURES,
) -> np.ndarray:
    """One row per line, one column per name of LINE_FEATURES. The line's cosine read alone costs one embedding
    per line: it is computed only where `needed` (the fitted model's signals) holds it, else its columns are 0."""
    if not lines:
        return np.zeros((0, len(LINE_FEATURES)), dtype=np.float32)
    read_alone = bool(ALONE_COSINES & set(needed))
    texts = [in_context(line) for line in lines] + ([line.text for line in lines] if read_alone else [])
    embedded = embed_texts(texts)
    in_context_cosines = embedded[: len(lines)] @ vector
    cosines = embedded[len(lines) :] @ vector if read_alone else np.zeros(len(lines), dtype=np.float32)
    standard, in_context_standard = standard_scores(cosines), standard_scores(in_context_cosines)
    stems = question_stems(question)
    line_stems = [set(question_stems(line.text)) for line in lines]
    idf = {w: math.log((len(lines) + 1) / (sum(w in own for own in line_stems) + 0.5)) for w in stems}
    total = sum(idf.values()) or 1.0
    lexical = [sum(idf[w] for w in stems if w in own) / total for own in line_stems]
    in_context_place, lexical_place = reciprocal_places(in_context_cosines), reciprocal_places(np.asarray(lexical))
    seen_sections: set[tuple[str, str]] = set()
    rows = []
    for n, line in enumerate(lines):
        key = (line.section.path, line.section.heading)
        first = key not in seen_sections
        seen_sections.add(key)
        rank = hit_ranks.get(line.chunk.chunk_id)
        # The line before or after in the same section: an answer often sits next to the line that matches
        # (a table's value under the row that names it, the command after the sentence that says why).
        beside = [m for m in (n - 1, n + 1) if 0 <= m < len(lines) and lines[m].section is line.section]
        features = {
            "cos_z": float(standard[n]),
            "cos": float(cosines[n]),
            "ctx_cos_z": float(in_context_standard[n]),
            "ctx_cos": float(in_context_cosines[n]),
            "lex": lexical[n],
            "ctx_cos_rr": float(in_context_place[n]),
            "lex_rr": float(lexical_place[n]),
            "neighbour_cos_z": max((float(standard[m]) for m in beside), default=0.0),
            "neighbour_lex": max((lexical[m] for m in beside), default=0.0),
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


def reciprocal_places(scores: np.ndarray) -> np.ndarray:
    """1 / (1 + how many scores are higher) for each score: the best is 1, and equal scores share a place."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64))
    higher = len(ordered) - np.searchsorted(ordered, scores, side="right")
    return np.asarray(1.0 / (1.0 + higher))


@dataclass(frozen=True)
class LineRanker:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    columns: tuple[int, ...]  # the columns of LINE_FEATURES the model was fitted on, in its order
    next_ratio: float  # a further line is shown while it is at least this share as likely as the best
    sections: int  # how many of the likeliest sections give candidate lines
    seeds: int  # 0: the likeliest lines (next_ratio); else this many likeliest lines, grown into passages
    source: str
    paragraph_words: int = LONG_PARAGRAPH_WORDS  # a longer paragraph is offered sentence by sentence

    @property
    def features(self) -> tuple[str, ...]:
        """The signals the model reads, by name (what line_features must compute)."""
        return tuple(LINE_FEATURES[column] for column in self.columns)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        if len(features) == 0:
            return np.zeros(0)
        scores = ((features[:, self.columns] - self.mean) / self.scale) @ self.weights
        exp = np.exp(scores - scores.max())
        return exp / exp.sum()


def load_line_ranker(path: Path = FITTED) -> LineRanker:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        unknown = [name for name in data["features"] if name not in LINE_FEATURES]
        if unknown:
            raise ApplianceError(
                f"line ranker {path}: fitted on features this version does not compute ({', '.join(unknown)}); "
                "run scripts/fit_lines.py --write"
            )
        scale = np.asarray(data["scale"], dtype=np.float64)
        return LineRanker(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.where(scale > 0, scale, 1.0),
            weights=np.asarray(data["weights"], dtype=np.float64),
            columns=tuple(LINE_FEATURES.index(name) for name in data["features"]),
            next_ratio=float(data["next_ratio"]),
            sections=int(data["sections"]),
            seeds=int(data["seeds"]),
            source=str(path),
            paragraph_words=int(data.get("paragraph_words", LONG_PARAGRAPH_WORDS)),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApplianceError(f"line ranker {path}: cannot be read ({exc})") from exc


@lru_cache(maxsize=1)
def default_line_ranker() -> LineRanker:
    return load_line_ranker()


def shown_lines(
    lines: Sequence[Line], probabilities: np.ndarray, max_words: int, next_ratio: float, seeds: int
) -> list[Line]:
    """What the answer shows: passages grown from the `seeds` likeliest lines, or with `seeds` 0 the likeliest
    lines themselves (the fitted model says which, scripts/fit_lines.py)."""
    if seeds:
        return pick_passages(lines, probabilities, max_words, seeds)
    return pick_lines(lines, probabilities, max_words, next_ratio)


def pick_passages(
    lines: Sequence[Line], probabilities: np.ndarray, max_words: int, seeds: int, *, whole_introductions: bool = True
) -> list[Line]:
    """The `seeds` likeliest lines (the first whatever its length, the others while they fit `max_words`), then,
    while one fits, the likeliest line next to a picked one in the same section, in document order. An answer
    reads as a passage: the value under the row that names it, the command after the sentence that says why.

    A line that introduces the next one ("Two options:", "run the following command:") is shown with it or not
    at all: the likeliest line brings the line it introduces (where it fits), and another introduction whose
    line did not fit is dropped and its words given to the passage again (stop 66; `whole_introductions` False
    grows the passages as before, for scripts/measure_introductions.py: no phrase lost out of fold or on the five
    measured sets)."""
    order = np.argsort(-probabilities)
    cost = [len(line.text.split()) for line in lines]
    picked: set[int] = set()
    words = 0
    for index in (int(i) for i in order[:seeds]):
        if picked and words + cost[index] > max_words:
            continue
        picked.add(index)
        words += cost[index]
    if not whole_introductions:
        _grow(lines, probabilities, cost, picked, set(), words, max_words)
        return [lines[i] for i in sorted(picked)]
    first = int(order[0])
    brought = introduced(lines, first)
    if brought is not None and brought not in picked and words + cost[brought] <= max_words:
        picked.add(brought)
        words += cost[brought]
    dropped: set[int] = set()
    while True:  # each round drops at least one line for good: it ends
        words = _grow(lines, probabilities, cost, picked, dropped, words, max_words)
        dangling = {
            n for n in picked if n != first and (shown := introduced(lines, n)) is not None and shown not in picked
        }
        if not dangling:
            return [lines[i] for i in sorted(picked)]
        picked -= dangling
        dropped |= dangling
        words -= sum(cost[n] for n in dangling)


def _grow(
    lines: Sequence[Line],
    probabilities: np.ndarray,
    cost: Sequence[int],
    picked: set[int],
    dropped: set[int],
    words: int,
    max_words: int,
) -> int:
    """Add the likeliest line next to a picked one in its section while one fits; the words shown after."""
    while True:
        beside = {
            m
            for n in picked
            for m in (n - 1, n + 1)
            if 0 <= m < len(lines) and m not in picked and m not in dropped and lines[m].section is lines[n].section
        }
        fitting = [m for m in beside if words + cost[m] <= max_words]
        if not fitting:
            return words
        best = max(fitting, key=lambda m: float(probabilities[m]))
        picked.add(best)
        words += cost[best]


def introduced(lines: Sequence[Line], n: int) -> int | None:
    """The line that line `n` introduces: the next one in its section, where `n` ends with a colon (text, a step, an
    item, a note: a code block or a table row ending in ":" is content, not an introduction)."""
    line = lines[n]
    if line.kind in ("code", "table") or not line.text.rstrip().endswith(":"):
        return None
    following = n + 1
    if following < len(lines) and lines[following].section is line.section:
        return following
    return None


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
