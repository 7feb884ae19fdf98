"""Write bundle/requirements.lock: the exact runtime closure of `appliance` in this venv.

The bundle's wheelhouse is downloaded from this list (`pip download --no-deps`), so it must name
every runtime dependency, pinned, and nothing from the dev extras. It is computed from the
installed distributions' metadata (markers evaluated for this interpreter), not from `pip freeze`,
which would also list pytest, ruff and the model-weight packages.

Run after changing dependencies:  .venv/bin/python scripts/lock_requirements.py
"""

from __future__ import annotations

import importlib.metadata as metadata
import platform
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "bundle" / "requirements.lock"
# Built from source for the target (portable CPU or CUDA) and added to the wheelhouse separately.
BUILT_SEPARATELY = {"llama-cpp-python", "appliance"}
# Installed with --no-deps beside `appliance` (Makefile): its metadata names opencv-python, whose cv2
# is the same module as opencv-python-headless's without the GUI libraries a server lacks.
ALSO = ("rapidocr-onnxruntime",)
SAME_MODULE = {"opencv-python": "opencv-python-headless"}


def runtime_closure(root: str) -> dict[str, str]:
    pinned: dict[str, str] = {}
    pending = [(root, frozenset[str]())]
    while pending:
        name, extras = pending.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        first_visit = key not in pinned
        pinned[key] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if requirement.marker and not any(requirement.marker.evaluate(env) for env in environments):
                continue
            child: str = canonicalize_name(requirement.name)  # str: SAME_MODULE may rename it
            child = SAME_MODULE.get(child, child)
            if (child not in pinned and first_visit) or requirement.extras:
                pending.append((child, frozenset(requirement.extras)))
    return pinned


def main() -> None:
    pinned = runtime_closure("appliance")
    for name in ALSO:
        pinned.update(runtime_closure(name))
    lines = [
        "# Runtime closure of `appliance`, written by scripts/lock_requirements.py; do not edit by hand.",
        f"# Python {platform.python_version()} on {sys.platform}-{platform.machine()}.",
        "# torch is the CPU build (its +cpu wheel comes from https://download.pytorch.org/whl/cpu on a",
        "# connected host); llama-cpp-python is built for the target by `appliance bundle` itself.",
    ]
    lines += [f"{name}=={version}" for name, version in sorted(pinned.items()) if name not in BUILT_SEPARATELY]
    LOCK.parent.mkdir(exist_ok=True)
    LOCK.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{LOCK.relative_to(ROOT)}: {len(lines) - 4} packages")


if __name__ == "__main__":
    main()
