"""Named schema migrations of the catalog, each applied once and recorded in `migrations`.

Append new migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
import time

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_documents_chunks",
        """
        CREATE TABLE sources (
            path TEXT PRIMARY KEY,
            added_at REAL NOT NULL
        );
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,          -- display path: relative to its source's parent
            abs_path TEXT NOT NULL,
            source TEXT NOT NULL,
            sha256 TEXT,
            size INTEGER NOT NULL,
            mtime REAL NOT NULL,
            type TEXT NOT NULL,
            title TEXT,
            status TEXT NOT NULL CHECK (status IN ('indexed', 'failed', 'skipped')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            indexed_at REAL NOT NULL
        );
        CREATE INDEX documents_source ON documents(source);
        CREATE TABLE chunks (
            id TEXT PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            header TEXT NOT NULL,
            text TEXT NOT NULL,
            section TEXT NOT NULL,
            page INTEGER,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            identifiers TEXT NOT NULL,          -- exact identifiers found in the chunk, space-separated
            text_sha256 TEXT NOT NULL,          -- of the embedded text: reuse embeddings across edits
            embedding BLOB NOT NULL,            -- float32 little-endian, model below
            embedding_model TEXT NOT NULL
        );
        CREATE INDEX chunks_document ON chunks(document_id, ord);
        CREATE INDEX chunks_text_sha ON chunks(text_sha256);
        CREATE TABLE state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    ),
    (
        "0002_fts",
        # Porter-stemmed words for natural-language queries; a second table holds only exact
        # identifiers (VLV-3042-B, gitlab-ctl, etcdHighNumberOfLeaderChanges) with '-_.:/' kept
        # inside tokens, so an identifier never matches its parts scattered over a chunk.
        # Both are external-content tables kept in sync by triggers inside the same transaction.
        """
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            header, text, content='chunks', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE VIRTUAL TABLE chunks_ident USING fts5(
            identifiers, content='chunks', content_rowid='rowid',
            tokenize="unicode61 tokenchars '-_.:/'"
        );
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, header, text) VALUES (new.rowid, new.header, new.text);
            INSERT INTO chunks_ident(rowid, identifiers) VALUES (new.rowid, new.identifiers);
        END;
        CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, header, text)
                VALUES ('delete', old.rowid, old.header, old.text);
            INSERT INTO chunks_ident(chunks_ident, rowid, identifiers)
                VALUES ('delete', old.rowid, old.identifiers);
        END;
        CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, header, text)
                VALUES ('delete', old.rowid, old.header, old.text);
            INSERT INTO chunks_ident(chunks_ident, rowid, identifiers)
                VALUES ('delete', old.rowid, old.identifiers);
            INSERT INTO chunks_fts(rowid, header, text) VALUES (new.rowid, new.header, new.text);
            INSERT INTO chunks_ident(rowid, identifiers) VALUES (new.rowid, new.identifiers);
        END;
        """,
    ),
    (
        "0003_vector_changes",
        # Every chunk added or removed, in commit order, written by triggers inside the writer's own
        # transaction: what the local vector store still has to apply (appliance.index.vector_sync).
        # AUTOINCREMENT: a pruned log never hands out a sequence number again.
        """
        CREATE TABLE vector_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id TEXT NOT NULL,
            at REAL NOT NULL                    -- unix time of the write
        );
        CREATE TRIGGER chunks_vector_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id, at) VALUES (new.id, (julianday('now') - 2440587.5) * 86400.0);
        END;
        CREATE TRIGGER chunks_vector_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id, at) VALUES (old.id, (julianday('now') - 2440587.5) * 86400.0);
        END;
        CREATE TRIGGER chunks_vector_au AFTER UPDATE OF id, embedding ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id, at) VALUES (old.id, (julianday('now') - 2440587.5) * 86400.0);
            INSERT INTO vector_changes(chunk_id, at) VALUES (new.id, (julianday('now') - 2440587.5) * 86400.0);
        END;
        """,
    ),
    (
        "0004_ocr_confidence",
        # A chunk read by OCR: the mean recognition confidence (0..1) of its least trusted block;
        # NULL for text from a text layer or a text format.
        "ALTER TABLE chunks ADD COLUMN ocr_confidence REAL;",
    ),
    (
        "0005_document_control",
        # What a document says about itself (records.DocumentMeta): its control block (number, title,
        # revision, effective and review dates), the page furniture ingest took out of its chunks and the
        # loader's warnings, as JSON lists. One row per indexed document that has any; it goes with its row.
        """
        CREATE TABLE document_meta (
            document_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            number TEXT,
            title TEXT,
            revision TEXT,
            effective TEXT,                     -- ISO date where the document's date reads one way, else as written
            review TEXT,
            review_from_cycle INTEGER NOT NULL DEFAULT 0,
            furniture TEXT NOT NULL DEFAULT '[]',
            warnings TEXT NOT NULL DEFAULT '[]'
        );
        """,
    ),
]


def apply_migrations(conn: sqlite3.Connection, migrations: list[tuple[str, str]] = MIGRATIONS) -> list[str]:
    """Apply every migration not yet recorded in the database's `migrations` table; return the names applied
    now. Also used by the other SQLite files of the home (tokens) with their own list.

    Processes may open a new database together (the workers of `appliance serve --workers N` on a fresh
    home): what is pending is read again and applied under one write lock (BEGIN IMMEDIATE), so one process
    applies each migration and the others find it done. An up-to-date database is only read: opening it
    never waits for a writer (an ingest in progress). The connection must not be inside a transaction."""
    if not _pending(conn, migrations):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        pending = _pending(conn, migrations)
        for name, script in pending:
            for statement in statements(script):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return [name for name, _ in pending]


def _pending(conn: sqlite3.Connection, migrations: list[tuple[str, str]]) -> list[tuple[str, str]]:
    recorded = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")} if recorded else set()
    return [(name, script) for name, script in migrations if name not in done]


def statements(script: str) -> list[str]:
    """A migration's statements, one by one (executescript would commit the transaction they run in): split
    at each semicolon that ends a complete statement, so a trigger's BEGIN … END stays whole."""
    found: list[str] = []
    pending = ""
    *ended, rest = script.split(";")  # rest: what follows the last semicolon
    for piece in ended:
        pending += piece
        if sqlite3.complete_statement(pending + ";"):
            if _has_sql(pending):
                found.append(pending.strip() + ";")
            pending = ""
        else:
            pending += ";"
    pending += rest
    if _has_sql(pending):
        raise ValueError(f"a migration ends in an unfinished statement: {pending.strip()[:80]!r}")
    return found


def _has_sql(text: str) -> bool:
    """Whether `text` holds more than blank lines and -- comments."""
    return any(line.split("--", 1)[0].strip() for line in text.splitlines())
