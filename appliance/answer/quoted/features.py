"""What the ranker knows of each candidate section: graded signals, none a rule, all weighed by the fitted
model (ranker.py; the weights come from scripts/fit_choice.py over scripts/qa/choice_train.jsonl).

Families of signals:
- meaning: the question's cosine with the section's label (document title › heading path), with its own
  heading, with its chunks (the best, the first, and their mean direction): the embedder already read them all
  (the chunks' vectors are the index's own); each as a standard score among the question's candidates, so no
  embedder's scale is in the weights;
- words: how much of the question's weight (its words' rarity among the candidates' chunks) the words its own
  heading adds to the title and its ancestors, its label and its body hold, and a BM25 of the body scaled by
  the best candidate's;
- the search: the best hit inside (by rank), how many, the section's share of its document's hit mass, the
  document's rank and mass;
- structure: the share of what it holds that an operator acts on (steps, commands, warnings, hold points:
  text/layout.py's kinds), numbered steps, length, depth, parts, whether it is the whole document or a
  fragment;
- pointers: another hit names this document or section ("see SOP-CL-004 section 6"), or this one points to
  another document;
- the question: how strongly it asks for a procedure, and for the whole job rather than one part
  (question.py's fitted reading), each crossed with the structure it favours;
- the heading's own words, by a vocabulary the fit keeps (the words of many training candidates' headings:
  Purpose, Procedure, Mitigation… in whatever documents the training set holds), each weighed by the fit for a
  procedure and for a fact: learned from which sections answered, never a list written by hand.
The names are the model file's contract: a model fitted with other names is refused (ranker.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from appliance.answer.question import Question
from appliance.answer.quoted.candidates import Candidate
from appliance.answer.quoted.sections import Section, heading_parts
from appliance.text.stems import stem
from appliance.text.stopwords import STOPWORDS

EmbedTexts = Callable[[Sequence[str]], np.ndarray]

# How much of a section's content an operator acts on, by layout kind (text/layout.py).
DOING = frozenset({"step", "code", "warning", "caution", "hold"})  # what an operator does, not reads
ACTIONABLE = {**dict.fromkeys(DOING, 1.0), "item": 0.5, "note": 0.3}
# A shorter section is a fragment: 15, 60 and no such signal lose out of fold (fit_choice.py --fragment-words).
FRAGMENT_WORDS = 30
_TOKEN = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")
# A section number at the start of a heading ("6.2 Isolate…", "4. Procedures", "A. Scope"): not a word of it.
_NUMBER = re.compile(r"^\s*(?:\d{1,3}(?:\.\d{1,3})*|[A-Z])[.)]?\s+(?=\S)")
BM25_K1 = 1.2
BM25_B = 0.75

BASE_FEATURES = (
    "label_cos",
    "name_cos",
    "body_max_cos",
    "body_mean_cos",
    "body_first_cos",
    "lex_name",
    "lex_label",
    "lex_body",
    "bm25_body",
    "hit_rr",
    "hit_count",
    "hit_share",
    "doc_rr",
    "doc_mass",
    "referenced",
    "refers_out",
    "step_share",
    "steps",
    "log_words",
    "depth",
    "is_root",
    "children",
    "is_leaf",
    "fragment",
    "hit_children",
    "best_child_lex",
    "best_child_steps",
    "words_share",
    "starts_at",
    "action_hit_rr",
)
# Each base feature counts differently for a procedure and for a fact (a procedure asked is almost never a
# Purpose; a fact often is): every base feature crossed with P(procedure) and with 1 - P(procedure), and the
# structure a whole job asked for favours crossed with P(whole job).
WHOLE_CROSSED = ("children", "is_leaf", "log_words", "depth", "steps")
QUESTION_FEATURES = (
    *(f"proc_x_{name}" for name in BASE_FEATURES),
    *(f"whole_x_{name}" for name in WHOLE_CROSSED),
)
FEATURES = tuple(f"fact_x_{name}" for name in BASE_FEATURES) + QUESTION_FEATURES
_COLUMN = {name: i for i, name in enumerate(BASE_FEATURES)}
COSINES = ("label_cos", "name_cos", "body_max_cos", "body_mean_cos", "body_first_cos")
_COLUMN = {name: i for i, name in enumerate(BASE_FEATURES)}


def candidate_features(
    question: Question,
    candidates: Sequence[Candidate],
    embed_texts: EmbedTexts,
    chunk_vectors: Mapping[str, np.ndarray],
    vocabulary: Sequence[str] = (),
) -> np.ndarray:
    """One row per candidate, one column per name of model_features(vocabulary)."""
    base = base_features(question.searched, question.vector, candidates, embed_texts, chunk_vectors)
    names = [c.section.name if c.section.heading else "" for c in candidates]
    return with_question(base, question.procedure, question.whole, names, vocabulary)


def model_features(vocabulary: Sequence[str] = ()) -> tuple[str, ...]:
    """The model's columns: FEATURES, then each heading word of the fitted vocabulary for a fact and a procedure."""
    return (
        *FEATURES,
        *(f"fact_x_heading:{word}" for word in vocabulary),
        *(f"proc_x_heading:{word}" for word in vocabulary),
    )


def heading_words(name: str) -> set[str]:
    """A heading's own words, stemmed, without its number: what the fitted heading vocabulary is matched on."""
    return {stem(w) for w in _TOKEN.findall(_NUMBER.sub("", name, count=1).lower()) if w not in STOPWORDS}


def with_question(
    base: np.ndarray,
    procedure: float,
    whole: float,
    headings: Sequence[str] = (),
    vocabulary: Sequence[str] = (),
) -> np.ndarray:
    """The model's columns (model_features(vocabulary), in order) from the base features, the question's
    reading and the candidates' own headings (`headings`: '' for a whole document)."""
    whole_job = whole * procedure
    crossed = [base * (1.0 - procedure), base * procedure]
    crossed.append(np.stack([whole_job * base[:, _COLUMN[name]] for name in WHOLE_CROSSED], axis=1))
    if vocabulary:
        words = [heading_words(h) for h in headings]
        has = np.asarray([[1.0 if w in own else 0.0 for w in vocabulary] for own in words]).reshape(len(base), -1)
        crossed += [has * (1.0 - procedure), has * procedure]
    return np.concatenate(crossed, axis=1).astype(np.float32)


def question_stems(text: str) -> list[str]:
    return list(dict.fromkeys(stem(w) for w in _TOKEN.findall(text.lower()) if w not in STOPWORDS))


def heading_name(section: Section) -> str:
    """The section's own heading without its number ("6.2 Isolate the bank" → "Isolate the bank")."""
    return _NUMBER.sub("", section.name, count=1)


def base_features(
    text: str,
    q: np.ndarray,
    candidates: Sequence[Candidate],
    embed_texts: EmbedTexts,
    chunk_vectors: Mapping[str, np.ndarray],
) -> np.ndarray:
    """One row per candidate, one column per name of BASE_FEATURES (`q`: the question's unit vector)."""
    if not candidates:
        return np.zeros((0, len(BASE_FEATURES)), dtype=np.float32)
    sections = [c.section for c in candidates]
    texts = [s.label for s in sections] + [heading_name(s) or s.title for s in sections]
    vectors = embed_texts(texts)
    label_cos = vectors[: len(sections)] @ q
    name_cos = vectors[len(sections) :] @ q
    stems = question_stems(text)
    idf = _pool_idf(stems, candidates)
    body_stems = [_stem_counts(" ".join(item.text for item in s.items if item.kind != "heading")) for s in sections]
    lengths = [sum(counts.values()) for counts in body_stems]
    average = max(sum(lengths) / len(lengths), 1.0)
    bm25 = [_bm25(stems, idf, counts, length, average) for counts, length in zip(body_stems, lengths, strict=True)]
    best_bm25 = max(max(bm25), 1e-9)
    total_idf = sum(idf.values()) or 1.0
    document_hit_mass = _document_hit_mass(candidates)
    children_of = _children_counts(sections)
    lex_body = [_coverage(stems, idf, counts) / total_idf for counts in body_stems]
    position = {(s.path, s.heading): i for i, s in enumerate(sections)}
    parent_of = {
        i: position.get((s.path, " › ".join(heading_parts(s.heading)[:-1])))
        for i, s in enumerate(sections)
        if s.heading
    }
    structure = [_structure(s) for s in sections]
    root_words: dict[str, int] = {}
    for section in sections:  # the largest section of a document holds all of it
        root_words[section.path] = max(root_words.get(section.path, 0), section.words)
    starts_at = _starts_at(sections)
    acting = {item.chunk.chunk_id for s in sections for item in s.items if item.kind in DOING}
    child_lex: dict[int, float] = {}
    child_steps: dict[int, int] = {}
    children_hit: dict[int, int] = {}
    for child, parent in parent_of.items():
        if parent is not None:
            child_lex[parent] = max(child_lex.get(parent, 0.0), lex_body[child])
            child_steps[parent] = max(child_steps.get(parent, 0), structure[child][1])
            children_hit[parent] = children_hit.get(parent, 0) + (1 if candidates[child].hits else 0)
    rows = []
    for index, candidate in enumerate(candidates):
        section = candidate.section
        vectors_inside = [chunk_vectors[c.chunk_id] for c in section.chunks if c.chunk_id in chunk_vectors]
        body = np.stack(vectors_inside) @ q if vectors_inside else np.zeros(1, dtype=np.float32)
        mean = np.mean(np.stack(vectors_inside), axis=0) if vectors_inside else None
        mean_cos = float(mean @ q / (np.linalg.norm(mean) or 1.0)) if mean is not None else 0.0
        steps_share, numbered = structure[index]
        children = children_of.get((section.path, section.heading), 0)
        words = section.words
        mass_inside = sum(max(score, 0.0) for _, score, _ in candidate.hits)
        features = {
            "label_cos": float(label_cos[index]),
            "name_cos": float(name_cos[index]),
            "body_max_cos": float(np.max(body)),
            "body_mean_cos": mean_cos,
            "body_first_cos": float(body[0]),
            "lex_name": _coverage(stems, idf, _own_words(section)) / total_idf,
            "lex_label": _coverage(stems, idf, _stem_counts(section.label)) / total_idf,
            "lex_body": lex_body[index],
            "bm25_body": bm25[index] / best_bm25,
            "hit_rr": 1.0 / min((rank for _, _, rank in candidate.hits), default=math.inf),
            "hit_count": math.log1p(len(candidate.hits)),
            "hit_share": mass_inside / document_hit_mass[section.path] if document_hit_mass[section.path] else 0.0,
            "doc_rr": 1.0 / candidate.document_rank if candidate.document_rank else 0.0,
            "doc_mass": candidate.document_mass,
            "referenced": candidate.referenced,
            "refers_out": candidate.refers_out,
            "step_share": steps_share,
            "steps": math.log1p(numbered),
            "log_words": math.log1p(words),
            "depth": float(section.depth),
            "is_root": 1.0 if not section.heading else 0.0,
            "children": math.log1p(children),
            "is_leaf": 1.0 if children == 0 else 0.0,
            "fragment": 1.0 if words < FRAGMENT_WORDS else 0.0,
            # how the question spreads over its parts: a part holding all of what the parent holds of the
            # question stands for it; hits in several parts speak for the whole
            "hit_children": math.log1p(children_hit.get(index, 0)),
            "best_child_lex": child_lex[index] / lex_body[index] if index in child_lex and lex_body[index] > 0 else 0.0,
            # a part holding all of a section's numbered steps is the procedure; the rest of the section is read
            "best_child_steps": child_steps.get(index, 0) / numbered if numbered else 0.0,
            "words_share": words / max(root_words.get(section.path, words), 1),
            # where the section begins in its document (share of the words before it): what opens a document
            # (purpose, scope) and what follows (the steps, the records) sit at different places in any format
            "starts_at": starts_at[index],
            # the best hit inside that holds something to do (a step, a command, a warning): a section whose
            # best hits only restate the subject (a purpose, a meaning) is found but does not say what to do
            "action_hit_rr": 1.0
            / min((rank for chunk, _, rank in candidate.hits if chunk.chunk_id in acting), default=math.inf),
        }
        rows.append([features[name] for name in BASE_FEATURES])
    return _within_question(np.asarray(rows, dtype=np.float32))


def _starts_at(sections: Sequence[Section]) -> list[float]:
    """Per section, the share of its document's words (over the chunks the candidates hold) before its first
    chunk: 0 for the document itself and its first section."""
    words: dict[str, dict[int, int]] = {}
    for section in sections:
        for chunk in section.chunks:
            words.setdefault(section.path, {})[chunk.ord] = len(chunk.text.split())
    shares = []
    for section in sections:
        counts = words[section.path]
        first = min((chunk.ord for chunk in section.chunks), default=0)
        before = sum(n for ord_, n in counts.items() if ord_ < first)
        shares.append(before / max(sum(counts.values()), 1))
    return shares


def standard_scores(values: np.ndarray) -> np.ndarray:
    """Standard scores among one question's candidates (zeros when they are all alike)."""
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 1e-6 else np.zeros_like(values)


def _within_question(matrix: np.ndarray) -> np.ndarray:
    """Cosines as standard scores among the question's candidates: the ranker compares candidates with each
    other, and a z-score carries no embedder's scale (another embedder's cosines sit higher or lower)."""
    for name in COSINES:
        matrix[:, _COLUMN[name]] = standard_scores(matrix[:, _COLUMN[name]])
    return matrix


def _own_words(section: Section) -> dict[str, int]:
    """The words a section's heading adds to its document's title and its ancestors' headings ("locked" of
    "4.3 Locked account"; nothing for the document's root or a heading that repeats the title)."""
    parts = heading_parts(section.heading)
    if not parts:
        return {}
    context = _stem_counts(" ".join([section.title, *parts[:-1]]))
    return {word: count for word, count in _stem_counts(heading_name(section)).items() if word not in context}


def _children_counts(sections: Sequence[Section]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for section in sections:
        parts = heading_parts(section.heading)
        if parts:
            parent = (section.path, " › ".join(parts[:-1]))
            counts[parent] = counts.get(parent, 0) + 1
    return counts


def _stem_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in _TOKEN.findall(text.lower()):
        if word not in STOPWORDS:
            key = stem(word)
            counts[key] = counts.get(key, 0) + 1
    return counts


def _pool_idf(stems: Sequence[str], candidates: Sequence[Candidate]) -> dict[str, float]:
    """Each question word's rarity among the candidate documents' chunks: a word every chunk of the chlorine
    SOP holds says nothing about which of its sections answers; "stop" against "start" does."""
    chunks = {c.chunk_id: c.text for candidate in candidates for c in candidate.section.chunks}
    total = len(chunks)
    chunk_stems = [set(_stem_counts(text)) for text in chunks.values()]
    return {word: math.log((total + 1) / (sum(word in seen for seen in chunk_stems) + 0.5)) for word in stems}


def _coverage(stems: Sequence[str], idf: Mapping[str, float], counts: Mapping[str, int]) -> float:
    return sum(idf[word] for word in stems if word in counts)


def _bm25(
    stems: Sequence[str], idf: Mapping[str, float], counts: Mapping[str, int], length: int, average: float
) -> float:
    score = 0.0
    for word in stems:
        tf = counts.get(word, 0)
        if tf:
            score += idf[word] * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
    return score


def _structure(section: Section) -> tuple[float, int]:
    """The share of its items an operator acts on, and its numbered steps."""
    items = [item for item in section.items if item.kind != "heading"]
    if not items:
        return 0.0, 0
    share = sum(ACTIONABLE.get(item.kind, 0.0) for item in items) / len(items)
    return share, sum(1 for item in items if item.numbered)


def _document_hit_mass(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Each document's positive hit mass: what its largest section (the one holding all of it) holds."""
    mass: dict[str, float] = {}
    for candidate in candidates:
        inside = sum(max(score, 0.0) for _, score, _ in candidate.hits)
        mass[candidate.section.path] = max(mass.get(candidate.section.path, 0.0), inside)
    return mass
