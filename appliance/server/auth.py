"""API tokens: bearer secrets with a role, kept in their own SQLite file (settings.tokens_path).

A secret looks like ``apl_<id>_<random>``: ``apl_`` + the token id (8 hex digits) + ``_`` + 32 random
bytes (``secrets.token_urlsafe``). It is shown once, by `create`, and only its sha256 is stored; the
id part lets `verify` find the row directly, and the full hash is still compared in constant time.
Tokens are revoked, never deleted, so a name in the audit log always means one token.
The database file is 0600 (SQLite gives its journal the same mode).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from appliance.errors import ApplianceError
from appliance.index.migrations import apply_migrations as apply_named_migrations

Role = Literal["operator", "admin"]
ROLES: tuple[Role, ...] = cast(tuple[Role, ...], get_args(Role))

# feedback: rate an answer; audit: read the audit log and the reports drawn from it (gaps, feedback);
# admin: the admin page's other actions (status, tokens, model checks).
ROLE_ALLOWS: dict[Role, frozenset[str]] = {"operator": frozenset({"ask", "search", "open", "feedback"})}
ROLE_ALLOWS["admin"] = ROLE_ALLOWS["operator"] | {"reindex", "documents", "audit", "admin", "upload"}

SECRET_PREFIX = "apl_"
_SECRET_RE = re.compile(r"apl_([0-9a-f]{8})_([A-Za-z0-9_-]{43})", re.ASCII)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", re.ASCII)
_ID_RE = re.compile(r"[0-9a-f]{8}", re.ASCII)
# last_used_at is bookkeeping: write it at most once a minute per token, not on every request.
LAST_USED_RESOLUTION_S = 60.0

# Named migrations, applied once each and recorded in `migrations`; append, never edit a shipped one.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_tokens",
        """
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,                -- 8 hex digits, also inside the secret
            name TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('operator', 'admin')),
            secret_sha256 TEXT NOT NULL,        -- hex sha256 of the whole secret; the secret is never stored
            created_at REAL NOT NULL,
            last_used_at REAL,
            revoked_at REAL
        );
        """,
    ),
]


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    role: Role
    created_at: float
    last_used_at: float | None
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def as_json(self) -> dict[str, Any]:
        """Everything about the token except its secret (which is not known) and its hash."""
        return {**asdict(self), "active": self.active}


def role_allows(role: Role, action: str) -> bool:
    return action in ROLE_ALLOWS.get(role, frozenset())


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply every token migration not yet recorded; return the names applied now."""
    return apply_named_migrations(conn, MIGRATIONS)


_COLUMNS = "id, name, role, created_at, last_used_at, revoked_at"


def _info(row: tuple[Any, ...]) -> TokenInfo:
    return TokenInfo(*row)


class TokenStore:
    """Create, list, revoke and verify tokens. Safe to share between threads (one lock per store)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _create_private(path)
        self._lock = threading.Lock()
        self.conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        apply_migrations(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TokenStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, role: Role, name: str | None = None) -> tuple[TokenInfo, str]:
        """Make a token; return its info and its secret. The secret cannot be recovered later."""
        if role not in ROLES:
            raise ApplianceError(f"unknown role {role!r}: choose one of {', '.join(ROLES)}")
        if name is not None:
            _check_name(name)
        with self._lock:
            for _ in range(16):
                token_id = secrets.token_hex(4)
                if self._row("id = ?", token_id) is None:
                    break
            else:  # 16 collisions in a 2**32 space: something is wrong with the random source
                raise ApplianceError("could not find an unused token id")
            token_name = name if name is not None else f"{role}-{token_id}"
            existing = self._row("name = ?", token_name)
            if existing is not None:
                state = "an active" if existing.active else "a revoked"
                raise ApplianceError(
                    f"{state} token named {token_name!r} already exists (id {existing.id}); names are unique, "
                    "even after revocation: choose another --name"
                )
            secret = f"{SECRET_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
            info = TokenInfo(token_id, token_name, role, time.time(), None, None)
            try:
                self.conn.execute(
                    "INSERT INTO tokens (id, name, role, secret_sha256, created_at) VALUES (?, ?, ?, ?, ?)",
                    (info.id, info.name, info.role, hash_secret(secret), info.created_at),
                )
            except sqlite3.IntegrityError as exc:  # another process took the name or id in between
                raise ApplianceError(f"token name {token_name!r} or id {token_id} is already taken: {exc}") from None
        return info, secret

    def list(self) -> list[TokenInfo]:
        with self._lock:
            rows = self.conn.execute(f"SELECT {_COLUMNS} FROM tokens ORDER BY created_at, id").fetchall()
        return [_info(row) for row in rows]

    def revoke(self, id_or_name: str) -> TokenInfo:
        """Revoke by id or name; revoking a revoked token is a no-op that returns it unchanged."""
        with self._lock:
            info = self._row("id = ?", id_or_name) or self._row("name = ?", id_or_name)
            if info is None:
                raise ApplianceError(f"no token with id or name {id_or_name!r}: see `appliance token list`")
            if not info.active:
                return info
            now = time.time()
            self.conn.execute("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, info.id))
            return self._row("id = ?", info.id) or info

    def verify(self, secret: str) -> TokenInfo | None:
        """The active token this secret belongs to, or None (unknown, revoked, malformed)."""
        match = _SECRET_RE.fullmatch(secret) if isinstance(secret, str) else None
        if match is None:
            return None
        offered = hash_secret(secret)
        with self._lock:
            row = self.conn.execute(
                f"SELECT {_COLUMNS}, secret_sha256 FROM tokens WHERE id = ?", (match.group(1),)
            ).fetchone()
            # Compare even when the id is unknown, so both paths take about the same time.
            stored = row[-1] if row is not None else "0" * 64
            if not hmac.compare_digest(offered, stored) or row is None:
                return None
            info = _info(row[:-1])
            if not info.active:
                return None
            return self._touch(info)

    def count_active(self) -> int:
        with self._lock:
            (count,) = self.conn.execute("SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL").fetchone()
        return int(count)

    def _touch(self, info: TokenInfo) -> TokenInfo:
        now = time.time()
        if info.last_used_at is not None and now - info.last_used_at < LAST_USED_RESOLUTION_S:
            return info
        try:
            self.conn.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", (now, info.id))
        except sqlite3.OperationalError:  # a busy database must not turn a valid token away
            return info
        return TokenInfo(info.id, info.name, info.role, info.created_at, now, info.revoked_at)

    def _row(self, where: str, value: str) -> TokenInfo | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM tokens WHERE {where}", (value,)).fetchone()
        return _info(row) if row is not None else None


def _check_name(name: str) -> None:
    if not _NAME_RE.fullmatch(name):
        raise ApplianceError(
            f"invalid token name {name!r}: 1-64 characters from letters, digits and . _ @ -, starting with a "
            "letter or digit"
        )
    if _ID_RE.fullmatch(name):
        raise ApplianceError(f"invalid token name {name!r}: 8 hex digits look like a token id; choose another name")


def _create_private(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it, and tighten an existing one."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:  # not our file: SQLite will still open it, with whatever mode its owner chose
        pass
    finally:
        os.close(fd)
