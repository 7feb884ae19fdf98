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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


class EmbedderSettings(Section):
    model: str = Field("all-MiniLM-L6-v2", description="Folder name of the embedder in the model store.")
    batch_size: int = Field(64, ge=1, le=4096, description="Texts per embedding batch.")
    device: str = Field("cpu", description="Torch device for the embedder: cpu, cuda, cuda:0, mps.")


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


class SearchSettings(Section):
    k: int = Field(10, ge=1, le=1000, description="Hits returned by default.")
    mode: Literal["lexical", "dense", "hybrid"] = Field("hybrid", description="Default retrieval mode.")
    candidates: int = Field(100, ge=1, le=5000, description="Top-N chunks taken from each retriever before fusion.")
    fusion: Literal["rrf", "weighted", "zscore"] = Field(
        "weighted",
        description="How hybrid mode fuses the two lists: reciprocal rank, min-max weighted scores, or weighted "
        "z-scores of each list (docs/generalization.md).",
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


class RerankSettings(Section):
    model: str = Field(
        "auto",
        description="Reranker in the model store: 'auto' (the installed one, if any), 'none', or a model name.",
    )
    top: int = Field(30, ge=1, le=1000, description="How many fused candidates the reranker rescores.")
    batch_size: int = Field(32, ge=1, le=1024, description="Pairs per reranker batch.")


# Fitted by scripts/calibrate_evidence.py on scripts/qa/runbooks_tune.jsonl (logistic regression).
DEFAULT_EVIDENCE_COEFFICIENTS = {
    "intercept": -0.885,
    "top_dense": 3.0154,
    "coverage": 0.3017,
    "any_unknown": 0.0,
    "unknown_identifier": -1.3328,
    "agreement": 0.6622,
}


class EvidenceSettings(Section):
    refuse_unknown_terms: bool = Field(
        True, description="Refuse when a word of the question occurs nowhere in the documents."
    )
    threshold: float = Field(
        0.6574, ge=0.0, le=1.0, description="Answer only when the evidence model's probability reaches this."
    )
    coefficients: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_EVIDENCE_COEFFICIENTS),
        description="Logistic model over the evidence signals (intercept, top_dense, coverage, …).",
    )
    rerank_weight: float = Field(
        1.0, ge=0.0, le=100.0, description="Logit added per unit of cross-encoder score above rerank_center."
    )
    rerank_center: float = Field(0.0, ge=-100.0, le=100.0, description="Cross-encoder score that is neutral.")


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


class AnswerSettings(Section):
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


class FollowupSettings(Section):
    rewrite: Literal["none", "rule", "model", "both"] = Field(
        "rule",
        description="How a follow-up becomes the standalone question that is searched: none (the last question "
        "alone), rule (the earlier questions, then the last), model (the local model rewrites it), both (the "
        "model's rewrite, the rule's text when the rewrite fails its checks). scripts/bench_mtrag.py measures them.",
    )
    max_turns: int = Field(
        1, ge=1, le=10, description="Earlier questions (with their answers, for the model) a follow-up is read with."
    )


class ServerSettings(Section):
    host: str = Field("127.0.0.1", description="Listen address; any non-loopback address requires a token.")
    port: int = Field(8080, ge=1, le=65535, description="Listen port.")
    max_question_chars: int = Field(2000, ge=10, le=100000, description="Longest question accepted (422 beyond).")
    request_timeout_s: float = Field(300.0, gt=0.0, le=3600.0, description="Most time one ask may take.")


class AuditSettings(Section):
    max_file_bytes: int = Field(
        10 * 1024 * 1024, ge=4096, le=2**34, description="Rotate the audit file when it reaches this size."
    )
    max_file_age_days: float = Field(1.0, gt=0.0, le=3650.0, description="Rotate the audit file after this age.")
    retention_days: float = Field(365.0, gt=0.0, le=36500.0, description="Delete rotated audit files older than this.")
    question_preview_chars: int = Field(
        80, ge=0, le=80, description="Characters of the question kept in a record (plus its sha256)."
    )


class Settings(Section):
    home: Path = Field(Path(".appliance"), description="Folder holding all state: catalog, vectors, locks, logs.")
    models_dir: Path = Field(Path("models"), description="The local model store; nothing is ever downloaded.")
    ingest: IngestSettings = Field(default_factory=IngestSettings)  # type: ignore[arg-type]
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)  # type: ignore[arg-type]
    vectors: VectorSettings = Field(default_factory=VectorSettings)  # type: ignore[arg-type]
    index: IndexSettings = Field(default_factory=IndexSettings)  # type: ignore[arg-type]
    search: SearchSettings = Field(default_factory=SearchSettings)  # type: ignore[arg-type]
    rerank: RerankSettings = Field(default_factory=RerankSettings)  # type: ignore[arg-type]
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)  # type: ignore[arg-type]
    generator: GeneratorSettings = Field(default_factory=GeneratorSettings)  # type: ignore[arg-type]
    answer: AnswerSettings = Field(default_factory=AnswerSettings)  # type: ignore[arg-type]
    followup: FollowupSettings = Field(default_factory=FollowupSettings)  # type: ignore[arg-type]
    server: ServerSettings = Field(default_factory=ServerSettings)  # type: ignore[arg-type]
    audit: AuditSettings = Field(default_factory=AuditSettings)  # type: ignore[arg-type]

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

    def embedder_path(self) -> Path:
        return self.models_dir / "embedder" / self.embedder.model


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
                        "default": _jsonable(subfield.default),
                        "source": loaded.sources.get(key, "default"),
                        "description": subfield.description or "",
                    }
                )
        else:
            rows.append(
                {
                    "key": name,
                    "value": _jsonable(getattr(settings, name)),
                    "default": _jsonable(field.default),
                    "source": loaded.sources.get(name, "default"),
                    "description": field.description or "",
                }
            )
    return rows


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value
