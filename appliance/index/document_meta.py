"""The catalog's `document_meta` table (migration 0005): each document's control block, page furniture
and loader warnings, written with the document in its transaction and read back by display path."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from appliance.index.records import DocumentControl, DocumentMeta


def write_meta(conn: sqlite3.Connection, document_id: int, meta: DocumentMeta | None) -> None:
    """Store `meta` for a document row just inserted (nothing when there is nothing to keep)."""
    if meta is None or not (meta.control.stated or meta.control.title or meta.furniture or meta.warnings):
        return
    control = meta.control
    conn.execute(
        """INSERT INTO document_meta(document_id, number, title, revision, effective, review, review_from_cycle,
                                     furniture, warnings)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            document_id,
            control.number,
            control.title,
            control.revision,
            control.effective,
            control.review,
            int(control.review_from_cycle),
            json.dumps(list(meta.furniture), ensure_ascii=False),
            json.dumps(list(meta.warnings), ensure_ascii=False),
        ),
    )


def read_meta(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, DocumentMeta]:
    """Display path → the stored meta of those documents that have any."""
    wanted = list(dict.fromkeys(paths))
    found: dict[str, DocumentMeta] = {}
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        marks = ",".join("?" * len(batch))
        rows = conn.execute(
            f"""SELECT d.path, m.number, m.title, m.revision, m.effective, m.review, m.review_from_cycle,
                       m.furniture, m.warnings
                FROM document_meta m JOIN documents d ON d.id = m.document_id WHERE d.path IN ({marks})""",
            batch,
        )
        for path, number, title, revision, effective, review, from_cycle, furniture, warnings in rows:
            control = DocumentControl(number, title, revision, effective, review, bool(from_cycle))
            found[path] = DocumentMeta(control, tuple(json.loads(furniture)), tuple(json.loads(warnings)))
    return found
