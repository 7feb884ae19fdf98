"""After generation, repaired rather than only judged: citations moved to the source that holds the sentence,
rewordings told from inventions, value questions answered in words, siblings told from general words, and
the sources' own lines quoted where the answer leaves its key fact out. Pure functions: no model, no index.

Every rule is also run on perturbed inputs (case, a lead-in, another wording of the same value, another
general word in the question): what does not change the meaning must not change the decision.
"""

from __future__ import annotations

import pytest

from appliance.answer.generated.abstention import abstention_reason, is_sibling, other_subject_reason, value_in_sources
from appliance.answer.generated.attribution import attribute_citations
from appliance.answer.generated.citations import parse_citations
from appliance.answer.generated.passages import Window
from appliance.answer.generated.prompt import Source, source_of
from appliance.answer.generated.quotes import MAX_QUOTES, select_quotes
from appliance.answer.generated.support import REWORD_FLOOR, SupportJudge, check_support
from appliance.answer.generated.verdict import invented_specifics, judge_answer
from appliance.text.frequencies import frequencies_in
from appliance.text.sentences import split_sentences
from tests.fakes import chunk_row

CYLINDER = """## Reconnecting the regulator
Fit a new lead gasket, part RW-GSK-0410, at every connection. Never reuse a gasket.
Open the cylinder valve one quarter turn and check the joint with ammonia vapour."""
ALARMS = """## Chlorine leak
On ALM-CL2-LEAK-02 PLC-400 closes ACT-451 to ACT-454 and starts the scrubber SCB-401.
Do not enter the room without SCBA."""
ROTATION = """## Credentials
The Rails PostgreSQL password is rotated quarterly by the database team.
Run `sudo gitlab-ctl reconfigure` after the new password is written to /etc/gitlab/gitlab.rb."""
SOURCES = {1: ALARMS, 2: CYLINDER, 3: ROTATION}


def judged(answer: str, question: str = "", sources: dict[int, str] = SOURCES, **kwargs: object):  # type: ignore[no-untyped-def]
    parsed = parse_citations(answer, len(sources))
    judge = SupportJudge(sources, question=question, reword_floor=REWORD_FLOOR, **kwargs)  # type: ignore[arg-type]
    return attribute_citations(parsed, judge), judge


# --- citations repaired ------------------------------------------------------------------------


def test_a_sentence_cited_to_the_wrong_source_gets_the_number_of_the_source_that_holds_it() -> None:
    attribution, judge = judged("Use a new lead gasket, part RW-GSK-0410, at every connection [1].")
    assert attribution.text == "Use a new lead gasket, part RW-GSK-0410, at every connection [2]."
    assert [(c.sentence, c.cited, c.corrected) for c in attribution.corrected] == [
        ("Use a new lead gasket, part RW-GSK-0410, at every connection.", (1,), (2,))
    ]
    assert judge.report(attribution.details).grounded


def test_a_repaired_marker_keeps_the_citation_of_the_sentences_that_had_inherited_it() -> None:
    answer = "PLC-400 starts the scrubber SCB-401. Fit a new lead gasket RW-GSK-0410 at every connection [1]."
    attribution, judge = judged(answer)
    assert attribution.text == (
        "PLC-400 starts the scrubber SCB-401 [1]. Fit a new lead gasket RW-GSK-0410 at every connection [2]."
    )
    assert [s.cited for s in attribution.sentences] == [frozenset({1}), frozenset({2})]
    assert judge.report(attribution.details).grounded


def test_a_sentence_no_single_source_holds_keeps_its_citation_and_is_reported() -> None:
    attribution, judge = judged("Fit gasket RW-GSK-0411 at every connection [2].")
    assert attribution.corrected == [] and attribution.text.endswith("[2].")
    assert judge.report(attribution.details).unsupported == ["Fit gasket RW-GSK-0411 at every connection."]


def test_an_uncited_sentence_that_a_source_holds_is_cited_to_it() -> None:
    attribution, judge = judged("Never reuse a gasket.")
    assert attribution.text == "Never reuse a gasket [2]." and attribution.attributed == [2]
    assert judge.report(attribution.details).grounded


# --- rewordings and inventions -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        # The question's own words restated around the source's part number: the direct answer.
        "The gasket part number to use on the regulator after a cylinder change is RW-GSK-0410.",
        "the gasket part number to use on the regulator after a cylinder change is RW-GSK-0410.",  # lower case
        "So, the gasket part number to use on the regulator after a cylinder change is RW-GSK-0410.",  # lead-in
    ],
)
def test_a_faithful_rewording_is_not_flagged_and_is_cited_to_the_source_it_rewords(answer: str) -> None:
    question = "reconnecting the regulator after a cylinder change - what gasket part number do I use?"
    attribution, judge = judged(answer, question)
    detail = attribution.details[0]
    assert detail.supported and detail.reworded and detail.cited == (2,), detail.reason
    assert judge.report(attribution.details).grounded


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("The gasket part number to use on the regulator is RW-GSK-0411 [2].", "identifier RW-GSK-0411"),  # a tag
        ("Open the cylinder valve two turns and check the joint with ammonia vapour [2].", "number two"),
        ("Close the cylinder valve one quarter turn and check the joint with ammonia vapour [2].", "opposite"),
        ("You may reuse the lead gasket [2].", "negation"),  # a negation flipped
        ("Run `sudo gitlab-ctl restart` after the new password is written [3].", "code"),  # a command
        ("The Rails PostgreSQL password is rotated monthly by the database team [3].", "frequency"),
    ],
)
def test_an_invented_number_tag_command_frequency_negation_or_opposite_is_flagged_even_as_a_rewording(
    answer: str, why: str
) -> None:
    attribution, judge = judged(answer, "which gasket and how do I reconnect?")
    detail = attribution.details[0]
    assert not detail.supported and not detail.reworded
    assert why in detail.reason
    assert not judge.report(attribution.details).grounded


@pytest.mark.parametrize(
    ("answer", "invented"),
    [
        ("The gasket part number to use on the regulator is RW-GSK-0411 [2].", ["RW-GSK-0411"]),
        ("Open the cylinder valve two turns and check the joint with ammonia vapour [2].", ["two"]),
        ("Run `sudo gitlab-ctl restart` after the new password is written [3].", ["sudo gitlab-ctl restart"]),
        ("The Rails PostgreSQL password is rotated monthly by the database team [3].", ["monthly"]),
        ("Evacuate the building and call the fire brigade before any repair [2].", []),  # wording only
        # A tag one source holds and a part another holds, cited to one of them: nothing is invented.
        ("On ALM-CL2-LEAK-02 fit part RW-GSK-0410 and evacuate the whole building at once [2].", []),
    ],
)
def test_the_warning_names_the_tags_numbers_frequencies_and_commands_no_given_source_holds(
    answer: str, invented: list[str]
) -> None:
    attribution, judge = judged(answer)
    assert not judge.report(attribution.details).grounded
    assert invented_specifics(judge, attribution.sentences, attribution.details) == invented


@pytest.mark.parametrize(
    "answer",
    [
        "You may reuse the lead gasket [2].",
        "Close the cylinder valve one quarter turn and check the joint with ammonia vapour [2].",
    ],
)
def test_a_sentence_saying_the_opposite_of_its_source_is_named_as_contradicting_it(answer: str) -> None:
    sources = [_sop(n, f"SOP {n}", "Steps", text) for n, text in SOURCES.items()]
    verdict = judge_answer("can I reuse the gasket, and how do I open the valve?", answer, sources)
    assert verdict.contradicting == [answer.replace(" [2]", "")]
    assert verdict.invented == [] and not verdict.support.grounded


def test_a_sentence_mostly_in_no_source_is_flagged() -> None:
    attribution, judge = judged("Evacuate the building and call the fire brigade before any repair [2].")
    assert judge.report(attribution.details).unsupported == [
        "Evacuate the building and call the fire brigade before any repair."
    ]


def test_without_a_reword_floor_the_support_check_stays_as_strict_as_before() -> None:
    sentence = parse_citations("The gasket part number to use after a cylinder change is RW-GSK-0410 [2].", 3)
    strict = check_support(sentence.sentences, SOURCES, question="what gasket part number do I use?")
    assert not strict.grounded and not strict.details[0].reworded


def test_a_command_shown_through_a_markdown_link_is_the_sources_command() -> None:
    source = {1: "Otherwise, use state surgery ([`terraform import`](https://example.org/import.html)) to import it."}
    answer = "Otherwise use state surgery with `terraform import` to import it [1]."
    report = check_support(parse_citations(answer, 1).sentences, source)
    assert report.grounded, report.details[0].reason


def test_a_code_block_inside_a_list_item_is_one_code_unit() -> None:
    text = "1. Validate the resolution:\n    ```promql\n    cluster:kubevirt_virt_launcher_failed:count\n    ```\n"
    assert [s.kind for s in split_sentences(text)] == ["item", "code"]


def test_a_number_inside_a_command_line_a_source_holds_is_the_sources() -> None:
    source = {1: "```\nknife ssh 'roles:X' \"dpkg-query --show 'linux-*' | awk '/4\\.13/ {print $1}'\"\n```"}
    code = "```\nknife ssh 'roles:X' \"dpkg-query --show 'linux-*' | awk '/4\\.13/ {print $1}'\"\n```"
    report = check_support(parse_citations("Run [1]:\n" + code, 1).sentences, source)
    assert report.grounded, report.details


@pytest.mark.parametrize(
    ("sentence", "supported"),
    [
        ("It lists the peers with their IDs [1].", True),  # the plural of an acronym the source writes singular
        ("Rate limiting becomes Redis-specific [1].", True),  # English compounding, not a tag
        ("It lists the peers with their UUIDs [1].", False),
    ],
)
def test_plurals_of_acronyms_and_word_compounds_are_words(sentence: str, supported: bool) -> None:
    source = {1: "The command lists every peer with its ID. Rate limiting is specific to Redis and becomes global."}
    detail = check_support(parse_citations(sentence, 1).sentences, source, reword_floor=REWORD_FLOOR).details[0]
    assert bool(detail.supported) is supported, detail.reason


# --- value questions answered in words ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["quarterly", "every quarter", "once a quarter", "every 3 months", "every three months", "four times a year"],
)
def test_a_frequency_is_one_value_however_it_is_written(text: str) -> None:
    assert set(frequencies_in(f"Rotate it {text}.")) == set(frequencies_in("Rotate it quarterly."))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("twice a year", "every 6 months"),
        ("nightly", "every day"),
        ("every shift", "each shift"),
        ("hourly", "every hour"),
    ],
)
def test_the_same_frequency_in_other_words_agrees(a: str, b: str) -> None:
    assert frequencies_in(a).keys() == frequencies_in(b).keys()


def test_frequencies_that_differ_do_not_agree() -> None:
    assert frequencies_in("monthly").keys() != frequencies_in("quarterly").keys()
    assert frequencies_in("3 times per day").keys() == {"1/8h"}  # not also "per day"


QUESTIONS = [
    "how often is the rails postgres password rotated?",
    "How often is the Rails PostgreSQL password rotated?",
    "we got paged at 3am and wonder: how often is the rails postgres password rotated?",
    "how frequently does the rails postgresql password get rotated",
]


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize(
    "answer",
    [
        "The password is rotated quarterly.",
        "The database team changes it every quarter [3].",  # reworded: not a supported sentence
        "Once a quarter [1].",  # cited to the wrong source
        "It is rotated every 3 months [3].",
    ],
)
def test_a_value_question_answered_in_words_that_a_given_source_states_stands(question: str, answer: str) -> None:
    attribution, judge = judged(answer, question)
    assert abstention_reason(question, judge.report(attribution.details), SOURCES) is None


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize(
    "answer",
    ["The password is rotated monthly [3].", "It is rotated every 90 days [3].", "The database team rotates it [3]."],
)
def test_a_value_no_given_source_states_does_not_answer_it(question: str, answer: str) -> None:
    attribution, judge = judged(answer, question)
    assert abstention_reason(question, judge.report(attribution.details), SOURCES) is not None


def test_a_value_is_found_with_its_unit_and_not_when_the_question_names_it() -> None:
    assert value_in_sources("Every 15 minutes.", "how often?", ["Check it every 15 minutes."])
    assert not value_in_sources("Every 15 hours.", "how often?", ["Check it every 15 minutes."])
    assert not value_in_sources("It runs quarterly.", "is it rotated quarterly, how often?", ["rotated quarterly"])


# --- siblings, graded ---------------------------------------------------------------------------

PS2 = "[1] SOP-PMP-002 Pump Station PS-2 (Hillcrest)\nThe PS-2 lead pump starts at 24.0 ft and stops at 32.0 ft."
PS3 = "[2] SOP-PMP-003 Pump Station PS-3 (Oakridge)\nPS-3 runs on tank level from the Oakridge tank."
RUNBOOK = "[1] Sidekiq queues › Mitigation\nScale the urgent-other shard; page the on-call if sev1 persists."
HANDBOOK = "[2] Incident roles\nOn gitlab.com a sev2 incident needs an incident manager."


@pytest.mark.parametrize(
    "question",
    [
        "what are the start and stop setpoints for the PS-3 Oakridge pumps?",
        "WHAT ARE THE START AND STOP SETPOINTS FOR THE PS-3 OAKRIDGE PUMPS?",
        "we got paged at 3am and - setpoints for the ps-3 oakridge pumps?",
    ],
)
def test_an_answer_citing_a_sibling_of_what_was_asked_is_refused_however_it_is_asked(question: str) -> None:
    assert other_subject_reason(question, cited={1: PS2}, given={1: PS2, 2: PS3}) is not None


@pytest.mark.parametrize(
    "question",
    [
        "sidekiq urgent-other queue backing up on gitlab.com, what do I do?",  # a product the runbook does not repeat
        "sidekiq urgent-other queue backing up during a sev2, what do I do?",  # sev1 is mentioned, not the subject
        "SIDEKIQ URGENT-OTHER QUEUE BACKING UP DURING A SEV2 ON GITLAB.COM",
    ],
)
def test_general_words_the_cited_runbook_does_not_repeat_are_not_a_sibling(question: str) -> None:
    assert other_subject_reason(question, cited={1: RUNBOOK}, given={1: RUNBOOK, 2: HANDBOOK}) is None


def _sop(n: int, title: str, section: str, text: str) -> Source:
    row = chunk_row(n, f"docs/{title}.md", title, section, text)
    return source_of(n, Window((row,), (row,)))


def test_a_line_restating_the_question_does_not_make_a_sibling_sop_the_subject() -> None:
    """The model introduced PS-2's setpoints with "…for the PS-3 pumps are:", which the checker cited to a
    scope section naming PS-3 in passing: the values still rest on the PS-2 SOP alone."""
    ps2 = _sop(
        1,
        "SOP-PMP-002 Pump Station PS-2 (Hillcrest)",
        "5. Normal control",
        "Lead pump starts at TANK_LEAD_START_FT = 24.0 and stops at TANK_LEAD_STOP_FT = 32.0.",
    )
    scope = _sop(
        2,
        "SOP-PMP-001 High-Lift Pump Start and Stop",
        "2. Scope",
        "The booster stations PS-2 and PS-3 are covered by SOP-PMP-002.",
    )
    question = "what are the start and stop setpoints for the PS-3 Oakridge pumps?"
    answer = (
        "The start and stop setpoints for the PS-3 Oakridge pumps are: [2]\n"
        "- TANK_LEAD_START_FT = 24.0 [1]\n- TANK_LEAD_STOP_FT = 32.0 [1]"
    )
    verdict = judge_answer(question, answer, [ps2, scope])
    assert verdict.refusal_reason is not None and "PS-3" in verdict.refusal_reason
    # The same values asked about PS-2 stand.
    assert not judge_answer(
        question.replace("PS-3 Oakridge", "PS-2 Hillcrest"),
        answer.replace("PS-3 Oakridge", "PS-2 Hillcrest"),
        [ps2, scope],
    ).refused


@pytest.mark.parametrize(
    ("a", "b", "sibling"),
    [
        ("PS-3", "PS-2", True),
        ("sev1", "sev2", True),
        ("etcdHighFsyncDurations", "etcdHighCommitDurations", True),
        ("PS-3", "ps-3", False),
        ("gitlab.com", "gitlab-com-runbooks", False),
        ("KubeQuotaExceeded", "KubeQuotaAlmostFull", False),
    ],
)
def test_a_sibling_has_the_same_shape_and_one_part_different(a: str, b: str, sibling: bool) -> None:
    assert is_sibling(a, b) is sibling


# --- the sources' own lines ---------------------------------------------------------------------


def quotes_for(answer: str, question: str, sources: dict[int, str] = SOURCES):  # type: ignore[no-untyped-def]
    attribution, _ = judged(answer, question, sources)
    return select_quotes(attribution.text, attribution.sentences, attribution.details, sources)


def test_the_line_a_sentence_rests_on_is_quoted_when_it_holds_a_key_fact_the_answer_leaves_out() -> None:
    quotes = quotes_for("Reconfigure after the new password is written [3].", "new db password?")
    assert [(q.n, q.why, q.text) for q in quotes] == [
        (3, "key fact", "Run `sudo gitlab-ctl reconfigure` after the new password is written to /etc/gitlab/gitlab.rb.")
    ]


def test_nothing_is_quoted_when_the_answer_carries_the_sources_words() -> None:
    answer = "Run `sudo gitlab-ctl reconfigure` after the new password is written to /etc/gitlab/gitlab.rb [3]."
    assert quotes_for(answer, "new db password?") == []


def test_a_rewording_has_its_sources_line_quoted_under_it() -> None:
    question = "reconnecting the regulator after a cylinder change - what gasket part number do I use?"
    quotes = quotes_for("The gasket part number to use on the regulator is RW-GSK-0410.", question)
    assert quotes[0].why == "reworded" and quotes[0].n == 2 and "Fit a new lead gasket" in quotes[0].text
    assert quotes[0].sentence == "The gasket part number to use on the regulator is RW-GSK-0410 [2]."[:-5] + "."


def test_quotes_are_few_and_in_answer_order() -> None:
    many = {n: f"Step {n}: set pump P-{n}0 to {n}5 % with tool T-{n}." for n in range(1, 7)}
    answer = " ".join(f"Step {n}: set the pump to the right speed with the tool [{n}]." for n in range(1, 7))
    quotes = quotes_for(answer, "how do I set the pumps?", many)
    assert [q.n for q in quotes] == list(range(1, MAX_QUOTES + 1))


PREPARED = {1: "Under normal operation there should be zero prepared transactions on the main cluster."}


@pytest.mark.parametrize(
    "question",
    [
        "how many prepared transactions are ok on the main postgres?",
        "How many prepared xacts is normal on the main cluster",
        "paged for prepared transactions again - how many are acceptable?",
    ],
)
@pytest.mark.parametrize(
    "answer",
    ["The number of prepared transactions should be zero.", "There should be 0 prepared transactions [1]."],
)
def test_a_count_of_zero_that_a_given_source_states_answers_a_how_many_question(question: str, answer: str) -> None:
    attribution, judge = judged(answer, question, PREPARED)
    assert abstention_reason(question, judge.report(attribution.details), PREPARED) is None


def test_a_count_no_given_source_states_still_does_not_answer_it() -> None:
    question = "how many prepared transactions are ok on the main postgres?"
    attribution, judge = judged("There should be at most two prepared transactions [1].", question, PREPARED)
    assert abstention_reason(question, judge.report(attribution.details), PREPARED) is not None


@pytest.mark.parametrize(
    ("answer", "stands"),
    [
        ("Logs are kept for 13 months [1].", True),
        ("Keep them 13 [1].", False),
        ("The retention is zero [1].", False),
    ],
)
def test_how_long_is_answered_by_a_number_with_its_unit_not_a_bare_one(answer: str, stands: bool) -> None:
    sources = {1: "Audit logs are kept for 13 months, then zero copies remain."}
    questions = ("how long are audit logs kept?", "How long do we keep the audit logs", "how soon are logs purged?")
    for question in questions:
        attribution, judge = judged(answer, question, sources)
        assert (abstention_reason(question, judge.report(attribution.details), sources) is None) is stands
