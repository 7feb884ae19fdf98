"""The CPU code of a llama.cpp built with every CPU variant (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS).

Such a build ships one shared library per instruction-set level (libggml-cpu-haswell.so for AVX2,
-icelake and -zen4 for AVX-512 with VNNI, -sapphirerapids with AMX, …) and loads none by itself:
the program picks one at run time. One portable wheel then runs each CPU at its best, where the
plain GGML_NATIVE=OFF build is AVX2 everywhere.

"auto" takes the variant llama.cpp scores best for this CPU, except the AMX one: its AMX kernels
died with SIGILL on a Sapphire Rapids guest here (AMX offered by cpuid and granted by the kernel, but
the tile instructions faulted in llama.cpp's worker threads), and the process cannot recover from
that. `generator.cpu_variant` names a variant to use instead ("sapphirerapids" where AMX is known
to work). A build with its CPU code linked in (the default build) is left as it is.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path

import llama_cpp

from appliance.errors import GeneratorError

logger = logging.getLogger("appliance.generator")

_LOCK = threading.Lock()
_loaded: str | None = None
AMX_VARIANTS = ("sapphirerapids",)


def _library_dir() -> Path:
    return Path(llama_cpp.__file__).resolve().parent / "lib"


def _ggml() -> ctypes.CDLL:
    # The very file libllama was linked against (its soname), so that the registry is the one
    # llama.cpp reads: a wheel holds libggml.so and libggml.so.0 as two copies, two libraries.
    library = ctypes.CDLL(str(_library_dir() / "libggml.so.0"))
    library.ggml_backend_reg_count.restype = ctypes.c_size_t
    library.ggml_backend_load.argtypes = [ctypes.c_char_p]
    library.ggml_backend_load.restype = ctypes.c_void_p
    return library


def variants() -> dict[str, Path]:
    """The CPU variants this llama-cpp-python ships ({} for a build with its CPU code linked in)."""
    prefix = "libggml-cpu-"
    return {path.name[len(prefix) : -3]: path for path in sorted(_library_dir().glob(f"{prefix}*.so"))}


def _score(path: Path) -> int:
    """llama.cpp's own score of a variant for this CPU (0: it cannot run here)."""
    handle = ctypes.CDLL(str(path))
    score = getattr(handle, "ggml_backend_score", None)
    if score is None:
        return 0
    score.restype = ctypes.c_int
    return int(score())


def load_cpu_backend(preferred: str = "auto") -> str | None:
    """Load the CPU variant once per process; the name of the loaded one (None: nothing to choose)."""
    global _loaded
    with _LOCK:
        if _loaded is not None:
            return _loaded
        available = variants()
        if not available or _ggml().ggml_backend_reg_count() > 0:
            return None  # the CPU code is linked in, or a CPU backend is loaded already
        if preferred != "auto":
            if preferred not in available:
                raise GeneratorError(
                    f"generator.cpu_variant {preferred!r} is not in this llama.cpp build "
                    f"(it has: {', '.join(available) or 'none'})"
                )
            choice = preferred
        else:
            scores = {name: _score(path) for name, path in available.items() if name not in AMX_VARIANTS}
            choice = max(scores, key=lambda name: scores[name])
            if scores[choice] <= 0:
                raise GeneratorError(f"no CPU variant of this llama.cpp build runs on this CPU ({', '.join(scores)})")
        if not _ggml().ggml_backend_load(str(available[choice]).encode()):
            raise GeneratorError(f"llama.cpp could not load its CPU variant {available[choice]}")
        _loaded = choice
        logger.info("llama.cpp CPU variant: %s (%s)", choice, available[choice].name)
        return choice


def loaded_variant() -> str | None:
    return _loaded
