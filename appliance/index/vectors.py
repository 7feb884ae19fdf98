"""Vectors in ChromaDB: cosine HNSW, ids = chunk ids, embeddings always passed explicitly.

Chroma is a derived index: the catalog holds every embedding, and `reconcile` makes Chroma's id
set equal to the catalog's (deleting strays, re-adding what is missing). Query results are
always filtered through the catalog, so a stray vector is never shown to a user.

Two ways to reach Chroma, chosen by `vectors.url`:
  * empty: a PersistentClient on `settings.chroma_path` (single process: `appliance serve --workers 1`);
  * http://HOST:PORT: a `chroma run` server (HttpClient), shared by every process and machine that
    uses the same catalog (one collection per catalog: reconcile deletes ids its catalog does not
    know, so two catalogs must not share vectors.collection). Its heartbeat is checked first, with a
    short timeout, so a server that is down or is not Chroma is one clear VectorStoreUnavailable
    naming the URL and the setting; so is a server that stops answering later. A collection deleted
    on the server (a wiped or restored server) is looked up again once, so a long-running process
    picks up the one a reindex recreates.
Telemetry is off for both clients (`anonymized_telemetry=False`; appliance.offline_env also sets
ANONYMIZED_TELEMETRY=False for the whole process).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from appliance.config import VectorSettings
from appliance.durable import WORKING_MARGIN, ensure_space, tree_size
from appliance.errors import ApplianceError, ConfigError, VectorStoreUnavailable

log = logging.getLogger(__name__)
BATCH = 1000
PAGE = 10000
# The chroma 1.x server's API; the heartbeat answers {"nanosecond heartbeat": …}.
HEARTBEAT_PATH = "/api/v2/heartbeat"
# A server that does not accept a connection within this is reported as unreachable.
CONNECT_TIMEOUT_S = 5.0
# The HttpClient waits forever by default; a hung server must become an error instead.
REQUEST_TIMEOUT_S = 120.0
SETTING_HINT = "setting vectors.url, env APPLIANCE_VECTORS_URL"


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    similarity: float  # cosine similarity, 1 = identical


@dataclass(frozen=True)
class ServerAddress:
    """vectors.url, parsed: only scheme, host and port (the HttpClient takes nothing else)."""

    scheme: str
    host: str
    port: int

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_server_url(url: str) -> ServerAddress:
    """http(s)://HOST[:PORT] with nothing else (no user, path, query); the port defaults to 8000 (443 for https)."""
    problem = f"vectors.url must look like http://HOST:PORT, got {url!r}"
    try:
        parsed = urlparse(url.strip())
        port = parsed.port
    except ValueError as exc:
        raise ConfigError(f"{problem}: {exc}") from None
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.username is not None
        or parsed.path not in ("", "/")
        or parsed.query
        or parsed.fragment
    ):
        raise ConfigError(problem)
    default_port = 443 if parsed.scheme == "https" else 8000
    return ServerAddress(parsed.scheme, parsed.hostname, port or default_port)


def _client_settings() -> Any:
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


def _reason(exc: BaseException) -> str:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _warn_if_configured_otherwise(collection: Any, settings: VectorSettings) -> None:
    """Chroma keeps the HNSW parameters a collection was created with: say so when settings differ."""
    try:
        stored = collection.configuration_json.get("hnsw") or {}
    except Exception:  # an older server without configuration_json: nothing to compare
        return
    wanted = {
        "max_neighbors": settings.hnsw_max_neighbors,
        "ef_construction": settings.hnsw_ef_construction,
        "ef_search": settings.hnsw_ef_search,
    }
    differing = {key: (stored.get(key), value) for key, value in wanted.items() if stored.get(key) not in (None, value)}
    if differing:
        log.warning(
            "the Chroma collection %r was created with other HNSW parameters (%s); they stay until the "
            "collection is rebuilt: see docs/scaling.md",
            settings.collection,
            ", ".join(f"{key} {old} ≠ setting {new}" for key, (old, new) in differing.items()),
        )


class VectorIndex:
    def __init__(self, settings: VectorSettings, local_path: Path) -> None:
        import chromadb

        self.settings = settings
        self.local_path = local_path
        self.address: ServerAddress | None = None
        if settings.url:
            self.address = parse_server_url(settings.url)
            self._check_heartbeat(self.address)
            try:
                self.client = chromadb.HttpClient(
                    host=self.address.host,
                    port=self.address.port,
                    ssl=self.address.scheme == "https",
                    settings=_client_settings(),
                )
            except Exception as exc:  # chromadb turns a failed connection into a ValueError
                raise self._unavailable("cannot be reached", exc) from None
            self._bound_request_time()
        else:
            local_path.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(local_path), settings=_client_settings())
        with self._server_errors():
            self.collection = self._open_collection()

    def close(self) -> None:
        """Release the client. Chroma stops a local store's in-memory state when the process's last client
        of that folder closes, so the next one loads it from disk again."""
        close = getattr(self.client, "close", None)  # the Client class has it; the ClientAPI type does not say so
        with contextlib.suppress(Exception):  # an HttpClient to a server that is gone: nothing to release
            if close is not None:
                close()

    # --- the server ---------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the vectors live, for messages: the server's address or the local folder."""
        return self.address.base if self.address is not None else str(self.local_path)

    def _unavailable(self, what: str, exc: BaseException) -> VectorStoreUnavailable:
        assert self.address is not None
        return VectorStoreUnavailable(
            f"the Chroma server at {self.address.base} ({SETTING_HINT}) {what}: {_reason(exc)}. "
            f"Start it (chroma run --path DIR --host {self.address.host} --port {self.address.port}) "
            "or correct vectors.url (empty: the local store under the home)"
        )

    def _check_heartbeat(self, address: ServerAddress) -> None:
        """Fail fast and clearly when nothing (or something other than Chroma) answers at the URL."""
        import httpx

        url = address.base + HEARTBEAT_PATH
        try:
            response = httpx.get(url, timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S))
        except httpx.HTTPError as exc:
            raise self._unavailable("cannot be reached", exc) from None
        body: Any = None
        with contextlib.suppress(ValueError):
            body = response.json()
        if response.status_code != 200 or not isinstance(body, dict) or "nanosecond heartbeat" not in body:
            raise VectorStoreUnavailable(
                f"{address.base} ({SETTING_HINT}) does not answer like a Chroma 1.x server: "
                f"GET {HEARTBEAT_PATH} gave HTTP {response.status_code}. Point vectors.url at a `chroma run` server"
            )

    def _bound_request_time(self) -> None:
        """Give the HttpClient's httpx session a timeout (chromadb creates it with none at all)."""
        import httpx

        session = getattr(getattr(self.client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.timeout = httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        else:  # a chromadb that no longer looks like this: keep working, without the bound
            log.warning("could not set a request timeout on the Chroma HttpClient")

    def _open_collection(self) -> Any:
        collection = self.client.get_or_create_collection(
            name=self.settings.collection,
            embedding_function=None,  # the default one would download a model
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_construction": self.settings.hnsw_ef_construction,
                    "max_neighbors": self.settings.hnsw_max_neighbors,
                    "ef_search": self.settings.hnsw_ef_search,
                }
            },
        )
        _warn_if_configured_otherwise(collection, self.settings)
        return collection

    @contextlib.contextmanager
    def _server_errors(self) -> Iterator[None]:
        """On a server, a failed request becomes an error that names the server and the setting."""
        if self.address is None:
            yield
            return
        import httpx
        from chromadb.errors import ChromaError

        try:
            yield
        except httpx.HTTPError as exc:
            raise self._unavailable("does not answer", exc) from None
        except ChromaError as exc:
            raise ApplianceError(
                f"the Chroma server at {self.address.base} ({SETTING_HINT}) refused a request: {_reason(exc)}"
            ) from None

    def _call(self, method: str, **kwargs: Any) -> Any:
        """`self.collection.<method>(**kwargs)`, with the server's failures made clear."""
        from chromadb.errors import NotFoundError

        with self._server_errors():
            try:
                return getattr(self.collection, method)(**kwargs)
            except NotFoundError:
                # The collection was deleted under us (a wiped or restored server, another process
                # that recreated it): open it again, once. Its vectors come back with the next reindex.
                log.warning("collection %r is gone (%s); opening it again", self.settings.collection, self.location)
                self.collection = self._open_collection()
                return getattr(self.collection, method)(**kwargs)

    # --- operations ---------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._call("count"))

    def ids(self) -> set[str]:
        found: set[str] = set()
        offset = 0
        while True:
            page_ids = list(self._call("get", include=[], limit=PAGE, offset=offset)["ids"])
            found.update(page_ids)
            if len(page_ids) < PAGE:
                return found
            offset += PAGE

    def _ensure_room(self, needed: int, what: str) -> None:
        """A local store is never written without room to spare: Chroma, out of space mid-write, fails even its
        reads afterwards (its compaction) and can hang its next write. DiskFull instead, with nothing written."""
        if self.address is None:
            ensure_space(self.local_path, needed + tree_size(self.local_path) // 4 + 2 * WORKING_MARGIN, what)

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, paths: Sequence[str]) -> None:
        self._ensure_room(4 * int(np.asarray(embeddings).nbytes), f"writing {len(ids)} vector(s)")
        for start in range(0, len(ids), BATCH):
            end = start + BATCH
            self._call(
                "upsert",
                ids=list(ids[start:end]),
                embeddings=np.asarray(embeddings[start:end], dtype=np.float32),
                metadatas=[{"path": p} for p in paths[start:end]],
            )

    def delete(self, ids: Iterable[str]) -> None:
        id_list = list(ids)
        if id_list:
            self._ensure_room(512 * len(id_list), f"deleting {len(id_list)} vector(s)")
        for start in range(0, len(id_list), BATCH):
            self._call("delete", ids=id_list[start : start + BATCH])

    def query(self, embedding: np.ndarray, n: int, paths: Sequence[str] | None = None) -> list[VectorHit]:
        """Nearest chunks; `paths` restricts them to those documents (a metadata filter in Chroma)."""
        # No count() first: Chroma 1.x answers n_results above the collection size (or an empty
        # collection) with what it has, and count() costs ~80 ms at a million vectors (bench_scale).
        if paths is not None and not paths:
            return []
        where: Any = None
        if paths is not None:
            where = {"path": {"$in": list(paths)}} if len(paths) > 1 else {"path": paths[0]}
        result = self._call(
            "query",
            query_embeddings=np.asarray([embedding], dtype=np.float32),
            n_results=n,
            where=where,
            include=["distances"],
        )
        ids = result["ids"][0]
        distances = (result.get("distances") or [[]])[0]
        return [VectorHit(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]
