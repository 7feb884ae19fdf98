"""Citation markers, sentence splitting, the support check and evidence highlighting.

Pure functions: no model, no index. The support cases are written over passages of the demo
SOPs (docs_corpus/) and double as the calibration set of the default thresholds in support.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.generated.attribution import attribute_citations
from appliance.answer.generated.citations import CitedSentence, parse_citations
from appliance.answer.generated.support import LEXICAL_THRESHOLD, SEMANTIC_THRESHOLD, SupportJudge, check_support
from appliance.text.sentences import split_sentences

# Passages of docs_corpus/SOP-FLT-002 and SOP-PMP-001, hard line wraps kept, plus a GitLab note.
IFE_HIHI = """### 5.2 IFE above 0.50 NTU (ALM-TURB-IFE-HIHI-0n)

1. Confirm PLC-300 has removed the filter from service: influent and effluent valves
   closed on the HMI (for filter F-4: VLV-3041-B and VLV-3042-B CLOSED).
2. If the filter was not removed automatically, remove it from HMI page FILTER n with
   **Remove from service**. If the HMI is not available, use OIP-300 in the filter
   gallery.
3. Note the peak IFE value and its duration from the trend. If IFE exceeded 1.0 NTU in
   two consecutive 15-minute readings, this is a reportable event: tell the Water
   Quality Manager (ext. 2310).
4. Check that the five remaining filters stay at or below 4.0 gpm/sq ft. Reduce plant
   flow if needed.
5. Investigate before the filter returns to service: see the troubleshooting table in
   section 7. The filter must be backwashed, go through filter-to-waste to below
   0.10 NTU, and the Shift Supervisor must approve its return.
"""
CFE_HIHI = """### 5.3 CFE above 0.30 NTU (ALM-TURB-CFE-HIHI)

1. Carry out 5.1 steps 1 to 3 at once.
2. Remove the worst-performing filter from service if that brings the CFE down and the
   loading rate of the others allows it.
3. Reduce plant production by 1.0 MGD steps (every 15 minutes) to lower the loading
   rate, as long as the clearwell level stays above 12.0 ft.
4. Raise the chlorine dose at the clearwell inlet so that AIT-404 is at the top of its
   range (2.4 mg/L): particles shield organisms from disinfection, so extra CT margin
   is needed. Watch the entry point (AIT-401) stays below 2.5 mg/L.
5. Take a bench grab of CFE every 30 minutes and record it on RWTP-F-055.
6. Inform the Shift Supervisor (ext. 2101). If the CFE is not below 0.30 NTU within
   1 hour, the Supervisor informs the Water Quality Manager and the Plant
   Superintendent.
"""
PUMPS = """The discharge valves are motor-operated butterfly valves with a 60-second stroke. Each
pump has a silent check valve downstream of the discharge valve.

The finished water header pressure transmitter is PIT-430 and the plant effluent flow
meter is FIT-430. In AUTO, PLC-400 holds the header pressure at the setpoint of
**72 psi** by changing the speed of the lead VFD pump, and starts or stops a
constant-speed pump when the VFD pump stays above 95 % or below 60 % speed for 10
minutes.

The ejector water for the chlorinators CHL-401 and CHL-402 is taken from the
high-lift header. If all high-lift pumps stop, chlorine gas feed stops too.
"""
CFE_HI = """1. Acknowledge the alarm and open HMI page FILTERS. Compare AIT-301 to AIT-306: find
   the filter(s) driving the CFE rise.
5. Do not increase plant flow while the alarm is active. Plant flow changes must be
   limited to 1.0 MGD per 15 minutes (SOP-CW-001).
"""
GITLAB = """## Reconfigure

After editing /etc/gitlab/gitlab.rb, run `sudo gitlab-ctl reconfigure` to apply the changes.
Reconfigure restarts the services whose configuration changed. Check the status with
`sudo gitlab-ctl status`; every service should report `run:`. If a service is down, read its
logs with `sudo gitlab-ctl tail <service>`. Version 16.11.2 requires PostgreSQL 14 or later.
The Prometheus exporter listens on 10.0.0.1:9090 by default.
"""
SOURCES = {1: IFE_HIHI, 2: CFE_HIHI, 3: PUMPS, 4: CFE_HI, 5: GITLAB}


def _sentence(text: str, *cited: int, kind: str = "text") -> CitedSentence:
    return CitedSentence(text=text, cited=frozenset(cited), start=0, end=len(text), kind=kind)


def _check(text: str, *cited: int, **kwargs: object) -> tuple[bool | None, str]:
    detail = check_support([_sentence(text, *cited)], SOURCES, **kwargs).details[0]  # type: ignore[arg-type]
    return detail.supported, detail.reason


# --- markers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "numbers"),
    [
        ("Close the valve [1].", [1]),
        ("Close the valve [2, 3].", [2, 3]),
        ("Close the valve [2,3].", [2, 3]),
        ("Close the valve [1][2].", [1, 2]),
        ("Close the valve [1-3].", [1, 2, 3]),
        ("Close the valve [3–1].", [1, 2, 3]),
        ("Close the valve [Source 2].", [2]),
        ("Close the valve [source 2].", [2]),
        ("Close the valve [Sources 1, 2 and 3].", [1, 2, 3]),
        ("Close the valve [Source 1, Source 3].", [1, 3]),
        ("Close the valve 【1】.", [1]),
        ("Close the valve [1; 3].", [1, 3]),
    ],
)
def test_parse_accepts_every_marker_form(answer: str, numbers: list[int]) -> None:
    report = parse_citations(answer, n_sources=3)
    assert report.cited == numbers
    assert report.removed == []
    assert report.sentences[0].cited == frozenset(numbers)


def test_parse_rewrites_valid_markers_in_canonical_form() -> None:
    report = parse_citations("Close it [Source 2]. Open it 【1】. Drain it [1-3].", n_sources=3)
    assert report.text == "Close it [2]. Open it [1]. Drain it [1, 2, 3]."
    assert [report.text[m.start : m.end] for m in report.markers] == ["[2]", "[1]", "[1, 2, 3]"]
    assert [m.numbers for m in report.markers] == [(2,), (1,), (1, 2, 3)]


def test_parse_removes_and_reports_markers_to_sources_not_given() -> None:
    report = parse_citations("Close the valve [4]. Open the drain [0]. Wait [2].", n_sources=2)
    assert report.text == "Close the valve. Open the drain. Wait [2]."
    assert report.cited == [2]
    assert report.removed == [0, 4]


def test_parse_keeps_the_valid_numbers_of_a_mixed_marker() -> None:
    report = parse_citations("Close the valve [2, 7].", n_sources=3)
    assert report.text == "Close the valve [2]."
    assert report.removed == [7]


@pytest.mark.parametrize(
    ("answer", "cleaned"),
    [
        ("Close the valve [9].", "Close the valve."),
        ("Close the valve [9], then wait.", "Close the valve, then wait."),
        ("Close the valve [9] and wait [1].", "Close the valve and wait [1]."),
        ("Close the valve [9][1].", "Close the valve [1]."),
        ("Close the valve [9] [1].", "Close the valve [1]."),
        ("Close the valve. [9] Then wait.", "Close the valve. Then wait."),
        ("Close the valve [9]", "Close the valve"),
        ("[9] Close the valve.\n[9] Wait.", "Close the valve.\nWait."),
        ("- Close the valve [9]\n- Wait [1]", "- Close the valve\n- Wait [1]"),
    ],
)
def test_removing_a_marker_leaves_no_double_space_nor_space_before_punctuation(answer: str, cleaned: str) -> None:
    assert parse_citations(answer, n_sources=1).text == cleaned


def test_brackets_inside_code_are_not_markers() -> None:
    answer = "Read `values[9]` first [1].\n```\nx = rows[7]\n```"
    report = parse_citations(answer, n_sources=1)
    assert report.text == answer
    assert report.removed == []


def test_a_huge_range_counts_only_its_ends() -> None:
    report = parse_citations("Close it [1-100000].", n_sources=2)
    assert report.cited == [1]
    assert report.removed == [100000]


@pytest.mark.parametrize(
    "answer",
    [
        "The number for the State Environmental Emergency line is [555-0195].",  # as the model wrote it
        "The listener is on port [8080].",
        "Use profile [07].",
    ],
)
def test_a_bracketed_value_is_kept_as_written_not_removed_as_a_citation(answer: str) -> None:
    report = parse_citations(answer, n_sources=6)
    assert report.text == answer
    assert report.removed == [] and report.cited == []


def test_no_sources_means_every_marker_is_removed() -> None:
    report = parse_citations("Close it [1].", n_sources=0)
    assert report.text == "Close it."
    assert report.cited == [] and report.removed == [1]


# --- sentences ------------------------------------------------------------------------------------


def _units(text: str) -> list[str]:
    return [text[s.start : s.end] for s in split_sentences(text)]


@pytest.mark.parametrize(
    "sentence",
    [
        "Dose 0.2 mg/L of chlorine, e.g. at the clearwell inlet.",
        "Use a bench meter, i.e. LAB-TB-01, for the check.",
        "Upgrade to version 16.11.2 before the migration.",
        "Edit gitlab.rb and reconfigure.",
        "The exporter listens on 10.0.0.1 by default.",
        "Lower the flow by approx. 1.0 MGD.",
        "Wait until the level is above 12.0 ft. and stable.",
        "Run `gitlab-ctl status. Then` again.",
    ],
)
def test_split_does_not_break_inside_decimals_abbreviations_identifiers_or_code(sentence: str) -> None:
    assert _units(sentence) == [sentence]


def test_split_breaks_after_sentence_ends() -> None:
    assert _units("Close VLV-3042-B. Open the drain! Is it dry? Yes.") == [
        "Close VLV-3042-B.",
        "Open the drain!",
        "Is it dry?",
        "Yes.",
    ]


def test_split_makes_each_list_item_a_unit_without_its_number() -> None:
    text = "Steps:\n1. Close the valve\n2. Open the drain.\n- Wait 5 min\n* Record it"
    segments = split_sentences(text)
    assert [text[s.start : s.end] for s in segments] == [
        "Steps:",
        "Close the valve",
        "Open the drain.",
        "Wait 5 min",
        "Record it",
    ]
    assert [s.kind for s in segments] == ["text", "item", "item", "item", "item"]


def test_split_keeps_a_code_block_whole() -> None:
    text = "Run:\n```bash\nsudo gitlab-ctl reconfigure. Done\nsudo gitlab-ctl status\n```\nThen check."
    segments = split_sentences(text)
    assert [s.kind for s in segments] == ["text", "code", "text"]
    assert text[segments[1].start : segments[1].end].startswith("```bash\nsudo")


def test_split_joins_soft_wrapped_lines_and_separates_headings_and_table_rows() -> None:
    text = "# Title\nThe filter must be\nbackwashed first. Then\nreturn it.\n| a | b |\n| c | d |"
    expected = ["Title", "The filter must be\nbackwashed first.", "Then\nreturn it.", "| a | b |", "| c | d |"]
    assert _units(text) == expected


def test_a_marker_after_the_period_belongs_to_the_sentence_before_it() -> None:
    report = parse_citations("The valve is closed. [1] Next, open the drain [2].", n_sources=2)
    assert [(s.text, s.cited) for s in report.sentences] == [
        ("The valve is closed.", frozenset({1})),
        ("Next, open the drain.", frozenset({2})),
    ]


def test_a_line_of_markers_belongs_to_the_sentence_before_it() -> None:
    report = parse_citations("Close the valve.\n[1][2]", n_sources=2)
    assert len(report.sentences) == 1
    assert report.sentences[0].cited == frozenset({1, 2})
    assert not report.sentences[0].inherited


def test_a_sentence_without_marker_inherits_the_next_citation_in_its_paragraph() -> None:
    report = parse_citations("Close VLV-1. Open VLV-2. Then wait [3]. Record it.", n_sources=3)
    assert [(s.cited, s.inherited) for s in report.sentences] == [
        (frozenset({3}), True),
        (frozenset({3}), True),
        (frozenset({3}), False),
        (frozenset(), False),  # nothing after it: uncited
    ]
    assert [s.text for s in report.uncited] == ["Record it."]


def test_inheritance_stops_at_blank_lines_and_list_items() -> None:
    report = parse_citations("Close VLV-1.\n\nOpen VLV-2 [1].\n- Drain it.\n- Wait [2].", n_sources=2)
    assert [sorted(s.cited) for s in report.sentences] == [[], [1], [], [2]]


def test_a_code_block_takes_the_citation_of_the_line_that_introduces_it() -> None:
    report = parse_citations("Apply the change [5]:\n\n```\nsudo gitlab-ctl reconfigure\n```", n_sources=5)
    code = report.sentences[1]
    assert code.kind == "code"
    assert code.text == "sudo gitlab-ctl reconfigure"
    assert code.cited == frozenset({5}) and code.inherited


def test_headings_cite_nothing() -> None:
    report = parse_citations("## Steps\nClose the valve [1].", n_sources=1)
    assert [(s.kind, sorted(s.cited)) for s in report.sentences] == [("heading", []), ("text", [1])]
    assert report.uncited == []


def test_sentence_spans_point_into_the_cleaned_answer() -> None:
    report = parse_citations("Close it [9]. Open the drain [1].", n_sources=1)
    assert [report.text[s.start : s.end] for s in report.sentences] == ["Close it.", "Open the drain [1]."]


# --- support --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "cited"),
    [
        ("Confirm that PLC-300 took the filter out of service, with VLV-3041-B and VLV-3042-B shown closed.", 1),
        ("When the HMI is unavailable, use OIP-300 in the filter gallery.", 1),
        ("An IFE above 1.0 NTU in two consecutive 15-minute readings is reportable: tell the Quality Manager.", 1),
        ("Make sure the five remaining filters stay at or below 4.0 gpm/sq ft, and reduce plant flow if needed.", 1),
        ("Shut the influent and effluent valves VLV-3041-B and VLV-3042-B for filter F-4.", 1),
        ("Reduce plant production in 1.0 MGD steps every 15 minutes while the clearwell stays above 12.0 ft.", 2),
        ("Raise the chlorine dose at the clearwell inlet so AIT-404 reads 2.4 mg/L, the top of its range.", 2),
        ("Take a bench grab sample of CFE every 30 minutes and record it on RWTP-F-055.", 2),
        ("The Supervisor informs the Water Quality Manager if CFE is not below 0.30 NTU within 1 hour.", 2),
        ("In AUTO, PLC-400 keeps the header pressure at 72 psi by adjusting the lead VFD pump speed.", 3),
        ("The discharge valves are motor-operated butterfly valves that take 60 seconds to stroke.", 3),
        ("When the VFD pump stays above 95 % speed for 10 minutes, PLC-400 starts a constant-speed pump.", 3),
        ("Do not increase plant flow while the alarm is active.", 4),
        ("After you edit gitlab.rb, apply the changes by running `sudo gitlab-ctl reconfigure`.", 5),
        ("GitLab 16.11.2 needs PostgreSQL 14 or newer.", 5),
    ],
)
def test_supported_paraphrases_pass(sentence: str, cited: int) -> None:
    supported, reason = _check(sentence, cited)
    assert supported, reason


@pytest.mark.parametrize(
    ("sentence", "cited", "reason"),
    [
        ("Reduce plant production in 2.0 MGD steps every 15 minutes.", 2, "quantity 2.0 MGD"),
        ("Raise the chlorine dose so AIT-404 is at 2.8 mg/L.", 2, "number 2.8 not in the cited sources"),
        ("Take a bench grab of CFE every 45 minutes.", 2, "number 45"),
        ("Inform the Shift Supervisor at ext. 2110.", 2, "number 2110"),
        ("PLC-400 holds the header pressure at 72 kPa.", 3, "quantity 72 kPa"),
        ("PLC-400 starts a constant-speed pump when the VFD pump runs above 95 % for 10 seconds.", 3, "10 seconds"),
        ("Confirm VLV-3041-B and VLV-3043-B are closed on the HMI.", 1, "identifier VLV-3043-B"),
        ("Confirm valve VLV-3042 is closed on the HMI.", 1, "identifier VLV-3042 "),
        ("Record the CFE grab results on RWTP-F-011.", 2, "identifier RWTP-F-011"),
        ("The exporter listens on 10.0.0.2:9090 by default.", 5, "identifier 10.0.0.2:9090"),
        ("Version 16.11.3 requires PostgreSQL 14 or later.", 5, "identifier 16.11.3"),
        ("Run sudo gitlab-ctl restart to apply the changes.", 5, "command gitlab-ctl restart"),
        ("Apply the changes with `sudo gitlab-ctl restart`.", 5, "code `sudo gitlab-ctl restart`"),
    ],
)
def test_a_changed_number_identifier_or_command_is_unsupported(sentence: str, cited: int, reason: str) -> None:
    supported, why = _check(sentence, cited)
    assert supported is False
    assert reason in why


@pytest.mark.parametrize(
    ("sentence", "cited"),
    [
        ("Notify the fire department and evacuate the filter gallery immediately.", 1),
        ("Open the backwash waste valve and drain the filter box completely before sampling.", 1),
        ("Restart the filter as soon as the turbidity alarm clears.", 1),
        ("The filter must be backwashed twice and inspected by the Plant Superintendent.", 1),
        ("The Shift Supervisor must approve any increase in plant production.", 2),
        ("The Shift Supervisor must be informed at once and must log the event in the shift handover book.", 2),
        ("Chlorinators CHL-401 and CHL-402 take their ejector water from the raw water main.", 3),
        ("The high-lift pumps are powered by diesel engines during power outages.", 3),
        ("Reconfigure deletes the PostgreSQL database and reinstalls all services.", 5),
    ],
)
def test_an_invented_claim_or_step_is_unsupported(sentence: str, cited: int) -> None:
    supported, reason = _check(sentence, cited)
    assert supported is False
    assert reason.startswith("only ")


def test_a_flipped_negation_is_unsupported() -> None:
    supported, reason = _check("Increase plant flow while the alarm is active.", 4)
    assert supported is False
    assert "negation" in reason
    assert _check("Do not open HMI page FILTERS.", 4)[0] is False


def test_an_uncited_factual_sentence_is_unsupported() -> None:
    report = check_support([_sentence("Take a bench grab of CFE every 30 minutes.")], SOURCES)
    assert report.details[0].reason == "cites nothing"
    assert report.unsupported == ["Take a bench grab of CFE every 30 minutes."]
    assert report.verified and not report.grounded


def test_a_claim_in_the_second_of_two_cited_sources_is_supported() -> None:
    assert _check("Take a bench grab of CFE every 30 minutes and record it on RWTP-F-055.", 1, 2)[0]


def test_a_claim_whose_source_was_not_cited_is_unsupported() -> None:
    supported, reason = _check("Take a bench grab of CFE every 30 minutes and record it on RWTP-F-055.", 1)
    assert supported is False
    assert "30" in reason or "RWTP-F-055" in reason


def test_connective_text_is_not_judged() -> None:
    sentences = [
        _sentence("Here are the steps:"),
        _sentence("In summary:"),
        _sentence("Take a bench grab of CFE every 30 minutes.", 2),
    ]
    report = check_support(sentences, SOURCES)
    assert [(d.checked, d.supported) for d in report.details] == [(False, None), (False, None), (True, True)]
    assert report.grounded and report.verified


@pytest.mark.parametrize("answer", ["", "  ", "Here are the steps:\n\nIn summary:", "The documents do not cover this."])
def test_an_answer_with_nothing_to_check_is_not_verified(answer: str) -> None:
    report = check_support(parse_citations(answer, n_sources=5).sentences, SOURCES)
    assert report.verified is False
    assert report.grounded is False
    assert report.unsupported == []


def test_numbers_agree_across_formats() -> None:
    sources = {1: "Limit: 0.50 NTU. Pump 1,000 gallons. Wait two hours. Stroke: 60-second."}
    for claim in ("The limit is 0.5 NTU.", "Pump 1000 gallons.", "Wait 2 hours.", "The stroke is 60 seconds."):
        assert check_support([_sentence(claim, 1)], sources).grounded, claim


def test_identifiers_match_whole_tokens_only() -> None:
    assert _check("Edit gitlab.rb and run sudo gitlab-ctl reconfigure.", 5)[0]  # inside /etc/gitlab/gitlab.rb
    assert _check("Confirm VLV-3042-B and VLV-3041-B are closed for filter F-4.", 1)[0]
    assert not _check("Confirm 3042-B is closed for filter F-4.", 1)[0]


def test_a_code_block_is_supported_line_by_line_with_placeholders() -> None:
    question = "sidekiq is down, how do I read its logs?"
    code = _sentence("sudo gitlab-ctl tail sidekiq\nsudo gitlab-ctl status", 5, kind="code")
    assert check_support([code], SOURCES, question=question).grounded
    wrong = _sentence("sudo gitlab-ctl restart sidekiq", 5, kind="code")
    assert not check_support([wrong], SOURCES, question=question).grounded


@pytest.mark.parametrize(
    ("command", "supported"),
    [
        ("If a service is down, read its logs with `gitlab-ctl tail puma`.", True),  # puma: the question's
        ("If a service is down, read its logs with `gitlab-ctl tail <service>`.", True),  # left as a placeholder
        ("If a service is down, read its logs with `gitlab-ctl tail unicorn-web`.", False),  # invented to fill it
    ],
)
def test_a_placeholder_is_filled_from_the_question_or_the_sources_never_invented(command: str, supported: bool) -> None:
    question = "puma is down - where are its logs?"
    detail = check_support([_sentence(command, 5)], SOURCES, question=question).details[0]
    assert detail.supported is supported, detail.reason


def _fake_embed(texts: list[str]) -> np.ndarray:
    """Deterministic 'meaning': which of a few concepts a text mentions."""
    concepts = [("peak",), ("trend",), ("long", "duration"), ("ife",), ("raw",)]
    return np.array([[float(any(w in t.lower() for w in words)) for words in concepts] + [0.1] for t in texts])


def test_embedding_similarity_can_support_a_reworded_sentence() -> None:
    sentence = "Write down how high the IFE peaked and for how long, using the trend."
    assert _check(sentence, 1)[0] is False  # too few words in common
    supported, reason = _check(sentence, 1, embed=_fake_embed)
    assert supported, reason
    assert "cosine" in reason


def test_embedding_similarity_never_excuses_an_unknown_number() -> None:
    sentence = "Write down the IFE peak of 0.9 NTU from the trend and how long it lasted."
    supported, reason = _check(sentence, 1, embed=_fake_embed)
    assert supported is False
    assert "number 0.9" in reason


def test_thresholds_are_documented_defaults() -> None:
    assert 0.0 < LEXICAL_THRESHOLD < 1.0 and 0.0 < SEMANTIC_THRESHOLD < 1.0
    # A stricter caller can raise the bar: an 80%-covered paraphrase then fails.
    sentence = "Raise the chlorine dose at the clearwell inlet so AIT-404 reads 2.4 mg/L, the top of its range."
    assert _check(sentence, 2)[0]
    assert not _check(sentence, 2, lexical_threshold=0.99)[0]


def test_a_whole_answer_is_parsed_then_checked() -> None:
    answer = (
        "Here are the steps:\n"
        "1. Confirm PLC-300 removed the filter: VLV-3041-B and VLV-3042-B closed [1].\n"
        "2. Take a bench grab of CFE every 30 minutes and record it on RWTP-F-055 [2][7].\n"
        "3. Notify the fire department [1]."
    )
    parsed = parse_citations(answer, n_sources=2)
    assert parsed.removed == [7]
    report = check_support(parsed.sentences, {1: IFE_HIHI, 2: CFE_HIHI})
    assert report.verified and not report.grounded
    assert report.unsupported == ["Notify the fire department."]
    assert [d.checked for d in report.details] == [False, True, True, True]
    assert report.as_json()["details"][3]["reason"].startswith("only ")


# --- evidence sentences ----------------------------------------------------------------------------


def test_best_sentences_returns_exact_sentence_spans_in_text_order() -> None:
    spans = best_sentences("Which valves are closed when filter F-4 is removed from service?", IFE_HIHI, k=2)
    assert len(spans) == 2
    assert [s for s, _, _ in spans] == sorted(s for s, _, _ in spans)
    for start, end, score in spans:
        sentence = IFE_HIHI[start:end]
        assert sentence == sentence.strip() and score > 0
        assert start == 0 or not IFE_HIHI[start - 1].isalnum()
        assert end == len(IFE_HIHI) or not IFE_HIHI[end].isalnum()
    assert "VLV-3042-B" in IFE_HIHI[spans[0][0] : spans[0][1]]


def test_best_sentences_prefers_the_sentence_naming_the_identifier() -> None:
    [(start, end, _)] = best_sentences("What does PLC-400 do?", PUMPS, k=1)
    assert PUMPS[start:end].startswith("In AUTO, PLC-400 holds the header pressure")


def test_best_sentences_never_returns_unrelated_text_or_headings() -> None:
    assert best_sentences("diesel generator fuel", CFE_HIHI) == []
    assert best_sentences("", CFE_HIHI) == []
    spans = best_sentences("CFE above 0.30 NTU", CFE_HIHI, k=5)
    assert all(not CFE_HIHI[s:e].startswith("5.3 CFE") for s, e, _ in spans)


def test_best_sentences_can_blend_an_embedding() -> None:
    question = "how long did the peak last"
    plain = best_sentences(question, IFE_HIHI, k=1)
    blended = best_sentences(question, IFE_HIHI, k=1, embed=_fake_embed)
    assert blended and re.search("peak", IFE_HIHI[blended[0][0] : blended[0][1]])
    assert blended[0][2] != plain[0][2]


def test_a_quoted_file_name_may_be_part_of_a_source_path() -> None:
    assert _check("Edit `gitlab.rb`, then run `sudo gitlab-ctl reconfigure`.", 5)[0]


def test_hyphenated_words_in_prose_are_not_held_to_subcommands() -> None:
    # "high-lift" is a command only where a source uses it as one (in code, after sudo or $).
    assert _check("The ejector water comes from the high-lift header.", 3)[0]


def test_a_conditional_negation_is_not_a_flip() -> None:
    assert _check("The filter must not return to service until the Shift Supervisor approves it.", 1)[0]


_PIECES = [
    "Close",
    "VLV-3042-B",
    "0.2",
    "e.g.",
    "gitlab.rb",
    ". ",
    "\n",
    "\n\n",
    "- ",
    "1. ",
    "[1]",
    "[9]",
    "[2, 3]",
    "`x.y`",
    "```",
    " ",
    "Then",
    "wait",
    "!",
    "【2】",
    "[Source 1]",
    "#",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_parsing_any_text_keeps_its_invariants(pieces: list[str]) -> None:
    answer = "".join(pieces)
    report = parse_citations(answer, n_sources=2)
    assert all(1 <= n <= 2 for n in report.cited) and all(not 1 <= n <= 2 for n in report.removed)
    for odd in ("  ", " .", " ,"):  # removing a marker leaves no double space nor space before punctuation
        assert odd not in report.text or odd in answer
    previous = 0
    for sentence in report.sentences:
        span = report.text[sentence.start : sentence.end]
        assert span == span.strip() and span and sentence.start >= previous
        assert sentence.cited <= set(report.cited)
        previous = sentence.end
    check_support(report.sentences, {1: answer, 2: "Close VLV-3042-B."})
    for start, end, _ in best_sentences("close VLV-3042-B", answer, k=3):
        assert answer[start:end] == answer[start:end].strip()


def test_a_sentence_citing_only_sources_not_given_is_unsupported() -> None:
    supported, reason = _check("Take a bench grab of CFE every 30 minutes.", 9)
    assert supported is False
    assert reason == "cites source [9], not among the sources given"


# --- lines that only restate the question, source lines, copied code ---------------------------


def test_a_line_that_restates_the_question_to_introduce_what_follows_is_not_judged() -> None:
    question = "How do I apply a change to /etc/gitlab/gitlab.rb with gitlab-ctl?"
    sentences = [
        _sentence("To apply a change to /etc/gitlab/gitlab.rb with gitlab-ctl, you need to run the following:"),
        _sentence("Is there a way to apply a change to /etc/gitlab/gitlab.rb with gitlab-ctl?"),
        _sentence("sudo gitlab-ctl reconfigure", 5, kind="code"),
    ]
    report = check_support(sentences, SOURCES, question=question)
    assert [(d.checked, d.supported) for d in report.details] == [(False, None), (False, None), (True, True)]
    assert report.grounded
    # Without the question the same lead-in is a claim of its own, and no source was cited for it.
    assert check_support(sentences, SOURCES).grounded is False


def test_a_lead_in_naming_something_the_question_did_not_is_still_judged() -> None:
    question = "How do I apply a change to /etc/gitlab/gitlab.rb?"
    lead_in = _sentence("To apply it, first stop PostgreSQL 14 with gitlab-ctl stop postgresql:")
    detail = check_support([lead_in], SOURCES, question=question).details[0]
    assert detail.checked and detail.supported is False


def test_the_models_own_source_line_is_not_judged() -> None:
    sentences = [
        _sentence("Take a bench grab of CFE every 30 minutes.", 2),
        _sentence("Source: CFE above 0.30 NTU (sops/filters.md)"),
    ]
    report = check_support(sentences, SOURCES)
    assert [d.checked for d in report.details] == [True, False]
    assert report.grounded


def test_an_uncited_command_that_a_source_holds_is_cited_without_touching_the_code() -> None:
    answer = "Apply the change.\n\n```\nsudo gitlab-ctl reconfigure\n```\n\n```\nsudo gitlab-ctl rm -rf /\n```"
    parsed = parse_citations(answer, n_sources=5)
    attribution = attribute_citations(parsed, SupportJudge(SOURCES))
    assert "sudo gitlab-ctl reconfigure\n" in attribution.text and "[5]" not in attribution.text  # no marker in code
    cited = {s.text.strip(): s.cited for s in attribution.sentences if s.kind == "code"}
    assert cited == {"sudo gitlab-ctl reconfigure": frozenset({5}), "sudo gitlab-ctl rm -rf /": frozenset()}
    assert attribution.attributed == [5]
