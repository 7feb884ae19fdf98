"""Which runtime embeds: the embedder.backend setting, with "auto" resolved for this CPU.

torch       sentence-transformers on torch, float32: the reference.
torch-bf16  the same under torch.autocast(bfloat16): the matrix products in bfloat16 on CPUs that
            compute it natively (AMX or AVX512_BF16; elsewhere it would be emulated, and slower);
            vectors at cosine 0.99998 to float32 (scripts/bench_embedder.py).
onnx        ONNX Runtime, the network exported to ONNX in float32 (cosine 1.0000 to torch).
onnx-int8   ONNX Runtime with int8 matrix products, activations quantized per token
            (`onnx_quantize.py`): the fastest on CPUs without bfloat16, at cosine ≥ 0.99 to torch
            (not 1.0: rankings can move), a text's vector independent of its batch. Not chosen by
            "auto", which keeps rankings as torch makes them.
auto        torch-bf16 where the CPU has AMX, otherwise onnx when the model folder holds its ONNX export
            (the shipped embedders do), otherwise torch: a model an admin added without an export still
            runs. AVX512_BF16 alone is not enough: on 2 such cores ONNX Runtime fp32 embedded batches
            1.9x as fast as torch-bf16, a query in 6.2 ms against 27, and gave its first vector 0.4 s
            after the interpreter started against 6.5 (torch-bf16 imports sentence-transformers and
            transformers' modelling code); scripts/bench_embedder_start.py.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from appliance.errors import ConfigError

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
SETTINGS_BACKENDS = ("auto", *BACKENDS)
CPUINFO = Path("/proc/cpuinfo")
ONNX_EXPORT = "onnx/model.onnx"  # in the model folder: what "auto" looks for and the onnx backend runs


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    try:
        for line in CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def native_bf16() -> bool:
    """The CPU multiplies bfloat16 matrices in hardware (oneDNN then runs torch's bf16 kernels)."""
    return bool(cpu_flags() & {"amx_bf16", "avx512_bf16"})


def amx_bf16() -> bool:
    """The CPU has AMX tiles for bfloat16, where torch-bf16 outruns ONNX Runtime fp32 (82 against 37 chunks/s)."""
    return "amx_bf16" in cpu_flags()


def resolve_backend(backend: str, device: str = "cpu", model_path: Path | None = None) -> str:
    """The runtime that embeds; for "auto" with `model_path`, onnx only where that folder holds the export."""
    if backend not in SETTINGS_BACKENDS:
        raise ConfigError(f"unknown embedder backend '{backend}' (expected one of {', '.join(SETTINGS_BACKENDS)})")
    if backend == "auto":
        if device != "cpu":
            return "torch"
        if amx_bf16():
            return "torch-bf16"
        exported = model_path is None or (model_path / ONNX_EXPORT).is_file()
        return "onnx" if exported else "torch"
    if backend == "torch-bf16" and device == "cpu" and not native_bf16():
        raise ConfigError(
            'embedder.backend = "torch-bf16" needs a CPU that computes bfloat16 natively (AMX or AVX512_BF16); '
            'this one would emulate it, slower than float32: use "auto", "onnx" or "torch"'
        )
    return backend


# Texts per batch when embedder.batch_size is 0. ONNX Runtime on 2 AVX2 cores embedded the runbook chunks
# at 41.6 chunks/s in batches of 8 against 27.2 in batches of 64 (longest first, so less padding; the
# activations of a small batch stay in cache). torch keeps sentence-transformers' larger batches.
RUNTIME_BATCH_SIZE = {"onnx": 8, "onnx-int8": 8}
DEFAULT_BATCH_SIZE = 64


def batch_size_for(backend: str, configured: int = 0) -> int:
    return configured or RUNTIME_BATCH_SIZE.get(backend, DEFAULT_BATCH_SIZE)


# How each runtime's vectors are made, where that changed between releases: the int8 export once
# quantized activations per batch and now per token, so its earlier vectors are not reused.
RUNTIME_TAGS = {"onnx-int8": "onnx-int8.per-token"}


def embedding_model_id(model_name: str, backend: str) -> str:
    """What stored vectors are tagged with: vectors of one runtime are never reused for another."""
    return model_name if backend == "torch" else f"{model_name}+{RUNTIME_TAGS.get(backend, backend)}"
