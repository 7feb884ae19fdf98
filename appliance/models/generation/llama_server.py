"""`python -m appliance.models.generation.llama_server [options]`: llama-cpp-python's OpenAI-compatible
server (`python -m llama_cpp.server`, the same options) with llama.cpp's CPU code loaded first.

The llama.cpp the Makefile and the bundles ship carries every CPU variant as a library of its own
(GGML_BACKEND_DL) and loads none by itself; `python -m llama_cpp.server` does not load one either and
stops with "no backends are loaded". This loads the best variant for the CPU (cpu_backends, "auto"),
then runs that server as it is.
"""

from __future__ import annotations

import runpy

from appliance.models.generation.cpu_backends import load_cpu_backend


def main() -> None:
    load_cpu_backend("auto")
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
