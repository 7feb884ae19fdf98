"""The embedder run by ONNX Runtime: the same network as sentence-transformers runs, exported from the
shipped weights (`onnx_export.py`), with the same tokenizer, mean pooling and normalization.

Why not sentence-transformers' own `backend="onnx"`: it loads through optimum, whose releases pin
transformers 4.x (this project runs 5.x); the network, the tokenizer file and the pooling are simple
enough to run directly. Texts are batched longest first, like `SentenceTransformer.encode`, so each
batch pads to nearly its own length.

Threads: ONNX Runtime fixes a session's thread pool when the session is made, so a batch session
(ingest: every core) and a query session (one thread: a single short text gains little from more,
and under load a second thread only waits for a core) are made lazily, each once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from appliance.errors import ModelNotFound
from appliance.models.embedder_backends import ONNX_EXPORT

ONNX_FILES = {"onnx": ONNX_EXPORT, "onnx-int8": "onnx/model_qint8.onnx"}


def onnx_file(model_path: Path, backend: str) -> Path:
    path = model_path / ONNX_FILES[backend]
    if not path.is_file():
        raise ModelNotFound(
            f"embedder backend '{backend}' needs {path}, which the model store does not hold. Rebuild the "
            "store with `appliance models init` (it exports the ONNX files from the shipped weights) or "
            'install a bundle; or set embedder.backend = "torch".'
        )
    return path


class OnnxEncoder:
    """Normalized mean-pooled embeddings from an exported BERT-style encoder."""

    def __init__(self, model_path: Path, backend: str, *, max_tokens: int, threads: int, query_threads: int) -> None:
        from tokenizers import Tokenizer

        self.path = onnx_file(model_path, backend)
        self.max_tokens = max_tokens
        self.threads = threads
        self.query_threads = query_threads
        self._tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.dimension = int(self._session(query_threads).get_outputs()[0].shape[-1])

    def _session(self, threads: int) -> Any:
        with self._lock:
            session = self._sessions.get(threads)
            if session is None:
                import onnxruntime as ort

                # No telemetry: ORT_DISABLE_TELEMETRY, forced by appliance.offline_env before this import, is
                # what stops the uploader (ort.disable_telemetry_events() alone did not stop its look-ups).
                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                # Spinning threads take cores from llama.cpp and the reindex while they wait for work.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
                self._sessions[threads] = session
            return session

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        session = self._session(self.query_threads if len(texts) == 1 else self.threads)
        encodings = self._tokenizer.encode_batch_fast(list(texts))  # ids only: no character offsets to compute
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out: np.ndarray | None = None
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(None, feeds)[0]
            pooled = _mean_pool(hidden, mask)
            if out is None:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        assert out is not None
        return out


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    vectors = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
