"""A standard-library fake Hugging Face Hub on 127.0.0.1, for the `hf:` model source tests.

It serves the endpoints huggingface_hub 2.4's `model_info`, `list_repo_tree`/`list_repo_files`,
`get_paths_info`, `hf_hub_download` and `snapshot_download` use, the way huggingface.co answers them:

    GET  /api/models/{repo}                         info at the default branch
    GET  /api/models/{repo}/revision/{rev}          {"id", "sha", "siblings": [{"rfilename"}]};
                                                    with ?blobs=True siblings also carry size, blobId
                                                    and, for LFS files, lfs {sha256, size, pointerSize}
    GET  /api/models/{repo}/tree/{rev}[/{path}]     ?recursive=…: [{"type": "file"|"directory", "oid",
                                                    "size", "path", "lfs": {"oid", "size", "pointerSize"}}]
    POST /api/models/{repo}/paths-info/{rev}        form paths=…: the same entries for those paths
    HEAD/GET /{repo}/resolve/{rev}/{path}           regular file: 200, ETag "<git blob sha1>", Content-Length,
                                                    X-Repo-Commit. LFS file: 302 to the "CDN" (a second server
                                                    on another port, so huggingface_hub does not follow the
                                                    redirect on HEAD, as with cdn-lfs.hf.co) with
                                                    X-Linked-Etag "<sha256>", X-Linked-Size, X-Repo-Commit.
    HEAD/GET (CDN) /lfs/{repo}/{sha256}             the LFS file's bytes

A repo made with `xet=True` also announces Xet storage on its LFS files' resolve answers (X-Xet-Hash and
a Link rel="xet-auth" to /api/models/{repo}/xet-read-token/{rev}, which this hub does not implement: a
client that tries Xet fails, and the request log shows it).

Errors carry the hub's X-Error-Code: RepoNotFound (401), RevisionNotFound (404), EntryNotFound (404).
Every request is recorded (`requests`) before it is answered; `corrupt(repo, path)` makes the server
send that file with one byte flipped while every piece of metadata (sizes, LFS sha256, ETags) still
describes the original.

`build_tiny_sentence_transformer` (torch and transformers, imported only when it is called) writes a real
but tiny sentence-transformers model to serve.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qs, quote, unquote, urlsplit

COMMIT = "5f0c3e1d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ot", ".ckpt", ".gguf")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    sha = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()


@dataclass
class FakeRepo:
    files: dict[str, bytes]  # repo path ("1_Pooling/config.json") -> content
    commit: str = COMMIT
    branch: str = "main"
    xet: bool = False  # LFS files also announce Xet storage (X-Xet-Hash, a Link rel="xet-auth"), as most do now

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)

    def sha256(self, path: str) -> str:
        return hashlib.sha256(self.files[path]).hexdigest()

    def entry(self, path: str) -> dict[str, object]:
        """A file as the tree and paths-info endpoints describe it."""
        data = self.files[path]
        if not self.is_lfs(path):
            return {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": path}
        pointer = lfs_pointer(data)
        return {
            "type": "file",
            "oid": git_blob_id(pointer),
            "size": len(data),
            "path": path,
            "lfs": {"oid": self.sha256(path), "size": len(data), "pointerSize": len(pointer)},
        }

    def folders(self) -> list[str]:
        return sorted({str(parent) for p in self.files for parent in PurePosixPath(p).parents if str(parent) != "."})

    def sibling(self, path: str, blobs: bool) -> dict[str, object]:
        if not blobs:
            return {"rfilename": path}
        entry = self.entry(path)
        sibling: dict[str, object] = {"rfilename": path, "size": entry["size"], "blobId": entry["oid"]}
        if "lfs" in entry:
            lfs = entry["lfs"]
            assert isinstance(lfs, dict)
            sibling["lfs"] = {"sha256": lfs["oid"], "size": lfs["size"], "pointerSize": lfs["pointerSize"]}
        return sibling


@dataclass(frozen=True)
class Request:
    server: str  # "hub" or "cdn"
    method: str
    path: str  # unquoted URL path, without the query
    query: str
    file: str | None = None  # the repo file a resolve or CDN request is about
    authorization: str | None = None


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo]
    requests: list[Request] = field(default_factory=list)
    corrupted: set[tuple[str, str]] = field(default_factory=set)
    endpoint: str = ""
    cdn: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def corrupt(self, repo: str, path: str) -> None:
        """Serve `path` with one byte flipped; the metadata keeps describing the original."""
        self.corrupted.add((repo, path))

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def downloaded(self, repo: str | None = None) -> list[str]:
        """Repo files whose bytes were sent (GET of a regular file's resolve URL or of an LFS blob)."""
        return sorted(
            {
                r.file
                for r in list(self.requests)
                if r.method == "GET" and r.file is not None
                if (r.server == "cdn" and (repo is None or r.path.startswith(f"/lfs/{repo}/")))
                or (r.server == "hub" and (repo is None or r.path.startswith(f"/{repo}/resolve/")))
            }
        )

    def content(self, repo: str, path: str) -> bytes:
        data = self.repos[repo].files[path]
        if (repo, path) in self.corrupted:
            flipped = bytearray(data)
            flipped[len(flipped) // 2] ^= 0x01
            return bytes(flipped)
        return data


def _make_handler(hub: FakeHub, server_name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._dispatch(body=False)

        def do_GET(self) -> None:
            self._dispatch(body=True)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            self._dispatch(body=True, form=form)

        # --- plumbing ---------------------------------------------------------------------------------

        def _dispatch(self, *, body: bool, form: dict[str, list[str]] | None = None) -> None:
            split = urlsplit(self.path)
            path = unquote(split.path)
            self._record_file: str | None = None
            self._recorded = False
            try:
                if server_name == "cdn":
                    self._cdn(path, body)
                elif path.startswith("/api/models/"):
                    self._api(path[len("/api/models/") :], parse_qs(split.query), form, body)
                else:
                    self._resolve(path, body)
            finally:
                self._record()  # a request that failed before answering is recorded too

        def _record(self) -> None:
            # Before the answer goes out: a client that raises on it (a 404) must find its request recorded.
            if self._recorded:
                return
            self._recorded = True
            split = urlsplit(self.path)
            hub.record(
                Request(
                    server=server_name,
                    method=self.command,
                    path=unquote(split.path),
                    query=split.query,
                    file=self._record_file,
                    authorization=self.headers.get("Authorization"),
                )
            )

        def _send(self, status: int, data: bytes, headers: dict[str, str], body: bool) -> None:
            self._record()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def _json(self, value: object, body: bool, headers: dict[str, str] | None = None) -> None:
            self._send(200, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})}, body)

        def _error(self, status: int, code: str, message: str, body: bool, commit: str | None = None) -> None:
            headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
            if commit:
                headers["X-Repo-Commit"] = commit
            self._send(status, json.dumps({"error": message}).encode(), headers, body)

        def _find_repo(self, rest: str) -> tuple[str, FakeRepo, str] | None:
            """(repo id, repo, what follows the id) for a path that starts with a known repo id."""
            for repo_id in sorted(hub.repos, key=len, reverse=True):
                if rest == repo_id or rest.startswith(repo_id + "/"):
                    return repo_id, hub.repos[repo_id], rest[len(repo_id) :].lstrip("/")
            return None

        def _commit(self, repo: FakeRepo, revision: str) -> str | None:
            return repo.commit if revision in (repo.commit, repo.branch) else None

        # --- /api/models/… ----------------------------------------------------------------------------

        def _api(self, rest: str, query: dict[str, list[str]], form: dict[str, list[str]] | None, body: bool) -> None:
            found = self._find_repo(rest)
            if found is None:
                self._error(401, "RepoNotFound", "Repository not found", body)
                return
            repo_id, repo, tail = found
            kind, _, remainder = tail.partition("/")
            if kind in ("", "revision"):
                revision = remainder if kind else repo.branch
                commit = self._commit(repo, revision)
                if commit is None:
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body)
                    return
                blobs = query.get("blobs", ["false"])[0].lower() == "true"
                self._json(
                    {
                        "_id": "fake",
                        "id": repo_id,
                        "modelId": repo_id,
                        "sha": commit,
                        "private": False,
                        "gated": False,
                        "disabled": False,
                        "tags": ["sentence-transformers"],
                        "library_name": "sentence-transformers",
                        "siblings": [repo.sibling(p, blobs) for p in sorted(repo.files)],
                    },
                    body,
                )
            elif kind == "tree":
                revision, _, folder = remainder.partition("/")
                if self._commit(repo, revision) is None:
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body)
                    return
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                self._json(self._tree(repo, folder.strip("/"), recursive), body)
            elif kind == "paths-info" and form is not None:
                if self._commit(repo, remainder) is None:
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {remainder}", body)
                    return
                wanted = form.get("paths", [])
                entries: list[dict[str, object]] = [repo.entry(p) for p in wanted if p in repo.files]
                entries += [
                    {"type": "directory", "oid": "0" * 40, "size": 0, "path": p} for p in repo.folders() if p in wanted
                ]
                self._json(entries, body)
            else:
                self._error(404, "EntryNotFound", f"no such endpoint: {tail}", body)

        def _tree(self, repo: FakeRepo, folder: str, recursive: bool) -> list[dict[str, object]]:
            prefix = f"{folder}/" if folder else ""

            def wanted(path: str) -> bool:
                if not path.startswith(prefix):
                    return False
                return recursive or "/" not in path[len(prefix) :]

            folders = [
                {
                    "type": "directory",
                    "oid": hashlib.sha1(p.encode(), usedforsecurity=False).hexdigest(),
                    "size": 0,
                    "path": p,
                }
                for p in repo.folders()
                if wanted(p)
            ]
            return folders + [repo.entry(p) for p in sorted(repo.files) if wanted(p)]

        # --- /{repo}/resolve/{rev}/{path} -------------------------------------------------------------

        def _resolve(self, path: str, body: bool) -> None:
            found = self._find_repo(path.lstrip("/"))
            if found is None:
                self._error(401, "RepoNotFound", "Repository not found", body)
                return
            repo_id, repo, tail = found
            kind, _, remainder = tail.partition("/")
            revision, _, filename = remainder.partition("/")
            if kind != "resolve":
                self._error(404, "EntryNotFound", f"no such endpoint: {tail}", body)
                return
            commit = self._commit(repo, revision)
            if commit is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body)
                return
            if filename not in repo.files:
                self._error(404, "EntryNotFound", f"{filename} does not exist at {commit}", body, commit)
                return
            self._record_file = filename
            data = repo.files[filename]
            if repo.is_lfs(filename):
                sha = repo.sha256(filename)
                location = f"{hub.cdn}/lfs/{quote(repo_id)}/{sha}?filename={quote(PurePosixPath(filename).name)}"
                headers = {
                    "Location": location,
                    "ETag": f'"{git_blob_id(lfs_pointer(data))}"',
                    "X-Linked-Etag": f'"{sha}"',
                    "X-Linked-Size": str(len(data)),
                    "X-Repo-Commit": commit,
                }
                if repo.xet:
                    headers["X-Xet-Hash"] = hashlib.sha256(b"xet" + data).hexdigest()
                    token_url = f"{hub.endpoint}/api/models/{repo_id}/xet-read-token/{commit}"
                    headers["Link"] = f'<{token_url}>; rel="xet-auth"'
                self._send(302, b"", headers, body)
                return
            self._send(
                200,
                hub.content(repo_id, filename),
                {
                    "ETag": f'"{git_blob_id(data)}"',
                    "X-Repo-Commit": commit,
                    "Content-Type": "application/octet-stream",
                    "Accept-Ranges": "bytes",
                },
                body,
            )

        # --- the CDN ----------------------------------------------------------------------------------

        def _cdn(self, path: str, body: bool) -> None:
            rest = path.removeprefix("/lfs/")
            repo_id, _, sha = rest.rpartition("/")
            repo = hub.repos.get(repo_id)
            matches = [p for p in (repo.files if repo else {}) if repo and repo.sha256(p) == sha]
            if not matches:
                self._send(404, b"NoSuchKey", {"Content-Type": "text/plain"}, body)
                return
            self._record_file = matches[0]
            self._send(
                200,
                hub.content(repo_id, matches[0]),
                {"ETag": f'"{sha}"', "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"},
                body,
            )

    return Handler


@contextmanager
def serve_fake_hub(repos: dict[str, FakeRepo]) -> Iterator[FakeHub]:
    """Run the hub and its CDN on 127.0.0.1 (free ports) for the duration of the block."""
    hub = FakeHub(repos=repos)
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(hub, name)) for name in ("hub", "cdn")]
    threads = []
    for server in servers:
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        threads.append(thread)
    hub.endpoint = f"http://127.0.0.1:{servers[0].server_address[1]}"
    hub.cdn = f"http://127.0.0.1:{servers[1].server_address[1]}"
    try:
        yield hub
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join(timeout=5)


def repo_from_folder(folder: Path, extra: dict[str, bytes] | None = None) -> FakeRepo:
    files = {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }
    return FakeRepo(files={**files, **(extra or {})})


TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "a", "pump", "valve", "seal", "close", "open", "before", "after", "reset", "trip", "check",
    "gauge", "pressure", "chlorine", "filter", "water", "level", "alarm", "##s", "##ed", "##ing", ".", ",",
]  # fmt: skip
TINY_DIMENSION = 32


def build_tiny_sentence_transformer(folder: Path) -> Path:
    """A real sentence-transformers model, small enough to build in a second or two: random BERT weights
    (hidden size 32, 2 layers, the 29-token TINY_VOCAB) saved as model.safetensors, its tokenizer files,
    and mean pooling, with the sentence-transformers files in the layout hub repos such as
    sentence-transformers/all-MiniLM-L6-v2 use (loads with sentence-transformers 5 and 6)."""
    import torch
    import transformers

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(  # type: ignore[attr-defined]
        vocab_file=str(folder / "vocab.txt"), do_lower_case=True
    )
    tokenizer.model_max_length = 32
    config = transformers.BertConfig(  # type: ignore[call-arg]
        vocab_size=len(TINY_VOCAB),
        hidden_size=TINY_DIMENSION,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    transformers.BertModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    st_files: dict[str, object] = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ],
        "sentence_bert_config.json": {"max_seq_length": 32, "do_lower_case": False},
        "config_sentence_transformers.json": {"__version__": {"sentence_transformers": "5.0.0"}, "prompts": {}},
        "1_Pooling/config.json": {
            "word_embedding_dimension": TINY_DIMENSION,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    }
    for name, value in st_files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return folder
