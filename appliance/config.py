"""One settings object: defaults → TOML file → APPLIANCE_* environment, read once.

The TOML file is $APPLIANCE_CONFIG if set, else $APPLIANCE_HOME/appliance.toml when it exists.
Sections in the file match the nested models below (`[ingest]`, `[search]`, …); environment
variables are APPLIANCE_<FIELD> for top-level fields and APPLIANCE_<SECTION>_<FIELD> for the
others, e.g. APPLIANCE_SEARCH_RRF_K=30. Every field has a description and bounds, and
`appliance config show` prints where each value came from.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from appliance.errors import ConfigError

ENV_PREFIX = "APPLIANCE_"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class IngestSettings(Section):
    max_file_bytes: int = Field(
        50 * 1024 * 1024, ge=1024, le=2**34, description="Files larger than this are reported, not read."
    )
    chunk_max_tokens: int = Field(
        256,
        ge=32,
        le=8192,
        description="Upper bound of a chunk in embedder tokens, header included (all-MiniLM-L6-v2 stops at 256).",
    )
    chunk_overlap_tokens: int = Field(
        32, ge=0, le=512, description="Tokens repeated from the end of a chunk at the start of the next one."
    )
    follow_symlinks: bool = Field(False, description="Follow symbolic links when scanning source folders.")
    ocr: bool = Field(
        True,
        description="Read scanned PDF pages and image files (PNG, JPEG, TIFF) by OCR, with the model "
        "ingest.ocr_model from the model store; off: such files are reported, not read.",
    )
    ocr_model: str = Field("ppocr-v6-small", description="Folder name of the OCR model in the model store (role ocr).")
    ocr_min_words: int = Field(
        20,
        ge=0,
        le=1000,
        description="A PDF page whose text layer has fewer words than this (none, or a scanner's header or "
        "footer) is also read by OCR; OCR's text replaces the layer's when it finds more words. 0 = OCR only "
        "pages without any text.",
    )
    ocr_dpi: int = Field(200, ge=72, le=600, description="Resolution at which PDF pages are rendered for OCR.")
    ocr_max_pages: int = Field(
        100,
        ge=1,
        le=100_000,
        description="A file with more pages to OCR than this is reported, not read (OCR takes seconds per page).",
    )
    ocr_max_pixels: int = Field(
        50_000_000,
        ge=1_000_000,
        le=1_000_000_000,
        description="An image (or TIFF frame) larger than this is reported before it is decoded (an image "
        "bomb); PDF pages are rendered at a lower resolution to stay within it.",
    )
    ocr_seconds_per_page: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="A page whose OCR takes longer than this fails its file (checked between OCR stages).",
    )
    ocr_threads: int = Field(0, ge=0, le=512, description="CPU threads for OCR; 0 = one per core.")
    ocr_low_confidence: float = Field(
        0.9,
        ge=0.0,
        le=1.0,
        description="A passage read by OCR with a mean recognition confidence below this is cited with "
        "'text recognised by OCR: check the page', and its identifiers and numbers vouch for no answer.",
    )


class EmbedderSettings(Section):
    model: str = Field("all-MiniLM-L6-v2", description="Folder name of the embedder in the model store.")
    batch_size: int = Field(
        0,
        ge=0,
        le=4096,
        description="Texts per embedding batch; 0 = the runtime's own: 8 for ONNX Runtime (1.5x the rate of 64 on "
        "2 cores: less padding, activations that stay in cache), 64 for torch.",
    )
    device: str = Field("cpu", description="Torch device for the embedder: cpu, cuda, cuda:0, mps.")
    backend: Literal["auto", "torch", "torch-bf16", "onnx", "onnx-int8"] = Field(
        "auto",
        description="Runtime of the embedder: torch (sentence-transformers, float32), torch-bf16 (bfloat16 matrix "
        "products, CPUs with AMX or AVX512_BF16), onnx (ONNX Runtime, float32) or onnx-int8 (int8 per token, "
        "cosine >= 0.99 to torch); auto = torch-bf16 where the CPU has AMX, else onnx where the model has its "
        "export, else torch. "
        "The ONNX files are made from the same weights by `appliance models init` or a bundle.",
    )
    threads: int = Field(0, ge=0, le=512, description="CPU threads for embedding batches (ingest); 0 = one per core.")
    query_threads: int = Field(
        1, ge=0, le=512, description="CPU threads for one query's embedding (0 = as for batches)."
    )


class VectorSettings(Section):
    url: str = Field(
        "",
        description="Empty: a local Chroma PersistentClient under the home. http://HOST:PORT: a `chroma run` server.",
    )
    collection: str = Field("chunks", min_length=3, max_length=63, description="Chroma collection name.")
    hnsw_ef_construction: int = Field(
        200, ge=8, le=2000, description="HNSW build-time candidate list size (new collections only; docs/scaling.md)."
    )
    hnsw_max_neighbors: int = Field(
        32, ge=4, le=256, description="HNSW graph degree (M; new collections only; docs/scaling.md)."
    )
    hnsw_ef_search: int = Field(
        800, ge=8, le=2000, description="HNSW query-time candidate list size (recall@10 0.99 at 1M chunks)."
    )


class IndexSettings(Section):
    lock_timeout_s: float = Field(
        30.0, ge=0.0, le=86400.0, description="How long a reindex waits for another writer before giving up."
    )
    sync_interval_s: float = Field(
        1.0,
        gt=0.0,
        le=3600.0,
        description="How often a running server applies what another process (appliance-reindex.service, an "
        "admin's shell) committed to the catalog to its local vector store (every search also does first).",
    )
    serve_wait_s: float = Field(
        10.0,
        ge=0.0,
        le=3600.0,
        description="How long ingest/reindex waits for the running server that owns the local vector store to "
        "apply its changes before returning (it applies them anyway; the report says whether it had).",
    )


class SearchSettings(Section):
    k: int = Field(10, ge=1, le=1000, description="Hits returned by default.")
    mode: Literal["lexical", "dense", "hybrid"] = Field("hybrid", description="Default retrieval mode.")
    candidates: int = Field(100, ge=1, le=5000, description="Top-N chunks taken from each retriever before fusion.")
    fusion: Literal["rrf", "weighted", "zscore"] = Field(
        "zscore",
        description="How hybrid mode fuses the two lists: reciprocal rank, min-max weighted scores, or weighted "
        "z-scores of each list (the default: at least the better single retriever on every collection nobody "
        "tuned on, docs/measurements/generalization.md).",
    )
    rrf_k: float = Field(60.0, gt=0.0, le=10000.0, description="Reciprocal rank fusion constant k.")
    dense_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="Weighted and z-score fusion: share of the dense score (the rest is lexical)."
    )
    header_weight: float = Field(
        1.0, ge=0.0, le=20.0, description="bm25 weight of a chunk's 'title › section' header relative to its text."
    )
    identifier_weight: float = Field(
        1.0, ge=0.0, le=20.0, description="Weight of exact-identifier matches in the lexical score."
    )
    other_chunks_weight: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Document ranking: weight of a document's other matching chunks added to its best chunk.",
    )
    correct_spelling: bool = Field(
        True,
        description="Search a misspelt word as the documents' word one edit away (postgress -> postgres) and "
        "say so ('did you mean'); lower-case words of 5+ letters the documents never use, never names or "
        "English words.",
    )


class RerankSettings(Section):
    model: str = Field(
        "auto",
        description="Reranker in the model store: 'auto' (the installed one, if any), 'none', or a model name.",
    )
    top: int = Field(30, ge=1, le=1000, description="How many fused candidates the reranker rescores.")
    batch_size: int = Field(32, ge=1, le=1024, description="Pairs per reranker batch.")


# Calibrations belong to their model (models/calibration.py): the embedder whose cosines these were fitted on.
CALIBRATION_EMBEDDER = "all-MiniLM-L6-v2"
CALIBRATION_CORPUS = "runbook tune questions (scripts/qa/runbooks_tune.jsonl over ../shared/data/runbooks)"
# Fitted by scripts/calibrate_evidence.py on scripts/qa/runbooks_tune.jsonl (logistic regression).
DEFAULT_EVIDENCE_COEFFICIENTS = {
    "intercept": -2.0821,
    "top_dense": 4.1516,
    "coverage": 0.7039,
    "unknown_name": -5.7159,
    "unknown_words": -0.3051,
    "agreement": 0.9018,
}
# The same fit without the dense similarity, the one signal on the embedder's own scale: what decides
# when another embedder is configured (scripts/calibrate_evidence.py, "scale_free"). On the held-out
# runbook questions, before generation, both refuse 56% of the unanswerable ones and no answerable one.
SCALE_FREE_EVIDENCE_COEFFICIENTS = {
    "intercept": 0.2427,
    "coverage": 1.2181,
    "unknown_name": -6.0206,
    "unknown_words": -0.3996,
    "agreement": 1.107,
}
# answer/support.py: all-MiniLM-L6-v2 cosine at which a reworded sentence counts as supported.
SUPPORT_SEMANTIC_THRESHOLD = 0.85


class EvidenceSettings(Section):
    refuse_unknown_terms: bool = Field(
        False,
        description="The former hard rule, for comparison only: refuse outright when one name of the question "
        "occurs nowhere in the documents (by default it is one weighted signal of the evidence model).",
    )
    threshold: float = Field(
        0.45,
        ge=0.0,
        le=1.0,
        description="Answer only when the evidence model's probability reaches this. Refusing an answerable "
        "question costs as much as answering an unanswerable one, and one let through is answered anyway a share m "
        "of the time, so refuse below m/(1+m). The quoted default answers m = 0.84-0.98 of them (only a value "
        "question with no line stating a value is refused later): 0.46-0.5; of 0.4 (the generated design's m = "
        "2/3), 0.45 and 0.5, 0.45 makes the fewest errors on the training sets (scripts/quoted_threshold.py).",
    )
    coefficients: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_EVIDENCE_COEFFICIENTS),
        description="Logistic model over the evidence signals (intercept, top_dense, coverage, …).",
    )
    rerank_weight: float = Field(
        1.0, ge=0.0, le=100.0, description="Logit added per unit of cross-encoder score above rerank_center."
    )
    rerank_center: float = Field(0.0, ge=-100.0, le=100.0, description="Cross-encoder score that is neutral.")
    calibrated_for: str = Field(
        CALIBRATION_EMBEDDER,
        description="Embedder whose cosines the coefficients and threshold were fitted on; with another embedder "
        "configured they are not used: the scale-free model decides, and status, /readyz and the log say so.",
    )
    calibration_corpus: str = Field(CALIBRATION_CORPUS, description="What the coefficients were fitted on.")
    scale_free_coefficients: dict[str, float] = Field(
        default_factory=lambda: dict(SCALE_FREE_EVIDENCE_COEFFICIENTS),
        description="Logistic model without the dense similarity (top_dense is ignored here): used when the "
        "embedder is not the one the coefficients were fitted for.",
    )
    scale_free_threshold: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="Threshold of the scale-free model: of 0.4, 0.45 and 0.5, 0.4 makes the fewest errors on the "
        "training sets (scripts/quoted_threshold.py).",
    )


class SupportSettings(Section):
    semantic_threshold: float = Field(
        SUPPORT_SEMANTIC_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Cosine with a cited source sentence at which a sentence with too few of its words in the "
        "source counts as supported (a near restatement).",
    )
    calibrated_for: str = Field(
        CALIBRATION_EMBEDDER,
        description="Embedder whose cosines semantic_threshold was chosen on; with another embedder configured "
        "only the lexical rules judge support (a rewording is then unsupported), and status, /readyz and the log "
        "say so.",
    )


class GeneratorSettings(Section):
    backend: Literal["llama_cpp", "openai"] = Field(
        "llama_cpp",
        description="llama_cpp: a GGUF from the model store in this process. openai: an OpenAI-compatible server.",
    )
    model: str = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="Generator name in the model store (llama_cpp) or the model id sent to the server (openai).",
    )
    n_ctx: int = Field(4096, ge=512, le=131072, description="Context window in tokens (prompt + answer).")
    n_threads: int = Field(0, ge=0, le=512, description="CPU threads for llama.cpp; 0 = one per core.")
    n_batch: int = Field(512, ge=8, le=8192, description="Prompt tokens evaluated per llama.cpp batch.")
    n_gpu_layers: int = Field(
        -1, ge=-1, le=1000, description="Layers offloaded to the GPU; -1 = all (a no-op on a CPU-only build)."
    )
    max_tokens: int = Field(384, ge=16, le=8192, description="Most tokens an answer may take.")
    temperature: float = Field(
        0.0, ge=0.0, le=2.0, description="Sampling temperature (0: greedy, the most likely wording of the sources)."
    )
    seed: int = Field(42, ge=0, description="Sampling seed, for repeatable answers.")
    reuse_system_prefix: bool = Field(
        True,
        description="llama_cpp: keep the KV cache of the prompt part before the question (system prompt) between "
        "answers, so only the rest is prefilled; answers stay the same whatever ran before.",
    )
    draft: Literal["none", "prompt_lookup"] = Field(
        "none",
        description="llama_cpp, greedy (temperature 0): draft-and-verify decoding. prompt_lookup drafts the tokens "
        "that follow the answer's last words where they occur in the sources and keeps those the model agrees "
        "with: the same text as plain decoding with the same settings, several tokens per model call. Needs "
        "generator.flash_attn = true and generator.kv_cache_type = q8_0, which prefill more slowly on 2 cores "
        "(first token 1.3x later, decoding 1.1x faster: not the default; docs/architecture.md).",
    )
    draft_max_tokens: int = Field(
        1,
        ge=1,
        le=64,
        description="Most tokens drafted per model call (generator.draft). 1: calls of 2 tokens, which llama.cpp's "
        "repacked kernels compute as they do one token; longer drafts are faster but their text may differ.",
    )
    flash_attn: bool = Field(
        False,
        description="llama_cpp: flash attention. On the CPU its logits do not depend on how many tokens a call "
        "evaluates, which is what lets generator.draft keep plain greedy decoding's tokens exactly.",
    )
    kv_cache_type: Literal["f16", "q8_0"] = Field(
        "f16",
        description="llama_cpp: KV cache type. q8_0 keeps flash attention on one code path for one token and for "
        "several, so generator.draft gives plain greedy decoding's tokens exactly; f16 is llama.cpp's default.",
    )
    repack: bool = Field(
        True,
        description="llama_cpp: let llama.cpp repack weights for its multi-token kernels (llama.cpp's default; "
        "single-token decoding 1.5x faster here). Their calls of 4+ tokens sum in another order than single tokens.",
    )
    cpu_variant: str = Field(
        "auto",
        description="llama_cpp built with every CPU variant (GGML_CPU_ALL_VARIANTS): auto = the best this CPU "
        "runs, AMX excluded; or a variant name (haswell, icelake, zen4, sapphirerapids…). Ignored by other builds.",
    )
    url: str = Field("", description="openai backend: base URL of the server, e.g. http://127.0.0.1:8081/v1.")
    api_key: str = Field("", description="openai backend: bearer token, if the server wants one (never logged).")
    timeout_s: float = Field(120.0, gt=0.0, le=3600.0, description="openai backend: timeout of one request.")
    retries: int = Field(2, ge=0, le=10, description="openai backend: retries of a failed connection or 5xx.")
    queue_size: int = Field(
        8, ge=0, le=1000, description="Requests that may wait for the local model; one more is refused as busy."
    )
    queue_timeout_s: float = Field(
        300.0, gt=0.0, le=3600.0, description="How long a request waits in the queue before it is refused as busy."
    )

    @model_validator(mode="after")
    def _drafting_is_exact(self) -> GeneratorSettings:
        # Only with flash attention and a q8_0 cache does a call of several tokens give the logits of
        # single-token calls: otherwise drafting would silently change the answers' text.
        if self.draft != "none" and not (self.flash_attn and self.kv_cache_type == "q8_0"):
            raise ValueError(
                f"generator.draft = {self.draft} needs generator.flash_attn = true and "
                "generator.kv_cache_type = q8_0 (otherwise the drafted text can differ from plain decoding)"
            )
        return self


AnswerMode = Literal["quoted", "generated"]


class AnswerSettings(Section):
    mode: AnswerMode = Field(
        "quoted",
        description="quoted: the answer is the SOP's own text, the section the question lands in shown whole and "
        "cited item by item (a procedure's steps in order, a value's line); no model writes it. generated: the "
        "local model writes a short answer from the retrieved passages (for questions that need synthesis).",
    )
    section_hits: int = Field(
        30, ge=5, le=200, description="Retrieved chunks whose sections are candidates for a quoted answer."
    )
    max_procedure_words: int = Field(
        1000,
        ge=50,
        le=20000,
        description="Longest procedure shown whole in a quoted answer; a longer one keeps its steps, warnings and "
        "hold points before the prose around them (or, when even those do not fit, the parts the question "
        "matched) and says what it left out.",
    )
    max_steps_words: int = Field(
        2000,
        ge=0,
        le=20000,
        description="A procedure longer than max_procedure_words still shows all its steps, commands, warnings and "
        "hold points (with the lines that introduce them and their sub-items) when, with its headings, they come "
        "to at most this many words; its prose then gives way. A reading budget, like max_procedure_words: set "
        "by hand (twice it), not fitted.",
    )
    excerpt_words: int = Field(
        150,
        ge=10,
        le=2000,
        description="Most words of the lines a quoted answer shows for a value or a fact (150: the budget "
        "scripts/fit_lines.py chose, the most answer phrases shown out of fold).",
    )
    max_sources: int = Field(6, ge=1, le=50, description="Most retrieved chunks given to the model.")
    window_chunks: int = Field(
        2,
        ge=0,
        le=20,
        description="Chunks that follow each retrieved chunk in its document, given with it as one source "
        "(0: the retrieved chunks alone).",
    )
    max_prompt_tokens: int = Field(
        1100,
        ge=256,
        le=131072,
        description="Prompt budget in tokens (also capped by generator.n_ctx minus generator.max_tokens): "
        "prefill time grows with it.",
    )
    evidence_sentences: int = Field(2, ge=1, le=10, description="Best-matching sentences shown per source.")
    llm_judge: Literal["auto", "on", "off"] = Field(
        "auto",
        description="The local model judges the section choice of a quoted answer: it reads the ranker's best few "
        "sections (heading and first lines) and its yes/no log-odds re-rank them (answer/quoted/judge.py, weight "
        "fitted for the shipped generator). auto: where the generator runs on a GPU or a server and can judge, "
        "before the steps are shown; not on the CPU, where it costs seconds a question and gained nothing end to "
        "end (docs/measurements/llm-judge.md). on: wherever the generator can judge (a log line says why not), on "
        "the CPU after the steps are shown (llm_judge_timing). off: never.",
    )
    llm_judge_timing: Literal["auto", "before", "after"] = Field(
        "auto",
        description="When the judge runs. before: the steps are shown once judged. after: the ranker's section is "
        "shown at once (the API's 'steps' event says checking: true), then the judge runs and, where it picks "
        "another section, a 'revised' event replaces the steps and names the one shown first. auto: before where "
        "the generator runs on a GPU or a server (tens of milliseconds), after on the CPU (seconds; llm_judge = "
        "on).",
    )


class FollowupSettings(Section):
    rewrite: Literal["none", "rule", "model", "both"] = Field(
        "rule",
        description="How a follow-up that needs the conversation becomes the standalone question that is searched "
        "(a question that makes sense alone is searched as asked, by a fitted decision): none (the last question "
        "alone, always), rule (the earlier questions, then the last), model (the local model rewrites it), both "
        "(the model's rewrite, the rule's text when the rewrite fails its checks). scripts/bench_mtrag.py "
        "measures them.",
    )
    max_turns: int = Field(
        1, ge=1, le=10, description="Earlier questions (with their answers, for the model) a follow-up is read with."
    )


class ServerSettings(Section):
    host: str = Field("127.0.0.1", description="Listen address; any non-loopback address requires a token.")
    port: int = Field(8080, ge=1, le=65535, description="Listen port.")
    max_question_chars: int = Field(2000, ge=10, le=100000, description="Longest question accepted (422 beyond).")
    request_timeout_s: float = Field(300.0, gt=0.0, le=3600.0, description="Most time one ask may take.")


class UploadSettings(Section):
    folder: Path | None = Field(
        None,
        description="Folder that POST /v1/documents writes into, registered as a source on first use; unset: "
        "uploads/ under the home. DELETE /v1/documents/{id} removes files only from here.",
    )
    max_file_bytes: int = Field(
        20 * 1024 * 1024,
        ge=1024,
        le=2**31,
        description="Largest file an upload may carry (413 beyond, nothing written); the uploaded file must also "
        "fit ingest.max_file_bytes.",
    )


class AuditSettings(Section):
    max_file_bytes: int = Field(
        10 * 1024 * 1024, ge=4096, le=2**34, description="Rotate the audit file when it reaches this size."
    )
    max_file_age_days: float = Field(1.0, gt=0.0, le=3650.0, description="Rotate the audit file after this age.")
    retention_days: float = Field(365.0, gt=0.0, le=36500.0, description="Delete rotated audit files older than this.")
    question_preview_chars: int = Field(
        80, ge=0, le=80, description="Characters of the question kept in a record (plus its sha256)."
    )


class ReportsSettings(Section):
    low_confidence: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="The gaps report counts an answer given with an evidence confidence below this as a gap "
        "(answers need evidence.threshold; between the two the documents answered on thin evidence).",
    )
    cluster_similarity: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="Cosine (the embedder's) at which two questions of the gaps report share a topic; chosen on "
        "the runbook tune set's questions and their rewordings (scripts/bench_gaps.py).",
    )
    covered_confidence: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="A topic is 'covered but not found' when one of its questions, searched again, finds evidence "
        "of at least this confidence; else 'not covered'. 0.5 on the runbook tune set: 'not covered' precision 1.0, "
        "recall 0.63; 0.7 would give 0.85 and 0.69 (scripts/bench_gaps.py).",
    )


class Settings(Section):
    home: Path = Field(Path(".appliance"), description="Folder holding all state: catalog, vectors, locks, logs.")
    models_dir: Path = Field(Path("models"), description="The local model store; nothing is ever downloaded.")
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
    support: SupportSettings = Field(default_factory=SupportSettings)
    generator: GeneratorSettings = Field(default_factory=GeneratorSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    followup: FollowupSettings = Field(default_factory=FollowupSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    reports: ReportsSettings = Field(default_factory=ReportsSettings)
    uploads: UploadSettings = Field(default_factory=UploadSettings)

    # Derived locations: one place that says where each piece of state lives.
    @property
    def catalog_path(self) -> Path:
        return self.home / "catalog.sqlite"

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def lock_path(self) -> Path:
        return self.home / "index.lock"

    @property
    def audit_dir(self) -> Path:
        return self.home / "audit"

    @property
    def tokens_path(self) -> Path:
        return self.home / "tokens.sqlite"

    @property
    def metrics_dir(self) -> Path:
        """The workers' shared metrics files (`appliance serve --workers N`; emptied at each start)."""
        return self.home / "metrics"

    @property
    def upload_dir(self) -> Path:
        return self.uploads.folder if self.uploads.folder is not None else self.home / "uploads"


SECTIONS: dict[str, type[Section]] = {
    name: field.annotation  # type: ignore[misc]
    for name, field in Settings.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, Section)
}


def config_file_path(environ: dict[str, str] | os._Environ[str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    if env.get("APPLIANCE_CONFIG"):
        return Path(env["APPLIANCE_CONFIG"])
    candidate = Path(env.get("APPLIANCE_HOME", ".appliance")) / "appliance.toml"
    return candidate if candidate.exists() else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist (APPLIANCE_CONFIG)") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


def _env_overrides(env: dict[str, str] | os._Environ[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Map APPLIANCE_* variables onto the settings tree; return (values, source names)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in Settings.model_fields:
        if name in SECTIONS:
            for sub in SECTIONS[name].model_fields:
                var = f"{ENV_PREFIX}{name}_{sub}".upper()
                if var in env:
                    values.setdefault(name, {})[sub] = env[var]
                    sources[f"{name}.{sub}"] = f"env {var}"
        else:
            var = f"{ENV_PREFIX}{name}".upper()
            if var in env:
                values[name] = env[var]
                sources[name] = f"env {var}"
    return values, sources


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _flatten_keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for key, value in tree.items():
        if isinstance(value, dict):
            keys.extend(_flatten_keys(value, f"{prefix}{key}."))
        else:
            keys.append(f"{prefix}{key}")
    return keys


class LoadedSettings:
    """Settings plus where each value came from (for `config show`)."""

    def __init__(self, settings: Settings, sources: dict[str, str], file: Path | None) -> None:
        self.settings = settings
        self.sources = sources
        self.file = file


def load_settings_with_sources(environ: dict[str, str] | os._Environ[str] | None = None) -> LoadedSettings:
    env = os.environ if environ is None else environ
    file = config_file_path(env)
    file_values = _read_toml(file) if file else {}
    env_values, sources = _env_overrides(env)
    for key in _flatten_keys(file_values):
        sources.setdefault(key, f"file {file}")
    try:
        settings = Settings.model_validate(_merge(file_values, env_values))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"])
            origin = sources.get(key, "default")
            problems.append(f"{key} ({origin}): {error['msg']}")
        raise ConfigError("invalid settings: " + "; ".join(problems)) from exc
    return LoadedSettings(settings, sources, file)


def load_settings(environ: dict[str, str] | os._Environ[str] | None = None) -> Settings:
    return load_settings_with_sources(environ).settings


def settings_table(loaded: LoadedSettings) -> list[dict[str, Any]]:
    """Every setting as {key, value, default, source, description}, for display."""
    rows: list[dict[str, Any]] = []
    settings = loaded.settings
    for name, field in Settings.model_fields.items():
        if name in SECTIONS:
            section = getattr(settings, name)
            for sub, subfield in SECTIONS[name].model_fields.items():
                key = f"{name}.{sub}"
                rows.append(
                    {
                        "key": key,
                        "value": _jsonable(getattr(section, sub)),
                        "default": _jsonable(subfield.get_default(call_default_factory=True)),
                        "source": loaded.sources.get(key, "default"),
                        "description": subfield.description or "",
                    }
                )
        else:
            rows.append(
                {
                    "key": name,
                    "value": _jsonable(getattr(settings, name)),
                    "default": _jsonable(field.get_default(call_default_factory=True)),
                    "source": loaded.sources.get(name, "default"),
                    "description": field.description or "",
                }
            )
    return rows


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value
