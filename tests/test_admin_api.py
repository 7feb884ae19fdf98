"""The admin page's API: status with the files not indexed, model and audit verification, tokens; each call
audited, a token's secret in its creator's response only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from appliance.audit.reader import read_records
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.server.auth import TokenStore
from tests.test_api import CHLORINE, assert_problem, bearer, make_client


@pytest.fixture
def admin(settings: Settings, tmp_path: Path) -> tuple[TestClient, dict[str, str]]:
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "SOP-CL-004.md").write_text(CHLORINE)
    (plant / "broken.docx").write_bytes(b"not a zip")
    ingest(settings, [plant])
    with TokenStore(settings.tokens_path) as store:
        _, secret = store.create("admin", "chief")
    return make_client(settings), bearer(secret)


def test_status_lists_the_index_and_the_files_not_indexed_with_their_reasons(
    admin: tuple[TestClient, dict[str, str]],
) -> None:
    client, headers = admin
    data = client.get("/v1/admin/status", headers=headers).json()
    assert (data["documents"], data["failed_documents"], data["consistent"]) == (1, 1, True)
    assert [(doc["path"], doc["status"]) for doc in data["not_indexed"]] == [("plant/broken.docx", "failed")]
    assert data["not_indexed"][0]["error"]
    assert data["sources"] and data["pending_changes"] == 0


def test_tokens_are_created_listed_and_revoked_and_the_secret_is_never_logged(
    admin: tuple[TestClient, dict[str, str]], settings: Settings
) -> None:
    client, headers = admin
    created = client.post("/v1/admin/tokens", json={"role": "operator", "name": "night-shift"}, headers=headers)
    assert created.status_code == 200
    secret, token = created.json()["secret"], created.json()["token"]
    assert secret.startswith(f"apl_{token['id']}_") and token["active"]
    assert client.post("/v1/ask", json={"question": "gasket"}, headers=bearer(secret)).status_code == 200

    listed = client.get("/v1/admin/tokens", headers=headers).json()["tokens"]
    assert [(t["name"], t["role"], t["active"]) for t in listed] == [
        ("chief", "admin", True),
        ("night-shift", "operator", True),
    ]
    assert "secret" not in json.dumps(listed) and "sha256" not in json.dumps(listed)

    revoked = client.post(f"/v1/admin/tokens/{token['id']}/revoke", headers=headers)
    assert revoked.status_code == 200 and revoked.json()["token"]["active"] is False
    assert_problem(client.post("/v1/ask", json={"question": "gasket"}, headers=bearer(secret)), 401)

    log = "".join(path.read_text() for path in settings.audit_dir.glob("audit-*.jsonl"))
    assert secret not in log and secret[len("apl_12345678_") :] not in log
    endpoints = [r["endpoint"] for r in read_records(settings.audit_dir) if r["principal"] == "chief"]
    assert endpoints == ["admin_token_create", "admin_tokens", "admin_token_revoke"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"role": "boss"}, 422, "role"),
        ({"role": "operator", "name": "two words"}, 422, "name"),
        ({"role": "operator", "name": "chief"}, 409, None),  # names are never reused
    ],
)
def test_a_token_that_cannot_be_created_says_why(
    admin: tuple[TestClient, dict[str, str]], body: dict, status: int, field: str | None
) -> None:
    client, headers = admin
    problem = assert_problem(client.post("/v1/admin/tokens", json=body, headers=headers), status)
    if field:
        assert [error["field"] for error in problem["errors"]] == [field]
    else:
        assert "chief" in problem["detail"]


def test_revoking_an_unknown_token_or_the_last_admin_token_is_refused(
    admin: tuple[TestClient, dict[str, str]],
) -> None:
    client, headers = admin
    assert_problem(client.post("/v1/admin/tokens/0000dead/revoke", headers=headers), 404)
    chief = client.get("/v1/admin/tokens", headers=headers).json()["tokens"][0]
    problem = assert_problem(client.post(f"/v1/admin/tokens/{chief['id']}/revoke", headers=headers), 409)
    assert "last active admin token" in problem["detail"]
    second = client.post("/v1/admin/tokens", json={"role": "admin", "name": "deputy"}, headers=headers).json()
    assert client.post(f"/v1/admin/tokens/{chief['id']}/revoke", headers=headers).status_code == 200
    assert client.get("/v1/admin/tokens", headers=bearer(second["secret"])).status_code == 200


def test_models_and_audit_verification_report_what_they_checked(
    admin: tuple[TestClient, dict[str, str]], settings: Settings
) -> None:
    client, headers = admin
    models = client.post("/v1/admin/models/verify", headers=headers).json()
    assert models["ok"] is True and models["models"] >= 1 and models["problems"] == []
    audit = client.post("/v1/admin/audit/verify", headers=headers).json()
    assert audit["ok"] is True and audit["records"] >= 1 and len(audit["last_hash"]) == 64

    # An edited record is found, with its file and line.
    current = sorted(settings.audit_dir.glob("audit-*.jsonl"))[-1]
    lines = current.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"status":200', '"status":201')
    current.write_text("".join(lines))
    broken = client.post("/v1/admin/audit/verify", headers=headers).json()
    assert broken["ok"] is False and broken["problems"][0]["file"] == current.name
