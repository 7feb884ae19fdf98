"""The catalog: SQLite, the source of truth for documents, chunks, embeddings and FTS5.

Each document is replaced or removed in one transaction (chunks, both FTS5 tables through
triggers, and the document row together), so a process killed at any moment leaves every
document either wholly old or wholly new. Chroma is derived from here and can be rebuilt.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from appliance.index.document_meta import read_meta, write_meta
from appliance.index.filters import Filters
from appliance.index.fulltext import FullText
from appliance.index.migrations import apply_migrations
from appliance.index.records import Chunk, ChunkRow, DocumentMeta


@dataclass(frozen=True)
class DocumentRow:
    id: int
    path: str
    abs_path: str
    source: str
    sha256: str | None
    size: int
    mtime: float
    type: str
    title: str | None
    status: str
    error: str | None
    chunk_count: int
    indexed_at: float


_CHUNK_COLUMNS = (
    "chunk_id",
    "rowid",
    "path",
    "title",
    "type",
    "ord",
    "header",
    "text",
    "section",
    "page",
    "start",
    "end",
    "identifiers",
    "ocr_confidence",
)
_CHUNK_SELECT = """
    SELECT c.id, c.rowid, d.path, COALESCE(d.title, ''), d.type, c.ord, c.header, c.text, c.section,
           c.page, c.start, c.end, c.identifiers, c.ocr_confidence
    FROM chunks c JOIN documents d ON d.id = c.document_id
"""


def _chunk_row(row: sqlite3.Row | tuple) -> ChunkRow:  # type: ignore[type-arg]
    return ChunkRow(**dict(zip(_CHUNK_COLUMNS, row, strict=True)))


def _use_write_ahead_log(conn: sqlite3.Connection, path: Path, *, timeout_s: float) -> None:
    """Switch the file to WAL (persistent: later opens find it set), waiting out other processes.

    Changing the journal mode needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy handler, when another connection is changing it or reading the new file at that
    moment; the workers of `serve --workers N` opening a fresh home together meet exactly that.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        else:
            if str(mode).lower() == "wal":
                return
            if time.monotonic() > deadline:
                raise sqlite3.OperationalError(
                    f"{path}: could not switch to WAL in {timeout_s:g} s (journal mode stays {mode})"
                )
        time.sleep(0.02)


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        _use_write_ahead_log(self.conn, path, timeout_s=30.0)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        apply_migrations(self.conn)
        self.fulltext = FullText(self.conn)

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    # --- state and sources -------------------------------------------------------------------

    def get_state(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_state(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (key, value))

    def add_source(self, path: str) -> None:
        self.conn.execute("INSERT OR IGNORE INTO sources(path, added_at) VALUES (?, ?)", (path, time.time()))

    def sources(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT path FROM sources ORDER BY path")]

    def relocate_source(self, old: str, new: str) -> int:
        """The source folder `old` now lives at `new`: the source and its documents' files follow it in one
        transaction (display paths unchanged). Returns how many documents moved."""
        with self.transaction() as conn:
            conn.execute("UPDATE sources SET path = ? WHERE path = ?", (new, old))
            return conn.execute(
                "UPDATE documents SET source = ?, abs_path = ? || substr(abs_path, ?) WHERE source = ?",
                (new, new, len(old) + 1, old),
            ).rowcount

    # --- documents ---------------------------------------------------------------------------

    def documents(self, source: str | None = None) -> list[DocumentRow]:
        sql = "SELECT * FROM documents"
        args: tuple[str, ...] = ()
        if source is not None:
            sql += " WHERE source = ?"
            args = (source,)
        return [DocumentRow(*row) for row in self.conn.execute(sql + " ORDER BY path", args)]

    def document(self, path: str) -> DocumentRow | None:
        row = self.conn.execute("SELECT * FROM documents WHERE path = ?", (path,)).fetchone()
        return DocumentRow(*row) if row else None

    def document_by_id(self, document_id: int) -> DocumentRow | None:
        row = self.conn.execute("SELECT * FROM documents WHERE id = ?", (document_id,)).fetchone()
        return DocumentRow(*row) if row else None

    def document_files(self, paths: Iterable[str]) -> dict[str, tuple[int, str]]:
        """Display path → (document id, absolute file path) of these documents, for links to the original."""
        wanted = list(dict.fromkeys(paths))
        found: dict[str, tuple[int, str]] = {}
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ",".join("?" * len(batch))
            for path, doc_id, abs_path in self.conn.execute(
                f"SELECT path, id, abs_path FROM documents WHERE path IN ({marks})", batch
            ):
                found[path] = (int(doc_id), str(abs_path))
        return found

    def document_meta(self, paths: Iterable[str]) -> dict[str, DocumentMeta]:
        """Display path → what each document says about itself (control block, furniture, warnings); a
        document that states nothing is absent."""
        return read_meta(self.conn, paths)

    def documents_named(self, names: Sequence[str]) -> dict[str, list[str]]:
        """Indexed documents whose title or display path holds each name (case-insensitive): a document number
        such as SOP-CL-004 or a runbook's alert name, as another document cites it."""
        found: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            pattern = "%" + name.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute(
                "SELECT path FROM documents WHERE status = 'indexed' AND "
                "(lower(path) LIKE ? ESCAPE '\\' OR lower(coalesce(title, '')) LIKE ? ESCAPE '\\') LIMIT 5",
                (pattern, pattern),
            ).fetchall()
            if rows:
                found[name] = [str(row[0]) for row in rows]
        return found

    def knows_word(self, word: str) -> bool:
        """Whether any chunk holds this word (stemmed, as the word index reads it)."""
        return self.fulltext.matches("words", '"' + word.replace('"', '""') + '"')

    def touch_document(self, path: str, mtime: float) -> None:
        """Same content, new mtime (e.g. `touch`): remember it so the next scan skips hashing."""
        self.conn.execute("UPDATE documents SET mtime = ? WHERE path = ?", (mtime, path))

    def note_error(self, path: str, error: str) -> None:
        """A newer version of this document failed: its indexed version stays, with the error beside it."""
        self.conn.execute("UPDATE documents SET error = ? WHERE path = ?", (error, path))

    def chunk_ids_of(self, path: str) -> list[str]:
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = ?", (path,)
            )
        ]

    def replace_document(self, **document: Any) -> None:
        """Write one document and its chunks atomically, replacing whatever was there."""
        with self.transaction():
            self.replace_document_in_transaction(**document)

    def replace_document_in_transaction(
        self,
        *,
        path: str,
        abs_path: str,
        source: str,
        sha256: str | None,
        size: int,
        mtime: float,
        doc_type: str,
        title: str | None,
        status: str,
        error: str | None,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray | None,
        embedding_model: str,
        meta: DocumentMeta | None = None,
    ) -> None:
        """Like replace_document, inside a transaction the caller holds (batch writes)."""
        if chunks and (embeddings is None or len(embeddings) != len(chunks)):
            raise ValueError("every chunk needs an embedding")
        conn = self.conn
        conn.execute("DELETE FROM documents WHERE path = ?", (path,))  # chunks cascade, FTS via triggers
        cursor = conn.execute(
            """INSERT INTO documents(path, abs_path, source, sha256, size, mtime, type, title, status,
                                     error, chunk_count, indexed_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (path, abs_path, source, sha256, size, mtime, doc_type, title, status, error, len(chunks), time.time()),
        )
        document_id = cursor.lastrowid
        assert document_id is not None
        write_meta(conn, document_id, meta)
        if chunks:
            assert embeddings is not None
            conn.executemany(
                """INSERT INTO chunks(id, document_id, ord, header, text, section, page, start, end,
                                      identifiers, text_sha256, embedding, embedding_model, ocr_confidence)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    (
                        c.chunk_id,
                        document_id,
                        c.ord,
                        c.header,
                        c.text,
                        c.section,
                        c.page,
                        c.start,
                        c.end,
                        c.identifiers,
                        text_sha256(c.embedding_text),
                        np.asarray(vector, dtype="<f4").tobytes(),
                        embedding_model,
                        c.ocr_confidence,
                    )
                    for c, vector in zip(chunks, embeddings, strict=True)
                ],
            )

    def remove_document(self, path: str) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM documents WHERE path = ?", (path,))

    # --- chunks ------------------------------------------------------------------------------

    def chunks_by_ids(self, ids: Sequence[str]) -> dict[str, ChunkRow]:
        found: dict[str, ChunkRow] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for row in self.conn.execute(f"{_CHUNK_SELECT} WHERE c.id IN ({marks})", batch):
                chunk = _chunk_row(row)
                found[chunk.chunk_id] = chunk
        return found

    def document_paths_of_chunks(self, ids: Sequence[str]) -> dict[str, str]:
        """{chunk id: its document's path} for those of `ids` the catalog holds."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            sql = f"SELECT c.id, d.path FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})"
            found.update(self.conn.execute(sql, batch).fetchall())
        return found

    def following_chunks(self, chunk: ChunkRow, count: int) -> list[ChunkRow]:
        """Up to `count` chunks that follow `chunk` in its document, in order."""
        rows = self.conn.execute(
            f"{_CHUNK_SELECT} WHERE c.document_id = (SELECT document_id FROM chunks WHERE id = ?) AND c.ord > ?"
            " ORDER BY c.ord LIMIT ?",
            (chunk.chunk_id, chunk.ord, count),
        )
        return [_chunk_row(row) for row in rows]

    def chunks_of_documents(self, paths: Sequence[str]) -> dict[str, list[ChunkRow]]:
        """Every chunk of each document in `paths`, in document order (what a section is rebuilt from)."""
        found: dict[str, list[ChunkRow]] = {path: [] for path in paths}
        if not found:
            return found
        marks = ",".join("?" * len(found))
        for row in self.conn.execute(f"{_CHUNK_SELECT} WHERE d.path IN ({marks}) ORDER BY d.path, c.ord", list(found)):
            chunk = _chunk_row(row)
            found[chunk.path].append(chunk)
        return found

    def chunks_by_rowids(self, rowids: Sequence[int]) -> dict[int, ChunkRow]:
        found: dict[int, ChunkRow] = {}
        for start in range(0, len(rowids), 500):
            batch = list(rowids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for row in self.conn.execute(f"{_CHUNK_SELECT} WHERE c.rowid IN ({marks})", batch):
                chunk = _chunk_row(row)
                found[chunk.rowid] = chunk
        return found

    def document_paths(self, filters: Filters) -> list[str]:
        """Indexed document paths that pass the filters (for the dense side's metadata filter)."""
        where, params = filters.sql("d")
        return [row[0] for row in self.conn.execute(f"SELECT d.path FROM documents d WHERE 1{where}", params)]

    def all_chunk_ids(self) -> set[str]:
        return {row[0] for row in self.conn.execute("SELECT id FROM chunks")}

    def embeddings(self, ids: Iterable[str]) -> Iterator[tuple[str, np.ndarray]]:
        id_list = list(ids)
        for start in range(0, len(id_list), 500):
            batch = id_list[start : start + 500]
            marks = ",".join("?" * len(batch))
            for chunk_id, blob in self.conn.execute(f"SELECT id, embedding FROM chunks WHERE id IN ({marks})", batch):
                yield chunk_id, np.frombuffer(blob, dtype="<f4")

    def embeddings_by_text_sha(self, shas: Iterable[str], model: str) -> dict[str, np.ndarray]:
        """Embeddings already computed for identical text: edits re-embed only what changed."""
        sha_list = list(set(shas))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(sha_list), 500):
            batch = sha_list[start : start + 500]
            marks = ",".join("?" * len(batch))
            for sha, blob in self.conn.execute(
                f"SELECT text_sha256, embedding FROM chunks WHERE embedding_model = ? AND text_sha256 IN ({marks})",
                [model, *batch],
            ):
                found[sha] = np.frombuffer(blob, dtype="<f4")
        return found

    def counts(self) -> dict[str, int]:
        row = self.conn.execute(
            """SELECT (SELECT COUNT(*) FROM documents WHERE status = 'indexed'),
                      (SELECT COUNT(*) FROM documents WHERE status = 'failed'),
                      (SELECT COUNT(*) FROM documents WHERE status = 'skipped'),
                      (SELECT COUNT(*) FROM chunks)"""
        ).fetchone()
        return {"documents": row[0], "failed": row[1], "skipped": row[2], "chunks": row[3]}

    def fts_integrity(self) -> list[str]:
        """FTS5's own integrity check of both tables against the chunks table."""
        problems: list[str] = []
        for table in ("chunks_fts", "chunks_ident"):
            try:
                self.conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table}: {exc}")
        return problems

    def rebuild_fts(self) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
            conn.execute("INSERT INTO chunks_ident(chunks_ident) VALUES ('rebuild')")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
