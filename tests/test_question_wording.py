"""No single word vetoes a question: what operators really type is read as wording, not as an unknown subject.

Over a real SQLite catalog of a few runbook passages (no embedding model: the catalog's FTS5 tables are
what the unknown-term weights and the spelling correction read) and the embedder's real WordPiece
tokenizer, each kind of perturbation the suite applies (scripts/bench_perturbations.py) is specified:
a typo is corrected and said ("did you mean …?"), measurements and the pager's status are not words of
the question, compounds, hyphenations and inflections of known words weigh little, an alert name pasted
with one of its documented alternatives or with a wildcard reads as the documented name, and an
invented product, alert or tag still reads as a name the documents never mention.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appliance.config import Settings
from appliance.index.catalog import Catalog
from appliance.index.records import Chunk
from appliance.models.embedder import TokenCounter
from appliance.retrieve.evidence import Evidence, EvidenceSignals, decide_evidence
from appliance.retrieve.spelling import correct_spelling, did_you_mean_line
from appliance.retrieve.unknown_terms import COMPOUND_PIECE, NAME, NAME_IN_ONE_CASE, WordPieces, question_words
from appliance.retrieve.vocabulary import CorpusVocabulary
from appliance.text.english import EnglishWords, english_words
from appliance.text.identifiers import extract_identifiers
from appliance.text.wording import case_is_informative, is_noise_token

PASSAGES = {
    "registry.md": (
        "ContainerRegistryGCOverdue[Blob|Manifest]QueueTooLarge fires when the registry garbage collector "
        "queue is too large. Check the registry pods and restart the collector if it is stuck."
    ),
    "dns.md": (
        "DNSErrors_PerDstNamespace{Critical,Warning,Info} alerts on DNS errors per destination namespace. "
        "Look at the coredns logs and the upstream resolvers."
    ),
    "crashloop.md": (
        "KubePodCrashLooping: a pod is restarting repeatedly. Run kubectl describe pod and read the "
        "container logs; the metric kube_pod_container_status_restarts_total counts the restarts."
    ),
    "postgres.md": (
        "The nightly postgres backup restore verification usually runs after midnight. When the "
        "verification fails, reseat the replica and check the chlorine dosing pump on the worker node. "
        "A sev1 backup failure pages the incident commander; valve VLV-3042-B isolates the dosing line. "
        "Reseat the 2nd replica first."
    ),
}


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CorpusVocabulary]:
    catalog = Catalog(tmp_path_factory.mktemp("wording") / "catalog.sqlite")
    for n, (path, text) in enumerate(PASSAGES.items()):
        chunk = Chunk(
            chunk_id=f"c{n}",
            path=path,
            title="",
            section="",
            page=None,
            text=text,
            ord=0,
            header=path,
            start=0,
            end=len(text),
            identifiers=" ".join(extract_identifiers(text)),
        )
        catalog.replace_document(
            path=path,
            abs_path=f"/docs/{path}",
            source="/docs",
            sha256=None,
            size=len(text),
            mtime=0.0,
            doc_type="md",
            title=None,
            status="indexed",
            error=None,
            chunks=[chunk],
            embeddings=np.zeros((1, 4)),
            embedding_model="none",
        )
    yield CorpusVocabulary(catalog.fulltext)
    catalog.close()


@pytest.fixture(scope="module")
def pieces(models_dir: Path) -> WordPieces:
    return TokenCounter(models_dir / "embedder" / "all-MiniLM-L6-v2").split


def weights(text: str, vocabulary: CorpusVocabulary, pieces: WordPieces) -> dict[str, float]:
    return {term.typed: term.weight for term in question_words(text, vocabulary, pieces).unknown}


# --- a typo: did you mean …? ----------------------------------------------------------------------------------


def test_a_misspelt_word_is_searched_as_the_documents_write_it_and_the_operator_is_told(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    spelling = correct_spelling("postgress backup restore verificaton failed, wich replica?", vocabulary, pieces)
    assert spelling.text == "postgres backup restore verification failed, which replica?"
    assert [(c.typed, c.suggested) for c in spelling.corrections] == [
        ("postgress", "postgres"),
        ("verificaton", "verification"),
        ("wich", "which"),
    ]
    did_you_mean = spelling.as_json()
    assert did_you_mean is not None and did_you_mean["question"] == spelling.text
    assert did_you_mean_line(did_you_mean).startswith("Did you mean postgres, verification, which? Searched as: ")


def test_a_swapped_pair_of_letters_is_corrected_as_the_perturbation_suite_makes_it(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    assert correct_spelling("chlroine dosing pump", vocabulary, pieces).text == "chlorine dosing pump"


def test_a_question_typed_in_capitals_is_corrected_in_capitals(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    assert correct_spelling("POSTGRESS BACKUP FAILED", vocabulary, pieces).text == "POSTGRES BACKUP FAILED"


@pytest.mark.parametrize(
    "question",
    [
        "is the Postgress operator installed?",  # a capital mid-sentence: a name, never "corrected"
        "the coredns-resolverr pod",  # part of a hyphenated name, judged whole
        "the overlay network is slow",  # an English word the documents lack is not a typo
        "the pood is stuck",  # under five letters: too many words are one edit away
    ],
)
def test_names_compounds_english_words_and_short_words_are_never_corrected(
    vocabulary: CorpusVocabulary, pieces: WordPieces, question: str
) -> None:
    spelling = correct_spelling(question, vocabulary, pieces)
    assert spelling.corrections == () and spelling.text == question and spelling.as_json() is None


def test_an_english_word_in_word_pieces_is_kept_where_the_lexicon_is_given(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """ "anode" is one edit from the documents' "node" and no whole WordPiece word; the English lexicon knows it
    (scripts/fit_spelling.py: the veto removed 11 of 14 wrong corrections of the training questions as written)."""
    assert len(pieces("anode")) > 1
    assert correct_spelling("the anode is corroded", vocabulary, pieces).text == "the node is corroded"
    kept = correct_spelling("the anode is corroded", vocabulary, pieces, english_words().knows)
    assert kept.text == "the anode is corroded" and kept.corrections == ()
    typed = "postgress backup restore verificaton failed, wich replica?"
    assert correct_spelling(typed, vocabulary, pieces, english_words().knows).text == (
        "postgres backup restore verification failed, which replica?"
    )


def test_a_unit_after_a_number_is_not_read_as_a_slip_of_a_stopword(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    assert correct_spelling("under 0.2 for 4 hrs now", vocabulary, pieces).corrections == ()
    assert correct_spelling("2 hrs later, wich replica?", vocabulary, pieces).text == "2 hrs later, which replica?"
    assert correct_spelling("4 replicas, wich one?", vocabulary, pieces).text == "4 replicas, which one?"


# --- measurements and the pager's own words ---------------------------------------------------------------


@pytest.mark.parametrize("token", ["p99", "p99.9", "5xx", "4XX", "2Gi", "40ms", "15m", "104%", "3am", "FIRING:1"])
def test_measurements_and_pager_status_are_not_words_of_the_question(token: str) -> None:
    assert is_noise_token(token)


@pytest.mark.parametrize("token", ["VLV-9999-B", "p99x", "kube_pod_info", "Zabbix"])
def test_a_tag_or_name_is_not_a_measurement(token: str) -> None:
    assert not is_noise_token(token)


def test_an_added_p99_5xx_or_pager_prefix_adds_no_unknown_term(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    question = "[FIRING:1] KubePodCrashLooping (severity=warning) restarting, 5xx and p99 latency up, pod at 2Gi"
    words = question_words(question, vocabulary, pieces)
    assert [t.typed for t in words.unknown if t.weight >= 0.5] == []
    assert {"p99", "5xx", "2gi", "firing", "1"} <= words.noise


# --- compounds, hyphenations, inflections, plain English --------------------------------------------------------


def test_inflections_of_documented_words_are_known(vocabulary: CorpusVocabulary, pieces: WordPieces) -> None:
    assert weights("the collectors restarted and are restarting", vocabulary, pieces) == {}


def test_a_hyphenated_compound_with_a_known_word_weighs_little(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    found = weights("pump-related errors on the worker", vocabulary, pieces)
    assert found.keys() == {"related"} and found["related"] < 0.5


def test_an_ordinary_english_word_the_documents_lack_weighs_little(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    found = weights("the collector seems slow", vocabulary, pieces)
    assert found == {"seems": 0.1, "slow": 0.1}  # whole words of the embedder's vocabulary


def test_a_rarer_english_word_weighs_more_but_no_more_than_a_name_written_in_one_case(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """ "sluggish" and a lower-case "zabbix" both split into three WordPieces: shape cannot tell them apart,
    so neither weighs as much as a name written as one (the passages' match decides)."""
    assert weights("the collector is sluggish", vocabulary, pieces) == {"sluggish": 0.5}
    assert weights("the zabbix collector", vocabulary, pieces) == {"zabbix": 0.5}
    assert weights("the Zabbix collector", vocabulary, pieces) == {"Zabbix": NAME}


def test_case_says_nothing_in_a_question_typed_in_one_case() -> None:
    assert case_is_informative("How do I restart the Zabbix agent?")
    assert not case_is_informative("HOW DO I RESTART THE COLLECTOR?")
    assert not case_is_informative("how do i restart the collector?")


def test_an_upper_case_question_of_known_words_has_no_unknown_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    assert weights("WHY IS THE REGISTRY GARBAGE COLLECTOR QUEUE TOO LARGE?", vocabulary, pieces) == {}


# --- hosts and nodes: classes of machines in the runbooks, instances in the question ---------------------------


@pytest.mark.parametrize(
    "question",
    [
        "The backup on postgres-replica-2 failed, what do I check?",
        "THE BACKUP ON POSTGRES-REPLICA-2 FAILED, WHAT DO I CHECK?",  # pasted from a pager that prints in capitals
        "the backup on postgres-replica-2 failed, what do i check?",
    ],
)
def test_a_host_of_known_words_and_a_number_weighs_little_in_any_case(
    vocabulary: CorpusVocabulary, pieces: WordPieces, question: str
) -> None:
    found = weights(question, vocabulary, pieces)
    assert all(weight < 0.5 for weight in found.values()), found


def test_another_number_of_a_documented_tag_is_a_name_in_a_question_typed_in_capitals(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    # Case says nothing here, so the tag family decides: the documents write VLV-3042-B, never a worker-N.
    assert weights("VALVE VLV-9999-B IS STUCK HALF OPEN", vocabulary, pieces)["VLV-9999-B"] == NAME
    assert weights("valve VLV-9999-B is stuck half open", vocabulary, pieces)["VLV-9999-B"] == NAME


@pytest.mark.parametrize(
    "question",
    [
        "[FIRING:1] KubePodCrashLooping namespace=payments pod=cart-7f9c6d8b5-x2x4z, what now?",
        "KubePodCrashLooping namespace=storefront pod=checkout-d120bcc07-81nxb keeps restarting",
        "KubePodCrashLooping: pod payments/api-7d9 keeps restarting, what do I look at?",
        "kubepodcrashlooping on cart-5d8f7 in the shop namespace, what now",
    ],
)
def test_the_instance_a_pasted_alert_names_weighs_little_and_the_alert_stays_the_subject(
    vocabulary: CorpusVocabulary, pieces: WordPieces, question: str
) -> None:
    """A pod's namespace and name are the operator's own workloads, never written in a runbook: a label value
    (namespace=…, pod=…) or a lower-case name with a generated piece (the replica-set hash) is the instance, not a
    word of the question (like the pager's status)."""
    found = weights(question, vocabulary, pieces)
    assert all(weight < 0.5 for weight in found.values()), found
    assert not any(any(c.isdigit() for c in term) for term in found), found


def test_an_unknown_alert_pasted_with_its_labels_is_still_a_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    found = weights("ZabbixAgentDown namespace=shop pod=api-8ebe96e35-xc6ys what now", vocabulary, pieces)
    assert found["ZabbixAgentDown"] == NAME
    assert "api-8ebe96e35-xc6ys" not in found
    # Alertmanager's own label: the alert's name is CamelCase, never an instance.
    assert weights("[FIRING:1] alertname=ZabbixAgentDown namespace=shop", vocabulary, pieces)["ZabbixAgentDown"] == NAME


def test_another_number_of_a_documented_tag_stays_a_name_as_a_label_value(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """The documents write VLV-3042-B: vlv-9999-b is read the same pasted under a label as typed alone (another
    number of a documented tag family), never dropped as the instance of an alert."""
    alone = weights("valve vlv-9999-b is stuck half open, what now?", vocabulary, pieces)["vlv-9999-b"]
    assert weights("tag=vlv-9999-b is stuck half open, what now?", vocabulary, pieces)["vlv-9999-b"] == alone
    assert weights("tag=VLV-9999-B is stuck half open, what now?", vocabulary, pieces)["VLV-9999-B"] == NAME


def test_a_lower_case_tag_with_a_documented_piece_is_not_an_instance(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """sev1 is documented (a level), so sev1-vlv9-x is a tag built on it, not a generated pod name."""
    assert weights("what does sev1-vlv9-x mean for the dosing line?", vocabulary, pieces)["sev1-vlv9-x"] == NAME


def test_an_ordinal_joined_to_a_known_word_is_read_as_the_documents_write_it(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """The documents write "the 2nd replica"; "2nd-replica" is the same words, not a tag."""
    assert "2nd-replica" not in weights("how do I reseat the 2nd-replica of postgres?", vocabulary, pieces)


# --- alert and metric names as the pager prints them -----------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "ContainerRegistryGCOverdueBlobQueueTooLarge",  # one of the documented [Blob|Manifest] alternatives
        "DNSErrors_PerDstNamespaceWarning",  # one of the documented {Critical,Warning,Info} alternatives
        "Kube*CrashLooping",  # a wildcard in a documented name
        "kube_*_total",
    ],
)
def test_an_alert_name_as_the_pager_prints_it_reads_as_the_documented_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces, name: str
) -> None:
    found = weights(f"{name} is firing in prod, what now?", vocabulary, pieces)
    assert all(weight < 0.5 for weight in found.values()), found


def test_another_level_of_a_documented_numbered_name_weighs_little(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    assert weights("is a failed backup a sev2?", vocabulary, pieces) == {"sev2": 0.25}


# --- invented names are still names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("KubeVorquelzanLooping is firing in prod, what now?", "KubeVorquelzanLooping"),
        ("how do I restart the Zabbix agent on the worker node?", "Zabbix"),
        ("valve VLV-9999-B is stuck half open", "VLV-9999-B"),
        ("the zabbix agent on the worker node stopped", "zabbix"),
    ],
)
def test_an_invented_product_alert_or_tag_reads_as_a_name_the_documents_never_mention(
    vocabulary: CorpusVocabulary, pieces: WordPieces, question: str, name: str
) -> None:
    found = weights(question, vocabulary, pieces)
    assert found.get(name, 0.0) >= 0.5, found
    assert correct_spelling(question, vocabulary, pieces).corrections == ()


# --- the decision weighs the evidence as a whole -------------------------------------------------------------------


def _signals(
    question: str,
    vocabulary: CorpusVocabulary,
    pieces: WordPieces,
    top_dense: float,
    english: EnglishWords | None = None,
) -> EvidenceSignals:
    words = question_words(question, vocabulary, pieces, english)
    return EvidenceSignals(
        content_terms=5,
        unknown_terms=tuple(t.typed for t in words.unknown),
        salient_unknown_terms=tuple(t.typed for t in words.unknown if t.is_name),
        unknown_identifiers=(),
        top_dense=top_dense,
        coverage=0.6,
        agreement=True,
        top_rerank=None,
        unknown=words.unknown,
        counted_terms=5,
    )


def test_one_plain_word_the_documents_lack_does_not_refuse_a_question_they_cover(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    settings = Settings()
    evidence = decide_evidence(_signals("the registry collector looks sluggish", vocabulary, pieces, 0.6), settings)
    assert evidence.sufficient, evidence.reason


def test_the_same_evidence_with_an_invented_name_is_refused_naming_it(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    settings = Settings()
    signals = _signals("the Vorquelzan registry collector looks sluggish", vocabulary, pieces, 0.6)
    assert signals.unknown_name == NAME
    evidence = decide_evidence(signals, settings)
    assert not evidence.sufficient and "Vorquelzan" in evidence.reason


def test_the_decision_is_graded_by_how_much_the_unknown_term_reads_as_a_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces
) -> None:
    """One evidence, three readings of its unknown term: a compound of known words, a plain English word that
    splits into WordPieces, a name. The confidence falls with the weight; only the name refuses."""
    settings = Settings()
    compound = decide_evidence(_signals("the pump-relatd collector", vocabulary, pieces, 0.6), settings)
    plain = decide_evidence(_signals("the sluggish collector", vocabulary, pieces, 0.6), settings)
    name = decide_evidence(_signals("the Vorquelzan collector", vocabulary, pieces, 0.6), settings)
    assert compound.probability > plain.probability > name.probability
    assert compound.sufficient and plain.sufficient and not name.sufficient


# --- an English lexicon tells a name typed in one case from an English word ----------------------------------------


@pytest.fixture(scope="module")
def english() -> EnglishWords:
    return english_words()


def readings(text: str, vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords) -> dict[str, Any]:
    return {t.typed: (t.weight, t.name_shaped) for t in question_words(text, vocabulary, pieces, english).unknown}


def test_a_rare_english_word_weighs_as_little_as_a_common_one(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    """ "sluggish" splits into three WordPieces like "zabbix", but the lexicon holds it."""
    assert readings("the collector is sluggish and wonky", vocabulary, pieces, english) == {
        "sluggish": (0.1, False),
        "wonky": (0.1, False),
    }


@pytest.mark.parametrize(
    "question",
    [
        "the zabbix agent on the worker node stopped",
        "THE ZABBIX AGENT ON THE WORKER NODE STOPPED",
        "we got paged at 3am and zabbix on the worker node stopped",
        "Worker node stopped, zabbix agent unreachable",
    ],
)
def test_a_name_typed_without_its_capitals_reads_as_a_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords, question: str
) -> None:
    found = {typed.lower(): reading for typed, reading in readings(question, vocabulary, pieces, english).items()}
    assert found["zabbix"] == (NAME_IN_ONE_CASE, True)


def test_a_typo_of_an_english_word_and_two_known_words_run_together_are_not_names(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    found = readings("the dosingpump restarts intermitently, usauly at night", vocabulary, pieces, english)
    assert found["dosingpump"] == (COMPOUND_PIECE, False)  # dosing + pump, both the documents' words
    assert found["intermitently"][1] is False  # one letter from "intermittently": weighed by its WordPieces
    assert found["usauly"][1] is False  # a swapped pair and a letter from "usually"
    assert readings("the chlroine pump", vocabulary, pieces, english)["chlroine"][1] is False  # the documents' word


def test_a_word_built_like_english_is_not_read_as_a_name(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    """ "pagination" is in no subtitle, but its ending says English: weighed by its WordPieces, as before."""
    found = readings("pagination options for the collector", vocabulary, pieces, english)
    assert found["pagination"][1] is False and found["pagination"][0] <= 0.5
    assert "night" not in found or found["night"] == (0.1, False)


def test_the_lexicon_moves_the_decision_only_where_a_name_is_typed_in_one_case(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    settings = Settings()

    def decide(question: str) -> Evidence:
        return decide_evidence(_signals(question, vocabulary, pieces, 0.6, english), settings)

    assert decide("the registry collector looks sluggish").sufficient
    assert not decide("the Vorquelzan registry collector looks sluggish").sufficient
    lower = decide("the vorquelzan registry collector looks sluggish")
    assert not lower.sufficient and "vorquelzan" in lower.reason
    without_lexicon = decide_evidence(_signals("the vorquelzan registry collector", vocabulary, pieces, 0.6), settings)
    assert lower.probability < without_lexicon.probability


def test_rare_listed_words_and_lower_case_acronyms_are_not_names(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    """ "afterwards" sits at the lexicon's floor (counted 50 times) and is English all the same; "api" is an
    acronym typed in lower case. Both once refused an answerable question of the cross-process suite."""
    found = readings("afterwards the dosing api is slow", vocabulary, pieces, english)
    assert found["afterwards"] == (0.1, False)
    assert found["api"][1] is False


@pytest.mark.parametrize(
    "question",
    [
        "Yesterday the registry collector restarted twice",
        "Quiet night until the registry collector restarted",
        "Weird one: the registry collector restarted",
        "yesterday the registry collector restarted twice",
    ],
)
def test_an_everyday_word_opening_the_question_weighs_as_that_word_whatever_its_capital(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords, question: str
) -> None:
    """An operator's narrative opening ("Yesterday…", "Quiet night…") once weighed as a product name the
    documents never mention and refused a question they answer."""
    opening = question.split()[0].strip(":")
    assert readings(question, vocabulary, pieces, english)[opening] == (0.1, False)  # as any English word
    evidence = decide_evidence(_signals(question, vocabulary, pieces, 0.6, english), Settings())
    assert evidence.sufficient, evidence.reason
    lowered = decide_evidence(
        _signals(question[0].lower() + question[1:], vocabulary, pieces, 0.6, english), Settings()
    )
    assert evidence.probability == lowered.probability  # the capital of the first word changes nothing


@pytest.mark.parametrize(
    "question",
    [
        "Vorquelzan registry collector restarted twice",
        "Zabbix agent unreachable",
        "Karpenter isn't launching nodes",  # one letter from "carpenter": no English word all the same
    ],
)
def test_a_name_opening_the_question_keeps_a_capitalized_words_weight(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords, question: str
) -> None:
    opening = question.split()[0]
    assert readings(question, vocabulary, pieces, english)[opening] == (0.5, True)


def test_a_product_named_by_an_english_word_keeps_part_of_a_names_weight(
    vocabulary: CorpusVocabulary, pieces: WordPieces, english: EnglishWords
) -> None:
    """ "Jenkins" and "Harbor" are words of the lexicon, rarer than everyday ones: their capital still counts."""
    jenkins = readings("Jenkins controller has no free executors", vocabulary, pieces, english)["Jenkins"][0]
    yesterday = readings("Yesterday the controller had no free executors", vocabulary, pieces, english)["Yesterday"][0]
    assert 0.1 < jenkins < 0.5 and yesterday < jenkins
