"""The perturbation suite: operator-style rewrites of a question, and the flip counts over them."""

from __future__ import annotations

import re

from scripts.lib.flips import Question, control_refusals, decision_flips, summarize_flips
from scripts.lib.perturb import KINDS, invented_name, invented_name_controls, perturb, synonym, typo, wildcard

ALERT = "KubePodCrashLooping firing in payments, how do I find the crashing container?"
PLAIN = "the chlorine residual keeps dropping at night, what should I check first?"


def by_kind(question: str, key: str = "q-1") -> dict[str, str]:
    return {p.kind: p.text for p in perturb(question, key)}


def test_every_kind_applies_to_a_question_naming_an_alert() -> None:
    variants = by_kind(ALERT)
    assert set(variants) == set(KINDS)
    assert variants["pager"] == (
        "[FIRING:1] KubePodCrashLooping (severity=warning) firing in payments, how do I find the crashing container?"
    )
    assert variants["wildcard"] in {
        ALERT.replace("KubePodCrashLooping", "Kube*CrashLooping"),
        ALERT.replace("KubePodCrashLooping", "KubePod*Looping"),
    }
    assert variants["upper_case"] == ALERT.upper()
    assert variants["lower_case"] == ALERT.lower()
    assert variants["p99"].endswith("container (p99 latency is up too)?")
    assert variants["5xx"].endswith("container (users are getting 5xx)?")
    labelled = re.fullmatch(
        r"KubePodCrashLooping namespace=[a-z]+ pod=[a-z]+-[0-9a-f]{9}-[0-9a-z]{5} firing in payments, (.*)",
        variants["instance_labels"],
    )
    assert labelled is not None and labelled.group(1) == "how do I find the crashing container?"


def test_instance_labels_apply_only_to_a_pasted_alert() -> None:
    assert "instance_labels" not in by_kind(PLAIN)


def test_perturbations_are_a_function_of_the_question_and_its_key() -> None:
    assert perturb(PLAIN, "a") == perturb(PLAIN, "a")
    # Another key may choose another word for the typo, but always exactly one word changes.
    for key in ("a", "b", "c", "d"):
        changed = [(x, y) for x, y in zip(PLAIN.split(), (typo(PLAIN, key) or "").split(), strict=True) if x != y]
        assert len(changed) == 1
        original, misspelt = changed[0]
        assert sorted(original) == sorted(misspelt) and len(original) >= 5


def test_a_typo_or_a_synonym_never_touches_an_identifier() -> None:
    question = "VLV-3042-B stuck half open, should maintenance replace it?"
    for key in map(str, range(20)):
        text = typo(question, key)
        assert text is not None and text.startswith("VLV-3042-B ")
    # "high" is in the synonym table, but inside the tag it is part of a name.
    assert synonym("locking out P-HIGH-003 for a seal job", "k") is None
    assert synonym("P-HIGH-003 is stuck", "k") == "P-HIGH-003 is hung"


def test_kinds_that_do_not_apply_yield_nothing() -> None:
    variants = by_kind("what does the pump do")
    assert "wildcard" not in variants  # no alert or metric name
    assert "lower_case" not in variants  # already lower case: no copy of the original
    assert wildcard("pump pressure low", "k") is None


def test_a_snake_case_metric_gets_a_wildcard_in_a_middle_piece() -> None:
    question = "kube_pod_container_status_restarts_total keeps climbing"
    text = wildcard(question, "k")
    assert text is not None
    name = text.split()[0]
    assert name.startswith("kube_") and name.endswith("_total") and name.count("*") == 1


def test_a_lead_in_keeps_the_case_of_a_leading_name() -> None:
    assert by_kind(ALERT)["lead_in"].endswith(ALERT)
    assert by_kind("How do I drain the basin?")["lead_in"].endswith("how do I drain the basin?")


def test_a_capitalized_lead_in_opens_the_sentence_with_its_capital() -> None:
    variant = by_kind("How do I drain the basin?")["capitalized_lead_in"]
    assert variant[0].isupper() and variant.endswith("how do I drain the basin?")
    assert by_kind(ALERT)["capitalized_lead_in"].endswith(ALERT)


def test_invented_names_are_stable_and_not_words() -> None:
    assert invented_name("x") == invented_name("x")
    assert invented_name("x").isalpha() and invented_name("x")[0].isupper()
    controls = dict(invented_name_controls([("q", ALERT), ("p", PLAIN)]))
    assert "KubePodCrashLooping" not in controls["q/swapped"]
    assert controls["q/swapped"].startswith("Kube") and "Looping firing in payments" in controls["q/swapped"]
    assert "p/swapped" not in controls  # no name to swap in a plain question
    assert invented_name("p/product") in controls["p/product"]


def refuse_on_made_up_or_typo(text: str) -> tuple[bool, str]:
    """A brittle decision on purpose: refuses any word the 'documents' do not hold."""
    known = set((ALERT + " " + PLAIN).lower().replace("?", " ").replace(",", " ").split())
    unknown = [w for w in text.lower().replace("?", " ").replace(",", " ").split() if w not in known]
    return (bool(unknown), f"the documents never mention {unknown[0]}" if unknown else "matching passages found")


def test_flip_counts_separate_answerable_and_unanswerable_questions() -> None:
    questions = [Question("s", "a1", ALERT, True), Question("s", "u1", "frobnicate the widget", False)]
    rows = decision_flips(refuse_on_made_up_or_typo, questions)
    summary = summarize_flips(rows)
    answerable = summary["answerable"]
    assert answerable["questions"] == 1 and answerable["refused_originals"] == 0
    # The brittle decision refuses every variant that adds or misspells a word; case changes do not flip it.
    assert answerable["per_kind"]["typo"] == {
        "variants": 1,
        "flips": 1,
        "flip_rate": 1.0,
        "newly_refused": 1,
        "newly_answered": 0,
    }
    assert answerable["per_kind"]["lower_case"]["flips"] == 0
    assert answerable["per_kind"]["upper_case"]["flips"] == 0
    assert answerable["flips"] == sum(k["flips"] for k in answerable["per_kind"].values())
    # Unanswerable: refused already, and every variant still refused: no flip.
    assert summary["unanswerable"]["refused_originals"] == 1 and summary["unanswerable"]["flips"] == 0


def test_controls_count_the_made_up_names_that_were_answered() -> None:
    questions = [Question("s", "a1", ALERT, True), Question("s", "u1", PLAIN, False)]

    def answers_everything(text: str) -> tuple[bool, str]:
        return False, "matching passages found"

    report = control_refusals(answers_everything, questions)
    assert report["controls"] == 2  # the swapped alert and one made-up product, for the answerable question only
    assert report["answered"] == 2
    assert report["by_kind"] == {"swapped": {"controls": 1, "answered": 1}, "product": {"controls": 1, "answered": 1}}
    assert control_refusals(refuse_on_made_up_or_typo, questions)["answered"] == 0
