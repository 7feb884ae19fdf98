"""Uploads over the API: POST /v1/documents writes into the upload folder (a source) and indexes the file with
the reindex's own code; DELETE /v1/documents/{id} removes only uploaded files. Bad input of every kind (type,
size, zip bomb, name games, malformed bodies) is a 4xx naming the field or the file, with nothing written
and the index unchanged. Real SQLite, Chroma and embedder; the LLM is the scripted fake.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import docx
import pytest
from fastapi.testclient import TestClient

from appliance.config import GeneratorSettings, Settings, UploadSettings
from appliance.index.catalog import Catalog
from appliance.ingest.pipeline import reindex
from tests.test_api import TWO_SOPS, assert_problem, indexed_home, make_client

BACKWASH = """# Backwash of sand filter SF-9

## Steps

1. Stop the filter feed pump P-SF-91.
2. Open the backwash outlet valve VLV-9120 and run the backwash for 7 minutes.
3. Close VLV-9120 before returning SF-9 to service.
"""
BOUNDARY = "appliance-test-boundary"
MB = 1024 * 1024


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    return indexed_home(tmp_path_factory.mktemp("uploads"), models_dir, TWO_SOPS)


@pytest.fixture
def settings(corpus_home: Path, models_dir: Path, tmp_path: Path) -> Settings:
    home = tmp_path / "home"
    shutil.copytree(corpus_home, home)
    return Settings(
        home=home,
        models_dir=models_dir,
        generator=GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"}),
        uploads=UploadSettings(max_file_bytes=64 * 1024),
    )


@pytest.fixture
def client(settings: Settings) -> TestClient:
    return make_client(settings)


def upload(client: TestClient, name: str, data: bytes, *, replace: bool = False) -> Any:
    params = {"replace": "true"} if replace else {}
    return client.post("/v1/documents", params=params, files={"file": (name, data, "application/octet-stream")})


def raw_upload(client: TestClient, filename: bytes, data: bytes, field: bytes = b"file") -> Any:
    """A multipart body built by hand: the file name's bytes go out exactly as given (httpx would escape them)."""
    body = (
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="'
        + field
        + b'"; filename="'
        + filename
        + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    return client.post("/v1/documents", content=body, headers=headers)


def holding(client: TestClient, identifier: str) -> set[str]:
    """The documents a search finds holding `identifier` in a passage's text."""
    response = client.post("/v1/search", json={"query": identifier, "mode": "lexical"})
    assert response.status_code == 200, response.text
    return {hit["path"] for hit in response.json()["hits"] if identifier in hit["text"]}


def index_state(settings: Settings) -> tuple[list[tuple[str, str | None]], int]:
    catalog = Catalog(settings.catalog_path)
    try:
        return [(d.path, d.sha256) for d in catalog.documents()], catalog.counts()["chunks"]
    finally:
        catalog.close()


def upload_folder_entries(settings: Settings) -> list[str]:
    folder = settings.home / "uploads"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def audit_records(settings: Settings) -> list[dict[str, Any]]:
    lines = "".join(p.read_text() for p in sorted(settings.audit_dir.glob("audit-*.jsonl"))).splitlines()
    return [json.loads(line) for line in lines]


def docx_bytes(*paragraphs: str) -> bytes:
    document = docx.Document()
    document.add_heading("Backwash of sand filter SF-9", level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


# --- uploading ------------------------------------------------------------------------------------


def test_an_uploaded_document_is_indexed_at_once_and_cited_by_its_upload_path(
    client: TestClient, settings: Settings
) -> None:
    response = upload(client, "SOP-SF-009.md", BACKWASH.encode())
    assert response.status_code == 201, response.text
    data = response.json()
    assert data["path"] == "uploads/SOP-SF-009.md" and data["outcome"] == "added"
    assert data["status"] == "indexed" and data["chunks"] >= 1 and data["error"] is None
    assert data["size"] == len(BACKWASH.encode())
    assert (settings.home / "uploads" / "SOP-SF-009.md").read_text() == BACKWASH
    assert upload_folder_entries(settings) == ["SOP-SF-009.md"]  # no temporary file left behind

    assert holding(client, "VLV-9120") == {"uploads/SOP-SF-009.md"}
    listed = {doc["path"]: doc for doc in client.get("/v1/documents").json()["documents"]}
    assert listed["uploads/SOP-SF-009.md"]["id"] == data["document_id"]
    # The upload folder is a source now: a reindex sees the file as it is, and changes nothing.
    report = reindex(settings)
    assert report.unchanged == 3 and report.added == report.updated == report.removed == 0


def test_a_docx_upload_is_indexed_like_any_docx(client: TestClient) -> None:
    response = upload(client, "backwash.docx", docx_bytes("Open the backwash outlet valve VLV-9120."))
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "indexed"
    assert holding(client, "VLV-9120") == {"uploads/backwash.docx"}


def test_a_name_that_is_taken_is_replaced_only_when_asked(client: TestClient, settings: Settings) -> None:
    first = upload(client, "SOP-SF-009.md", BACKWASH.encode()).json()
    taken = assert_problem(upload(client, "SOP-SF-009.md", b"# Other\n\nOther text VLV-7777.\n"), 409)
    assert taken["field"] == "file" and "uploads/SOP-SF-009.md exists already" in taken["detail"]
    assert "replace=true" in taken["detail"]
    assert (settings.home / "uploads" / "SOP-SF-009.md").read_text() == BACKWASH

    same = upload(client, "SOP-SF-009.md", BACKWASH.encode(), replace=True).json()
    assert same["outcome"] == "unchanged" and same["document_id"] == first["document_id"]
    changed = BACKWASH.replace("VLV-9120", "VLV-9130")
    replaced = upload(client, "SOP-SF-009.md", changed.encode(), replace=True).json()
    assert replaced["outcome"] == "replaced"
    assert holding(client, "VLV-9130") == {"uploads/SOP-SF-009.md"}
    assert holding(client, "VLV-9120") == set()
    assert upload_folder_entries(settings) == ["SOP-SF-009.md"]


def test_uploads_go_to_the_folder_a_setting_names(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "incoming"
    client = make_client(settings.model_copy(update={"uploads": UploadSettings(folder=folder)}))
    response = upload(client, "SOP-SF-009.md", BACKWASH.encode())
    assert response.status_code == 201 and response.json()["path"] == "incoming/SOP-SF-009.md"
    assert (folder / "SOP-SF-009.md").exists() and not (settings.home / "uploads").exists()


# --- refusing bad input: a 4xx naming the field, nothing written, the index unchanged ---------------------


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", bytes(20 * MB))  # 20 MB of zeros in ~20 KB
    return buffer.getvalue()


BAD_FILES = [
    pytest.param("tool.exe", b"MZ\x90\x00", 415, "type '.exe' is not indexed", id="unindexed type"),
    pytest.param("notes", b"some text", 415, "type no extension is not indexed", id="no extension"),
    pytest.param("image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", 422, "binary content in a text file", id="binary .md"),
    pytest.param("manual.pdf", b"this is no pdf at all", 422, "'manual.pdf' cannot be indexed", id="fake pdf"),
    pytest.param("bomb.docx", zip_bomb(), 422, "zip bomb", id="zip bomb docx"),
    pytest.param("fake.docx", b"PK not a zip", 422, "not a valid .docx", id="fake docx"),
    pytest.param("empty.md", b"", 422, "'empty.md' is empty", id="empty"),
    pytest.param("big.md", b"# Big\n\n" + b"word " * 20_000, 413, "larger than 65536 bytes", id="too large"),
    pytest.param("front.md", b"---\ntitle: x\n---\n", 422, "no text content", id="nothing to index"),
]


@pytest.mark.parametrize(("name", "data", "status", "says"), BAD_FILES)
def test_a_bad_file_is_refused_with_nothing_written(
    client: TestClient, settings: Settings, name: str, data: bytes, status: int, says: str
) -> None:
    before = index_state(settings)
    problem = assert_problem(upload(client, name, data), status)
    assert problem["field"] == "file" and says in problem["detail"], problem["detail"]
    assert upload_folder_entries(settings) == []
    assert index_state(settings) == before


NAME_GAMES = [
    pytest.param(b"../escape.md", "path separator", id="dot-dot"),
    pytest.param(b"../../../../etc/cron.d/x.md", "path separator", id="deep traversal"),
    pytest.param(b"/etc/passwd.md", "path separator", id="absolute"),
    pytest.param(b"..\\..\\windows.md", "path separator", id="backslashes"),
    pytest.param(b"sub/dir.md", "path separator", id="subfolder"),
    pytest.param("a\uff0fb.md".encode(), "path separator", id="fullwidth solidus"),
    pytest.param("\u2025/x.md".encode(), "path separator", id="two-dot leader"),
    pytest.param(b"..", "starts with a dot", id="dot-dot alone"),
    pytest.param(b".hidden.md", "starts with a dot", id="hidden"),
    pytest.param(b"nul\x00.md", "control character (U+0000)", id="NUL"),
    pytest.param(b"line\nbreak.md", "control character (U+000A)", id="newline"),
    pytest.param("invoice\u202edm.exe".encode(), "(U+202E)", id="right-to-left override"),
    pytest.param("zero\u200bwidth.md".encode(), "(U+200B)", id="zero width space"),
    pytest.param(b"CON.md", "reserved device name (CON)", id="windows CON"),
    pytest.param(b"lpt1.txt", "reserved device name (LPT1)", id="windows LPT1"),
    pytest.param(b"trailing.md.", "ends with a dot", id="trailing dot"),
    pytest.param(b"trailing.md ", "ends with a dot or a space", id="trailing space"),
    pytest.param(b"x" * 300 + b".md", "longer than 255 bytes", id="too long"),
    pytest.param(b"bad\xff\xfe.md", "not valid UTF-8", id="not UTF-8"),
    pytest.param(b"", "no file name", id="empty name"),
]


@pytest.mark.parametrize(("filename", "says"), NAME_GAMES)
def test_name_games_are_refused_naming_the_file_field(
    client: TestClient, settings: Settings, tmp_path: Path, filename: bytes, says: str
) -> None:
    before = index_state(settings)
    problem = assert_problem(raw_upload(client, filename, BACKWASH.encode()), 422)
    assert problem["field"] == "file" and says in problem["detail"], problem["detail"]
    assert upload_folder_entries(settings) == []
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == BACKWASH.encode()]
    assert written == [] and not Path("/etc/passwd.md").exists()
    assert index_state(settings) == before


def test_an_accented_name_is_stored_in_its_composed_form(client: TestClient, settings: Settings) -> None:
    decomposed = "Proce\u0301dure.md"  # e + combining acute, as macOS writes it
    response = raw_upload(client, decomposed.encode(), BACKWASH.encode())
    assert response.status_code == 201, response.text
    assert response.json()["path"] == "uploads/Proc\u00e9dure.md"
    assert upload_folder_entries(settings) == ["Proc\u00e9dure.md"]


@pytest.mark.parametrize(
    ("request_kwargs", "status", "field", "says"),
    [
        ({"json": {"file": "x"}}, 415, "body", "multipart/form-data"),
        ({"data": {"file": "not a file"}}, 415, "body", "multipart/form-data"),
        ({"files": {"document": ("a.md", b"# A\n\ntext\n")}}, 422, "document", "unexpected form field 'document'"),
        ({"files": {"file": ("a.md", b"# A\n\nt\n"), "other": ("b.md", b"# B\n\nt\n")}}, 422, "body", "one part"),
        ({"content": f"--{BOUNDARY}--\r\n".encode()}, 422, "file", "'file' is required"),
    ],
    ids=["json", "urlencoded", "wrong field", "two files", "no part"],
)
def test_a_body_that_is_not_one_file_in_the_field_file_is_refused(
    client: TestClient, settings: Settings, request_kwargs: dict[str, Any], status: int, field: str, says: str
) -> None:
    if "content" in request_kwargs:
        request_kwargs["headers"] = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    problem = assert_problem(client.post("/v1/documents", **request_kwargs), status)
    assert problem["field"] == field and says in problem["detail"], problem["detail"]
    assert upload_folder_entries(settings) == []


def test_a_body_declared_larger_than_the_limit_is_refused_before_it_is_read(client: TestClient) -> None:
    response = client.post(
        "/v1/documents",
        content=b"x" * 10,
        headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}", "Content-Length": str(200 * MB)},
    )
    assert_problem(response, 413)


def test_a_file_that_fails_to_index_leaves_the_folder_as_it_was(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload(client, "SOP-SF-009.md", BACKWASH.encode())
    before = index_state(settings)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full while indexing")

    monkeypatch.setattr("appliance.uploads.store.reindex_locked", broken)
    response = upload(client, "SOP-SF-009.md", BACKWASH.replace("7 minutes", "9 minutes").encode(), replace=True)
    assert response.status_code == 500
    assert (settings.home / "uploads" / "SOP-SF-009.md").read_text() == BACKWASH  # the old file is back
    response = upload(client, "new.md", BACKWASH.encode())
    assert response.status_code == 500
    assert upload_folder_entries(settings) == ["SOP-SF-009.md"]  # the new one is gone, no temporary left
    assert index_state(settings) == before


# --- deleting -------------------------------------------------------------------------------------


def test_deleting_an_upload_removes_its_file_and_its_index_entries(client: TestClient, settings: Settings) -> None:
    document_id = upload(client, "SOP-SF-009.md", BACKWASH.encode()).json()["document_id"]
    response = client.delete(f"/v1/documents/{document_id}")
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == "removed" and response.json()["path"] == "uploads/SOP-SF-009.md"
    assert upload_folder_entries(settings) == []
    assert holding(client, "VLV-9120") == set()
    assert assert_problem(client.delete(f"/v1/documents/{document_id}"), 404)["field"] == "document_id"


def test_only_uploaded_documents_can_be_deleted(client: TestClient, settings: Settings) -> None:
    before = index_state(settings)
    plant = {d["path"]: d["id"] for d in client.get("/v1/documents").json()["documents"]}
    problem = assert_problem(client.delete(f"/v1/documents/{plant['plant/SOP-CL-004.md']}"), 409)
    assert "plant/SOP-CL-004.md is not an uploaded document" in problem["detail"]
    assert index_state(settings) == before
    assert holding(client, "VLV-3042-B") == {"plant/SOP-CL-004.md"}


# --- audit ----------------------------------------------------------------------------------------


def test_uploads_and_deletes_are_audited_with_who_and_what(client: TestClient, settings: Settings) -> None:
    document_id = upload(client, "SOP-SF-009.md", BACKWASH.encode()).json()["document_id"]
    upload(client, "../escape.md", BACKWASH.encode())
    client.delete(f"/v1/documents/{document_id}")
    records = [r for r in audit_records(settings) if r["endpoint"].startswith("document_")]
    assert [(r["endpoint"], r["status"]) for r in records] == [
        ("document_upload", 201),
        ("document_upload", 422),
        ("document_delete", 200),
    ]
    added, refused, deleted = records
    assert added["principal"] == "local" and added["sources"][0]["path"] == "uploads/SOP-SF-009.md"
    assert added["extra"]["outcome"] == "added" and added["extra"]["bytes"] == len(BACKWASH.encode())
    assert refused["extra"]["bytes"] == len(BACKWASH.encode()) and refused["sources"] == []
    assert deleted["extra"]["outcome"] == "removed" and deleted["extra"]["document_id"] == document_id
    assert "VLV-9120" not in json.dumps(records)  # never document text
