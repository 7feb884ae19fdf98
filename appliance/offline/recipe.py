"""bundle/models.toml: the bundle recipe (profiles → one model per role; each model's source and pins).

See the comment at the top of bundle/models.toml for the source kinds. Parsing checks the shape and
names the offending key; fetching lives in offline/sources.py.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.offline.manifest import BundleError

ROLES = ("embedder", "reranker", "generator", "ocr")
SOURCE_KINDS = ("pypi", "hf", "path")
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_SHA_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class FilePin:
    size: int | None
    sha256: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: str
    source: str
    license: str
    attribution: str = ""
    license_file: str | None = None  # relative to the recipe's folder
    include: str | None = None  # pypi: a folder or file inside the package(s)
    concat: str | None = None  # pypi: glob of split parts, joined in package order
    target_file: str | None = None  # single-file models: the file name in the store
    allow_patterns: tuple[str, ...] = ()
    files: dict[str, FilePin] = field(default_factory=dict)  # store-relative path → pin
    export: str | None = None  # "onnx": an embedder's ONNX files made from its weights (pinned in `files`)

    @property
    def kind(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def location(self) -> str:
        return self.source.split(":", 1)[1]

    @property
    def store_target(self) -> str:
        """Where the model lives in the store: a folder, or one file for single-file models."""
        if self.target_file:
            return f"{self.role}/{self.target_file}"
        return f"{self.role}/{self.name}"

    def pypi_requirements(self) -> list[tuple[str, str]]:
        pairs = []
        for item in self.location.split(","):
            name, sep, version = item.strip().partition("==")
            if not sep or not name or not version:
                raise BundleError(f"model {self.name}: pypi source item {item!r} must be NAME==VERSION")
            pairs.append((name, version))
        return pairs

    def hf_repo_revision(self) -> tuple[str, str]:
        repo, sep, revision = self.location.partition("@")
        if not sep or not repo or not revision:
            raise BundleError(f"model {self.name}: hf source must be hf:REPO@REVISION, got {self.source!r}")
        return repo, revision

    @property
    def pinned(self) -> bool:
        """A source is pinned when its revision is a commit or every file has a sha256 pin."""
        if self.kind != "hf":
            return bool(self.files) or self.kind == "pypi"
        return bool(COMMIT_RE.fullmatch(self.hf_repo_revision()[1])) or bool(self.files)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    models: dict[str, str]  # role → model name
    notes: tuple[str, ...]
    config: dict[str, Any]


@dataclass(frozen=True)
class Recipe:
    path: Path
    profiles: dict[str, Profile]
    models: dict[str, ModelSpec]

    def profile(self, name: str) -> Profile:
        if name not in self.profiles:
            raise BundleError(f"{self.path}: no profile {name!r} (known: {', '.join(self.profiles)})")
        return self.profiles[name]

    def models_of(self, profile: Profile) -> list[ModelSpec]:
        return [self.models[profile.models[role]] for role in ROLES if role in profile.models]


def _str(table: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise BundleError(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value


def _parse_model(name: str, table: dict[str, Any], where: str) -> ModelSpec:
    role = _str(table, "role", where)
    if role not in ROLES:
        raise BundleError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
    source = _str(table, "source", where)
    assert source is not None
    if source.split(":", 1)[0] not in SOURCE_KINDS or ":" not in source:
        raise BundleError(
            f"{where}.source: {source!r} must start with one of {', '.join(k + ':' for k in SOURCE_KINDS)}"
        )
    files: dict[str, FilePin] = {}
    for path, pin in (table.get("files") or {}).items():
        if not isinstance(pin, dict) or not _SHA_RE.fullmatch(str(pin.get("sha256", ""))):
            raise BundleError(f'{where}.files.{path!r}: expected {{ size = N, sha256 = "<64 hex>" }}')
        files[path] = FilePin(size=pin.get("size"), sha256=pin["sha256"])
    patterns = table.get("allow_patterns") or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise BundleError(f"{where}.allow_patterns: expected a list of glob strings")
    spec = ModelSpec(
        name=name,
        role=str(role),
        source=source,
        license=_str(table, "license", where) or "",
        attribution=_str(table, "attribution", where, required=False) or "",
        license_file=_str(table, "license_file", where, required=False),
        include=_str(table, "include", where, required=False),
        concat=_str(table, "concat", where, required=False),
        target_file=_str(table, "target_file", where, required=False),
        allow_patterns=tuple(patterns),
        files=files,
        export=_str(table, "export", where, required=False),
    )
    if spec.export is not None and (spec.export != "onnx" or spec.role != "embedder"):
        raise BundleError(f'{where}.export: only an embedder can have export = "onnx", got {spec.export!r}')
    if spec.kind == "pypi":
        spec.pypi_requirements()
        if not (spec.include or spec.concat):
            raise BundleError(f"{where}: a pypi source needs `include` (a folder or file) or `concat` (split parts)")
    if spec.kind == "hf":
        spec.hf_repo_revision()
    if spec.concat and not spec.target_file:
        raise BundleError(f"{where}: `concat` needs `target_file`")
    return spec


def load_recipe(path: Path) -> Recipe:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"bundle recipe {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise BundleError(f"{path}: not valid TOML: {exc}") from None
    models = {
        name: _parse_model(name, table, f"{path.name}: models.{name}")
        for name, table in (data.get("models") or {}).items()
    }
    profiles: dict[str, Profile] = {}
    for name, table in (data.get("profiles") or {}).items():
        where = f"{path.name}: profiles.{name}"
        chosen = {role: table[role] for role in ROLES if table.get(role)}
        for role, model in chosen.items():
            if model not in models:
                raise BundleError(f"{where}.{role}: no model {model!r} in [models]")
            if models[model].role != role:
                raise BundleError(f"{where}.{role}: model {model!r} is a {models[model].role}")
        if "embedder" not in chosen or "generator" not in chosen:
            raise BundleError(f"{where}: a profile needs at least an embedder and a generator")
        profiles[name] = Profile(
            name=name,
            description=str(table.get("description", "")),
            models=chosen,
            notes=tuple(table.get("notes") or ()),
            config=dict(table.get("config") or {}),
        )
    if not profiles:
        raise BundleError(f"{path}: no [profiles] defined")
    return Recipe(path=path, profiles=profiles, models=models)
