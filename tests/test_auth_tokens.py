"""API tokens: only hashes are stored, verify is strict, roles follow the matrix, the CLI never leaks."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from appliance.cli.main import cli
from appliance.errors import ApplianceError
from appliance.server import auth
from appliance.server.auth import ROLE_ALLOWS, TokenStore, role_allows

SECRET_FORMAT = re.compile(r"apl_[0-9a-f]{8}_[A-Za-z0-9_-]{43}")
RunCli = Callable[..., Result]


@pytest.fixture
def store(home: Path) -> TokenStore:
    return TokenStore(home / "tokens.sqlite")


def database_bytes(home: Path) -> bytes:
    """The database and any journal beside it."""
    return b"".join(path.read_bytes() for path in sorted(home.glob("tokens.sqlite*")))


def test_create_returns_a_secret_stored_only_as_its_sha256(store: TokenStore, home: Path) -> None:
    info, secret = store.create("operator")
    assert SECRET_FORMAT.fullmatch(secret)
    assert secret.startswith(f"apl_{info.id}_")
    assert info.name == f"operator-{info.id}" and info.role == "operator" and info.active
    store.close()
    with sqlite3.connect(home / "tokens.sqlite") as conn:
        (stored,) = conn.execute("SELECT secret_sha256 FROM tokens WHERE id = ?", (info.id,)).fetchone()
    assert stored == hashlib.sha256(secret.encode()).hexdigest()
    data = database_bytes(home)
    assert secret.encode() not in data
    assert secret.split("_", 2)[2].encode() not in data  # not even the random part alone


def test_verify_accepts_the_secret_and_rejects_wrong_malformed_unknown_and_revoked(store: TokenStore) -> None:
    info, secret = store.create("admin", name="night-shift")
    verified = store.verify(secret)
    assert verified is not None and verified.id == info.id and verified.name == "night-shift"
    assert verified.last_used_at is not None

    random_part = secret.split("_", 2)[2]
    wrong = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    other_id = f"apl_{'0' * 8 if info.id != '0' * 8 else '1' * 8}_{random_part}"
    for bad in [
        wrong,
        other_id,
        "",
        "apl_",
        secret + "x",
        secret + "\n",
        " " + secret,
        secret.upper(),
        f"Bearer {secret}",
    ]:
        assert store.verify(bad) is None, bad
    assert store.verify(None) is None  # type: ignore[arg-type]

    store.revoke("night-shift")
    assert store.verify(secret) is None


def test_verify_updates_last_used_at_at_most_once_a_minute(
    store: TokenStore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info, secret = store.create("operator")

    def stored_last_used() -> float | None:
        return next(t.last_used_at for t in store.list() if t.id == info.id)

    first = store.verify(secret)
    assert first is not None and stored_last_used() == first.last_used_at
    second = store.verify(secret)
    assert second is not None and second.last_used_at == first.last_used_at == stored_last_used()

    monkeypatch.setattr(auth, "LAST_USED_RESOLUTION_S", 0.0)
    third = store.verify(secret)
    assert third is not None and third.last_used_at is not None and first.last_used_at is not None
    assert third.last_used_at > first.last_used_at and stored_last_used() == third.last_used_at


def test_roles_allow_what_the_matrix_says() -> None:
    assert ROLE_ALLOWS["operator"] == {"ask", "search", "open", "feedback"}
    assert ROLE_ALLOWS["admin"] == {
        "ask",
        "search",
        "open",
        "feedback",
        "reindex",
        "documents",
        "audit",
        "admin",
        "upload",
    }
    for action in (
        "ask",
        "search",
        "open",
        "feedback",
    ):  # feedback: rate an answer  # open: the original file of a cited document
        assert role_allows("operator", action) and role_allows("admin", action)
    for action in ("reindex", "documents", "audit", "admin"):
        assert not role_allows("operator", action) and role_allows("admin", action)
    assert not role_allows("admin", "shutdown")
    assert not role_allows("guest", "ask")  # type: ignore[arg-type]


def test_revoke_by_id_or_name_and_unknown_revoke_errors(store: TokenStore) -> None:
    first, _ = store.create("operator", name="desk-1")
    second, _ = store.create("operator")
    assert store.count_active() == 2
    assert not store.revoke("desk-1").active
    assert not store.revoke(second.id).active
    assert store.count_active() == 0
    assert store.revoke("desk-1").revoked_at == next(t for t in store.list() if t.id == first.id).revoked_at
    with pytest.raises(ApplianceError, match="no-such-token"):
        store.revoke("no-such-token")


def test_duplicate_and_invalid_names_error(store: TokenStore) -> None:
    store.create("operator", name="desk")
    with pytest.raises(ApplianceError, match="'desk' already exists"):
        store.create("admin", name="desk")
    store.revoke("desk")
    with pytest.raises(ApplianceError, match="revoked token named 'desk'"):
        store.create("operator", name="desk")
    for bad in ["", "has space", "x" * 65, "deadbeef"]:  # the last one looks like a token id
        with pytest.raises(ApplianceError, match="invalid token name"):
            store.create("operator", name=bad)
    with pytest.raises(ApplianceError, match="unknown role"):
        store.create("root")  # type: ignore[arg-type]
    assert [t.name for t in store.list()] == ["desk"]


def test_database_file_is_0600_and_migrations_apply_once(home: Path) -> None:
    path = home / "tokens.sqlite"
    old_umask = os.umask(0o022)
    try:
        with TokenStore(path) as store:
            info, _ = store.create("admin")
    finally:
        os.umask(old_umask)
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)
    with TokenStore(path) as store:  # reopening tightens the mode and keeps the tokens
        assert [t.id for t in store.list()] == [info.id]
        assert [row[0] for row in store.conn.execute("SELECT name FROM migrations")] == ["0001_tokens"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_token_info_json_never_holds_a_secret_or_hash(store: TokenStore) -> None:
    info, _ = store.create("operator")
    assert set(info.as_json()) == {"id", "name", "role", "created_at", "last_used_at", "revoked_at", "active"}


# ------------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def run_cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    monkeypatch.setenv("APPLIANCE_HOME", str(home))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args))

    return run


def test_cli_token_create_list_revoke_json(run_cli: RunCli, home: Path) -> None:
    created = run_cli("token", "create", "--role", "admin", "--name", "ops", "--json")
    assert created.exit_code == 0, created.output
    payload = json.loads(created.output)
    secret = payload["secret"]
    assert SECRET_FORMAT.fullmatch(secret) and "cannot be shown again" in payload["note"]
    assert payload["token"]["name"] == "ops" and payload["token"]["role"] == "admin"

    human = run_cli("token", "create", "--role", "operator")
    assert human.exit_code == 0 and "cannot be shown again" in human.output
    assert SECRET_FORMAT.search(human.output)

    listed = run_cli("token", "list", "--json")
    assert listed.exit_code == 0
    assert secret not in listed.output and hashlib.sha256(secret.encode()).hexdigest() not in listed.output
    assert "apl_" not in listed.output
    tokens = json.loads(listed.output)["tokens"]
    assert tokens[0]["name"] == "ops" and len(tokens) == 2
    assert all(set(t) == {"id", "name", "role", "created_at", "last_used_at", "revoked_at", "active"} for t in tokens)

    revoked = run_cli("token", "revoke", "ops", "--json")
    assert revoked.exit_code == 0 and json.loads(revoked.output)["token"]["active"] is False
    assert json.loads(run_cli("token", "list", "--json").output)["active"] == 1
    with TokenStore(home / "tokens.sqlite") as store:
        assert store.verify(secret) is None

    unknown = run_cli("token", "revoke", "nobody")
    assert unknown.exit_code == 1 and "nobody" in unknown.output
    duplicate = run_cli("token", "create", "--role", "operator", "--name", "ops")
    assert duplicate.exit_code == 1 and "already exists" in duplicate.output
    bad_role = run_cli("token", "create", "--role", "root")
    assert bad_role.exit_code == 2
