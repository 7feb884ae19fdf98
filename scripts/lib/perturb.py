"""Deterministic perturbations of a question: what operators really type, for robustness tests.

Each kind rewrites a question the way an operator would without changing what is asked: one
typo, a synonym, the alert pasted from a pager, a wildcard in a metric or alert name, all lower or
upper case, an added `p99` or `5xx`, a narrative lead-in (in lower case, or opening the sentence with its capital:
"Yesterday …"), the alert pasted with the labels of the
instance that fired (`namespace=shop pod=cart-7f9c6d8b5-x2x4z`: the operator's own names, which no runbook
holds). A decision (answer or refuse) that flips
on any of them depends on the wording, not on what the documents cover.

Every choice (which word gets the typo, which lead-in) is a function of the question's id, so a
run is repeatable and two runs compare question by question. A kind that does not apply (no word
in the synonym table, no identifier to wildcard) yields nothing rather than a copy.

`invented_name_controls` goes the other way: it swaps the identifier of a question for a made-up
name, or puts a made-up product into a plain question; a robust decision still refuses those.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from appliance.text.identifiers import extract_identifiers

KINDS: tuple[str, ...] = (
    "typo",
    "synonym",
    "pager",
    "wildcard",
    "lower_case",
    "upper_case",
    "p99",
    "5xx",
    "lead_in",
    "capitalized_lead_in",
    "instance_labels",
)

# Words operators use for one another. Each maps a word that appears in questions to what
# another operator would type; kept to swaps that do not change what is asked.
SYNONYMS: dict[str, str] = {
    "fix": "sort out",
    "restart": "bounce",
    "error": "failure",
    "errors": "failures",
    "slow": "sluggish",
    "stuck": "hung",
    "delete": "remove",
    "deleted": "removed",
    "increase": "bump",
    "raise": "bump",
    "failing": "breaking",
    "failed": "broke",
    "find": "locate",
    "start": "launch",
    "stop": "halt",
    "fires": "goes off",
    "firing": "going off",
    "alert": "alarm",
    "high": "elevated",
    "disk": "drive",
    "problem": "issue",
    "issue": "problem",
    "big": "large",
    "show": "display",
    "run": "execute",
    "get": "obtain",
    "missing": "gone",
    "quickly": "fast",
    "change": "modify",
    "see": "view",
    "full": "maxed out",
    "broken": "busted",
    "down": "dead",
    "wrong": "off",
    "look": "peek",
}
LEAD_INS: tuple[str, ...] = (
    "we got paged at 3am and ",
    "sorry, quick one - ",
    "on-call here, half asleep: ",
    "hey team, ",
    "ok so ",
)
# The same, opening the sentence as people write one: with a capital, on an everyday word the documents may
# never use (stop 60: "Yesterday the high-lift pump tripped…" was refused, and answered in lower case).
CAPITALIZED_LEAD_INS: tuple[str, ...] = (
    "Yesterday ",
    "Quick one: ",
    "Heads up, ",
    "Weird one tonight: ",
    "Morning all, ",
)
# The operator's own workloads in a pasted alert's labels: namespaces and deployments no runbook names.
NAMESPACES = ("payments", "shop", "orders", "billing", "storefront", "ledger")
DEPLOYMENTS = ("api", "cart", "worker", "frontend", "checkout", "gateway")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
# Made-up names for the controls: syllables that form no English word and no product we know of.
_SYLLABLES = ("vor", "quel", "zan", "trix", "ombo", "drel", "fex", "ulth", "kiv", "pra", "snor", "yim")
_PLAIN_CONTROLS: tuple[str, ...] = (
    "{name} agent keeps crashing after the upgrade, how do I fix it?",
    "{name} exporter stopped sending metrics, where are its logs?",
    "how do I fail over the {name} cluster to the standby site?",
    "{name} license expired on the build hosts, what now?",
)
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_CAMEL_HUMP = re.compile(r"[A-Z][a-z0-9]+")


@dataclass(frozen=True)
class Perturbation:
    kind: str
    text: str


def _pick(key: str, kind: str, count: int) -> int:
    """A stable choice in range(count) for this question and kind."""
    digest = hashlib.sha256(f"{key}\0{kind}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def _outside_identifiers(question: str) -> list[re.Match[str]]:
    """Words that are not part of an identifier (P-HIGH-003 keeps its HIGH)."""
    inside = [m.span() for t in extract_identifiers(question) for m in re.finditer(re.escape(t), question, re.I)]
    return [m for m in _WORD.finditer(question) if not any(start <= m.start() < end for start, end in inside)]


def _plain_words(question: str) -> list[re.Match[str]]:
    """Lower-case words of five or more letters outside identifiers: where a typo is a typo."""
    return [
        m for m in _outside_identifiers(question) if len(m.group()) >= 5 and m.group().isalpha() and m.group().islower()
    ]


def typo(question: str, key: str) -> str | None:
    """Two neighbouring letters in the middle of one word swapped (chlorine → chlroine)."""
    words = [w for w in _plain_words(question) if w.group()[len(w.group()) // 2 - 1] != w.group()[len(w.group()) // 2]]
    if not words:
        return None
    word = words[_pick(key, "typo", len(words))]
    text = word.group()
    middle = len(text) // 2 - 1
    swapped = text[:middle] + text[middle + 1] + text[middle] + text[middle + 2 :]
    return question[: word.start()] + swapped + question[word.end() :]


def synonym(question: str, key: str) -> str | None:
    """One word of the synonym table replaced by its counterpart, its capital kept."""
    words = [m for m in _outside_identifiers(question) if m.group().lower() in SYNONYMS]
    if not words:
        return None
    word = words[_pick(key, "synonym", len(words))]
    replacement = SYNONYMS[word.group().lower()]
    if word.group()[0].isupper():
        replacement = replacement[0].upper() + replacement[1:]
    return question[: word.start()] + replacement + question[word.end() :]


def _alert_names(question: str) -> list[str]:
    """Identifiers that look like alert or metric names: CamelCase of 2+ humps, or snake_case."""
    return [
        t
        for t in (_as_typed(question, i) for i in extract_identifiers(question))
        if len(_CAMEL_HUMP.findall(t)) >= 2 or t.count("_") >= 1
    ]


def _as_typed(question: str, term: str) -> str:
    match = re.search(re.escape(term), question, flags=re.IGNORECASE)
    return match.group() if match else term


def pager(question: str, key: str) -> str:
    """As pasted from a pager: `[FIRING:1]` first, the alert's labels after its name."""
    names = _alert_names(question)
    if names:
        name = names[0]
        question = question.replace(name, f"{name} (severity=warning)", 1)
    return f"[FIRING:1] {question}"


def wildcard(question: str, key: str) -> str | None:
    """One piece of an alert or metric name as a wildcard (kube_pod_status → kube_*_status)."""
    for name in _alert_names(question):
        if name.count("_") >= 2:
            parts = name.split("_")
            position = 1 + _pick(key, "wildcard", len(parts) - 2)
            starred = "_".join([*parts[:position], "*", *parts[position + 1 :]])
            return question.replace(name, starred, 1)
        humps = list(_CAMEL_HUMP.finditer(name))
        if len(humps) >= 3:
            hump = humps[1 + _pick(key, "wildcard", len(humps) - 2)]
            return question.replace(name, name[: hump.start()] + "*" + name[hump.end() :], 1)
    return None


def _append(question: str, addition: str) -> str:
    stripped = question.rstrip()
    mark = "?" if stripped.endswith("?") else ""
    return f"{stripped.rstrip('?').rstrip()} {addition}{mark}"


def lead_in(question: str, key: str, lead_ins: tuple[str, ...] = LEAD_INS, kind: str = "lead_in") -> str:
    """A narrative start before the question; its first letter lowered unless it starts a name."""
    first = question.split(maxsplit=1)[0] if question.split() else ""
    lowered = (
        question
        if not first[:1].isupper() or any(c.isupper() or c.isdigit() for c in first[1:])
        else (question[0].lower() + question[1:])
    )
    return lead_ins[_pick(key, kind, len(lead_ins))] + lowered


def instance_labels(question: str, key: str) -> str | None:
    """The alert as pasted with the labels of the pod that fired: a namespace, and a pod name as Kubernetes
    makes them (deployment, replica-set hash, random suffix)."""
    names = _alert_names(question)
    if not names:
        return None
    digest = hashlib.sha256(f"{key}\0instance".encode()).digest()
    replica_set = digest[:5].hex()[:9]
    suffix = "".join(_BASE36[b % 36] for b in digest[5:10])
    namespace = NAMESPACES[_pick(key, "namespace", len(NAMESPACES))]
    pod = f"{DEPLOYMENTS[_pick(key, 'deployment', len(DEPLOYMENTS))]}-{replica_set}-{suffix}"
    name = names[0]
    return question.replace(name, f"{name} namespace={namespace} pod={pod}", 1)


def perturb(question: str, key: str) -> list[Perturbation]:
    """Every applicable perturbation of one question, in KINDS order; `key` (its id) seeds the choices."""
    candidates: dict[str, str | None] = {
        "typo": typo(question, key),
        "synonym": synonym(question, key),
        "pager": pager(question, key),
        "wildcard": wildcard(question, key),
        "lower_case": question.lower(),
        "upper_case": question.upper(),
        "p99": _append(question, "(p99 latency is up too)"),
        "5xx": _append(question, "(users are getting 5xx)"),
        "lead_in": lead_in(question, key),
        "capitalized_lead_in": lead_in(question, key, CAPITALIZED_LEAD_INS, "capitalized_lead_in"),
        "instance_labels": instance_labels(question, key),
    }
    return [Perturbation(kind, text) for kind in KINDS if (text := candidates[kind]) and text != question]


def invented_name(key: str) -> str:
    """A made-up CamelCase name, stable for a key (Vorquelzan)."""
    pieces = [_SYLLABLES[_pick(key, f"syllable{i}", len(_SYLLABLES))] for i in range(3)]
    return "".join(pieces).capitalize()


def invented_name_controls(questions: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(key, text) of questions that name something that does not exist: each must be refused.

    For each (key, question) naming an alert or metric, that name is swapped for a made-up one of the
    same shape (KubePodCrashLooping → KubeVorquelzanLooping keeps the prefix, which real pagers share);
    and one plain template per question asks about a made-up product.
    """
    controls: list[tuple[str, str]] = []
    for key, question in questions:
        names = _alert_names(question)
        if names:
            name = names[0]
            made_up = invented_name(key)
            humps = _CAMEL_HUMP.findall(name)
            swapped = humps[0] + made_up + humps[-1] if len(humps) >= 3 else made_up + (humps[-1] if humps else "")
            if "_" in name:
                swapped = name.split("_")[0] + "_" + made_up.lower() + "_" + name.split("_")[-1]
            controls.append((f"{key}/swapped", question.replace(name, swapped, 1)))
        template = _PLAIN_CONTROLS[_pick(key, "template", len(_PLAIN_CONTROLS))]
        controls.append((f"{key}/product", template.format(name=invented_name(key + "/product"))))
    return controls
