"""The heading and question word lists of the rule-based section choice (rule_choice.py), kept in the lab only
as the benchmarks' baseline: the appliance's choice is fitted (answer/quoted/choice.py) and reads no word list.

How procedures and questions about them are worded: the English of choosing the section to show.

Headings fall into three families, read as graded signals, never as a veto:
- front matter: what is read, not done (Purpose, Scope, References, Records, Meaning, Impact…);
- generic procedure headings: a heading that names only that steps follow ("6. Procedure",
  "Mitigation", "Operator response"); its subject is its parent's (the document's title);
- any other heading names its own subject ("6.3 Response to ALM-CL2-LEAK-02", "Locked account").

A question's intent (to fix or to find a cause) leans toward the matching generic heading of a runbook:
"how do I fix it" toward Mitigation or Resolution, "how do I find out why" toward Diagnosis.
"""

from __future__ import annotations

import re

_NUMBERING = re.compile(r"^\s*(?:(?:section|step|part|chapter|appendix)\s+)?[\dA-Za-z]{0,3}(?:\.\d+)*[.):]?\s+", re.I)
_WORD = re.compile(r"[a-z]+")

FRONT_MATTER = frozenset(
    [
        "purpose",
        "scope",
        "references",
        "reference",
        "records",
        "definitions",
        "glossary",
        "revision",
        "revisions",
        "history",
        "approval",
        "approvals",
        "control",
        "responsibilities",
        "roles",
        "introduction",
        "overview",
        "background",
        "meaning",
        "impact",
        "summary",
        "contents",
        "related",
        "appendix",
        "attachments",
        "training",
        "abbreviations",
        "acronyms",
        "further",
        "info",
        "information",
        "notes",
        "additional",
        "material",
        "see",
        "also",
        "links",
        "prerequisites",
        "requirements",
        "applicability",
        "document",
        "owner",
        "owners",
        "change",
        "log",
        "changelog",
    ]
)
GENERIC_PROCEDURE = frozenset(
    [
        "procedure",
        "procedures",
        "steps",
        "step",
        "instructions",
        "response",
        "responses",
        "actions",
        "action",
        "mitigation",
        "mitigations",
        "remediation",
        "resolution",
        "resolutions",
        "diagnosis",
        "diagnostics",
        "troubleshooting",
        "operator",
        "operating",
        "operation",
        "operations",
        "process",
        "how",
        "to",
        "general",
        "immediate",
        "recovery",
        "runbook",
        "playbook",
        "checklist",
    ]
)
# A heading in the plural of these holds several procedures side by side ("4. Procedures", "7. Operator
# responses"), not the phases of one ("6. Procedure", "Steps").
_COLLECTION = frozenset(
    ["procedures", "responses", "runbooks", "playbooks", "checklists", "scenarios", "cases", "alarms"]
)
# Heading words a question's intent leans toward, and the question words that show the intent.
_FIX_HEADINGS = frozenset(
    ["mitigation", "remediation", "resolution", "fix", "fixes", "workaround", "recovery", "repair", "solution"]
)
_CAUSE_HEADINGS = frozenset(
    ["diagnosis", "diagnostics", "troubleshooting", "investigation", "symptoms", "debugging", "checks"]
)
_FIX_QUESTION = re.compile(
    r"\b(fix|fixe[sd]|fixing|resolve[sd]?|resolving|remed(y|iate)|mitigate|repair|recover|clear|solve|"
    r"get (it|this|them|the \w+|\w+) (back|past|out|working|running)|get out of|sort (it|this) out|make it stop|"
    r"stop (it|the alert))\b",
    re.I,
)
_CAUSE_QUESTION = re.compile(
    r"\b(diagnos\w*|find out|figure out|work out|why|investigat\w*|troubleshoot\w*|debug\w*|root cause|"
    r"what('s| is) (wrong|causing|going on)|what caused|where (it|the problem) (is|comes from))\b",
    re.I,
)


def heading_words(heading: str) -> list[str]:
    """The lower-case words of one heading, without its numbering ("6.2 Isolate…" → isolate …)."""
    return _WORD.findall(_NUMBERING.sub("", heading, count=1).lower())


def front_matter_share(heading: str) -> float:
    """The share of the heading's words that are front-matter words (1.0 for "Purpose", 0 for a task)."""
    words = heading_words(heading)
    return sum(word in FRONT_MATTER for word in words) / len(words) if words else 0.0


def is_generic_procedure(heading: str) -> bool:
    """A heading that names only that steps follow: its subject is its parent's."""
    words = heading_words(heading)
    return bool(words) and all(word in GENERIC_PROCEDURE for word in words)


def names_a_collection(heading: str) -> bool:
    """Whether a heading names several procedures side by side: its parts are not phases of one."""
    return any(word in _COLLECTION for word in heading_words(heading))


def intent_affinity(question: str, heading: str) -> float:
    """1.0 when the heading is the kind of section the question's intent asks for (Mitigation for "how do
    I fix", Diagnosis for "find out why"), else 0.0."""
    words = set(heading_words(heading))
    if words & _FIX_HEADINGS and _FIX_QUESTION.search(question):
        return 1.0
    if words & _CAUSE_HEADINGS and _CAUSE_QUESTION.search(question):
        return 1.0
    return 0.0


_STEP_HEADING = re.compile(r"^\s*(?:step\s*)?\d{1,2}(?:[.):]\s|\s)", re.I)


def is_numbered_step_heading(heading: str) -> bool:
    """ "1. Check the triage dashboard", "Step 2 Drill down": a heading numbered as a step of its parent, not
    as a section of a document ("6.1 Prepare" is numbered under section 6)."""
    return bool(_STEP_HEADING.match(heading))
