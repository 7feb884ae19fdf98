# The Makefile's host-only llama-cpp-python build (make run, make lint) includes this right after each
# project() call (CMAKE_PROJECT_INCLUDE). llama-cpp-python forces llama.cpp's `common` library ON in its
# cache; a normal variable shadows a cache entry (policy CMP0126), so `common` and the HTTP client it pulls
# in are neither built nor installed. The Python package never loads them, and they were more than half of
# the build's compile time on 2 cores. The portable build that `appliance bundle` ships does not use this.
set(LLAMA_BUILD_COMMON OFF)
