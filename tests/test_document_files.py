"""GET /v1/documents/{id}/file and POST /v1/documents/{id}/view: the original behind a citation, and only it.

The confinement matrix: an indexed document is served with its real media type to an operator, and
audited; nothing else is reachable — no path parameter, no unknown, failed or removed document, no
file gone from disk, no symbolic link (of the file or of a folder) out of the registered source, no
named pipe (answered at once, never opened for a blocking read), no listing. A file changed since it
was indexed is served flagged, never as the cited version. The view renders Markdown, HTML, PDF pages
and DOCX through an allowlist (scripts, handlers, remote images, forms, iframes gone) and marks the
cited sentences at the cited section or page.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from appliance.config import IngestSettings, Settings
from appliance.documents.tree import TAGS
from appliance.ingest.pipeline import ingest, reindex
from appliance.server.auth import TokenStore
from tests.test_api import make_client

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "docs_corpus"
MARKDOWN = "SOP-CL-004-chlorine-cylinder-change.md"
PDF = "SOP-FLT-001-filter-backwash.pdf"
DOCX = "SOP-SAF-001-lockout-tagout.docx"
HOSTILE_HTML = """<html><head><title>Hostile</title><script>alert('scriptpayload')</script>
<link rel="stylesheet" href="http://198.51.100.7/x.css"></head>
<body onload="alert('onloadpayload')">
<h1>Compressor isolation</h1>
<p onclick="alert('clickpayload')">Close valve <b>VLV-7001-C</b> before opening the crankcase door.</p>
<img src="http://198.51.100.7/diagram.png" alt="valve diagram">
<iframe src="http://198.51.100.7/"></iframe>
<form action="http://198.51.100.7/steal"><label>Badge <input name="badge" value="formpayload"></label></form>
<div class="warning"><a href="javascript:alert('linkpayload')">Wear the face shield</a> at all times.</div>
<svg><script>alert('svgpayload')</script></svg>
<table><tr><th>Setpoint</th><td colspan="2" onmouseover="x()">4.0 bar</td></tr></table>
</body></html>
"""


@pytest.fixture(scope="module")
def plant_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> dict[str, Any]:
    """Four demo SOPs (md, pdf, docx, html), a hostile HTML page and an empty file, indexed once."""
    base = tmp_path_factory.mktemp("originals")
    plant = base / "plant"
    (plant / "sub").mkdir(parents=True)
    for name in (MARKDOWN, PDF, DOCX):
        shutil.copy(DEMO / name, plant / name)
    shutil.copy(DEMO / "SOP-DST-001-valve-exercising-program.html", plant / "sub" / "valves.html")
    (plant / "hostile.html").write_text(HOSTILE_HTML)
    (plant / "empty.md").write_text("")
    (base / "outside").mkdir()
    (base / "outside" / "secret.md").write_text("# Secret\n\nThe outside secret outsidepayload.\n")
    home = base / "home"
    ingest(Settings(home=home, models_dir=models_dir), [plant])
    with TokenStore(home / "tokens.sqlite") as store:
        _, operator = store.create("operator", "desk")
    return {"base": base, "home": home, "operator": operator}


@pytest.fixture
def site(plant_home: dict[str, Any], models_dir: Path, tmp_path: Path) -> dict[str, Any]:
    """A private copy of the plant folder and the home (the catalog records absolute paths: rewrite them)."""
    base = tmp_path / "site"
    shutil.copytree(plant_home["base"], base, symlinks=True)
    old, new = str(plant_home["base"]), str(base)
    with sqlite3.connect(base / "home" / "catalog.sqlite") as conn:
        conn.execute("UPDATE documents SET abs_path = replace(abs_path, ?, ?), source = replace(source, ?, ?)",
                     (old, new, old, new))  # fmt: skip
        conn.execute("UPDATE sources SET path = replace(path, ?, ?)", (old, new))
    settings = Settings(home=base / "home", models_dir=models_dir)
    client = make_client(settings)
    ids = {row["path"]: row["id"] for row in _documents(settings)}
    return {"base": base, "plant": base / "plant", "settings": settings, "client": client, "ids": ids,
            "auth": {"Authorization": f"Bearer {plant_home['operator']}"}}  # fmt: skip


def _documents(settings: Settings) -> list[dict[str, Any]]:
    with sqlite3.connect(settings.catalog_path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT id, path, status FROM documents")]


def _get(site: dict[str, Any], path: str, **kwargs: Any) -> Any:
    client: TestClient = site["client"]
    return client.get(path, headers=site["auth"], **kwargs)


def _file(site: dict[str, Any], name: str) -> Any:
    return _get(site, f"/v1/documents/{site['ids']['plant/' + name]}/file")


def _audit_records(settings: Settings) -> list[dict[str, Any]]:
    records = []
    for path in sorted((settings.home / "audit").glob("audit-*.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


# --- what is served ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "media", "disposition"),
    [
        (MARKDOWN, "text/markdown; charset=utf-8", "inline"),
        (PDF, "application/pdf", "inline"),
        (DOCX, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "attachment"),
        ("sub/valves.html", "text/html; charset=utf-8", "inline"),
    ],
)
def test_an_indexed_document_is_served_as_its_original_bytes(
    site: dict[str, Any], name: str, media: str, disposition: str
) -> None:
    response = _file(site, name)
    assert response.status_code == 200, response.text
    assert response.content == (site["plant"] / name).read_bytes()
    assert response.headers["content-type"] == media
    assert response.headers["content-disposition"].startswith(disposition + "; filename=")
    assert response.headers["x-document-changed"] == "false"
    assert response.headers["cache-control"] == "no-store"
    # Whatever the file holds, it runs nothing and reaches nothing when a browser opens it.
    csp = response.headers["content-security-policy"]
    assert csp.startswith("sandbox;") and "script-src 'none'" in csp and "frame-ancestors 'none'" in csp


def test_every_opening_is_audited_with_who_and_which_document(site: dict[str, Any]) -> None:
    assert _file(site, MARKDOWN).status_code == 200
    assert _get(site, "/v1/documents/999999/file").status_code == 404
    records = [r for r in _audit_records(site["settings"]) if r["endpoint"] == "document_file"]
    assert [(r["status"], r["principal"]) for r in records] == [(200, "desk"), (404, "desk")]
    assert records[0]["sources"][0]["path"] == "plant/" + MARKDOWN
    assert records[0]["extra"] == {"document_id": site["ids"]["plant/" + MARKDOWN], "view": False, "changed": False}
    assert "question_preview" in records[0] and records[0]["question_preview"] is None


def test_an_operator_token_is_required(site: dict[str, Any]) -> None:
    client: TestClient = site["client"]
    url = f"/v1/documents/{site['ids']['plant/' + MARKDOWN]}/file"
    assert client.get(url).status_code == 401
    assert client.get(url, headers={"Authorization": "Bearer apl_00000000_" + "x" * 43}).status_code == 401


# --- the confinement matrix ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/documents/0/file", 422),
        ("/v1/documents/-1/file", 422),
        ("/v1/documents/abc/file", 422),
        ("/v1/documents/1.5/file", 422),
        ("/v1/documents/99999999999999999999/file", 422),
        ("/v1/documents/999999/file", 404),
        ("/v1/documents/%2e%2e/file", 422),
        ("/v1/documents/{md}/file/../../../../etc/passwd", 404),
        ("/v1/documents/{md}/../../etc/passwd", 404),
        ("/v1/documents/{md}", 405),  # only DELETE (an uploaded document) lives there
        ("/v1/documents/{md}/", 405),
        ("/v1/documents/{md}/files", 404),
        ("/v1/documents/{md}/file?path=/etc/passwd", 200),  # a query parameter is ignored: still that document
    ],
)
def test_nothing_but_a_document_id_reaches_a_file(site: dict[str, Any], path: str, status: int) -> None:
    response = _get(site, path.format(md=site["ids"]["plant/" + MARKDOWN]))
    assert response.status_code == status, response.text[:300]
    assert b"root:x:0:0" not in response.content


def test_a_failed_document_is_not_served(site: dict[str, Any]) -> None:
    failed = site["ids"]["plant/empty.md"]
    response = _get(site, f"/v1/documents/{failed}/file")
    assert response.status_code == 404
    assert "not indexed" in response.json()["detail"]


def test_a_removed_document_is_gone_and_a_deleted_file_says_so(site: dict[str, Any]) -> None:
    doc_id = site["ids"]["plant/" + MARKDOWN]
    (site["plant"] / MARKDOWN).unlink()
    response = _get(site, f"/v1/documents/{doc_id}/file")
    assert response.status_code == 410 and "no longer on disk" in response.json()["detail"]
    reindex(site["settings"])
    assert _get(site, f"/v1/documents/{doc_id}/file").status_code == 404


def test_a_file_changed_since_indexing_is_flagged_never_served_as_the_cited_version(site: dict[str, Any]) -> None:
    path = site["plant"] / MARKDOWN
    path.write_text(path.read_text() + "\n## Added later\n\nA step nobody indexed.\n")
    response = _file(site, MARKDOWN)
    assert response.status_code == 200 and response.headers["x-document-changed"] == "true"
    view = (
        site["client"]
        .post(f"/v1/documents/{site['ids']['plant/' + MARKDOWN]}/view", json={}, headers=site["auth"])
        .json()
    )
    assert view["document"]["changed"] is True and "changed on disk" in view["document"]["notice"]


def test_a_symbolic_link_out_of_the_source_is_refused(site: dict[str, Any]) -> None:
    secret = site["base"] / "outside" / "secret.md"
    target = site["plant"] / MARKDOWN
    target.unlink()
    target.symlink_to(secret)
    response = _file(site, MARKDOWN)
    assert response.status_code == 409 and "symbolic link" in response.json()["detail"]
    assert b"outsidepayload" not in response.content
    # Even where links are followed on purpose, a link out of the source is not served.
    followed = Settings(home=site["settings"].home, models_dir=site["settings"].models_dir,
                        ingest=IngestSettings(follow_symlinks=True))  # fmt: skip
    other = make_client(followed).get(f"/v1/documents/{site['ids']['plant/' + MARKDOWN]}/file", headers=site["auth"])
    assert other.status_code == 409 and "outside its registered source" in other.json()["detail"]
    assert b"outsidepayload" not in other.content


def test_a_folder_swapped_for_a_link_out_of_the_source_is_refused(site: dict[str, Any]) -> None:
    sub = site["plant"] / "sub"
    shutil.rmtree(sub)
    outside = site["base"] / "outside"
    (outside / "valves.html").write_text("<p>outsidepayload</p>")
    sub.symlink_to(outside, target_is_directory=True)
    response = _file(site, "sub/valves.html")
    assert response.status_code == 409 and "outside its registered source" in response.json()["detail"]
    assert b"outsidepayload" not in response.content


def test_a_named_pipe_in_place_of_the_file_is_refused_at_once(site: dict[str, Any]) -> None:
    path = site["plant"] / MARKDOWN
    path.unlink()
    os.mkfifo(path)
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(_file(site, MARKDOWN)), daemon=True)
    thread.start()
    thread.join(timeout=20)
    if thread.is_alive():  # the server blocked on the pipe: unblock it so the suite goes on, then fail
        with open(os.open(path, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail("opening a named pipe blocked the request")
    assert answers[0].status_code == 409 and "no longer a regular file" in answers[0].json()["detail"]


def test_a_source_that_is_no_longer_registered_serves_nothing(site: dict[str, Any]) -> None:
    with sqlite3.connect(site["settings"].catalog_path) as conn:
        conn.execute("DELETE FROM sources")
    response = _file(site, MARKDOWN)
    assert response.status_code == 404 and "no longer registered" in response.json()["detail"]


# --- the rendered view ---------------------------------------------------------------------------


def _view(site: dict[str, Any], name: str, body: dict[str, Any]) -> Any:
    client: TestClient = site["client"]
    return client.post(f"/v1/documents/{site['ids']['plant/' + name]}/view", json=body, headers=site["auth"])


def _nodes(tree: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in node.get("c", []) if isinstance(child, dict))


def _text(tree: dict[str, Any]) -> str:
    parts: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        else:
            stack.extend(reversed(item.get("c", [])))
    return "".join(parts)


def _chunk(settings: Settings, path: str, containing: str) -> dict[str, Any]:
    with sqlite3.connect(settings.catalog_path) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute(
            "SELECT c.id, c.section, c.page, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE d.path = ? AND c.text LIKE ? ORDER BY c.ord LIMIT 1",
            (path, f"%{containing}%"),
        ).fetchone()
    assert row is not None, f"no chunk of {path} holds {containing!r}"
    return dict(row)


def test_a_markdown_view_opens_at_the_cited_section_with_the_sentences_marked(site: dict[str, Any]) -> None:
    chunk = _chunk(site["settings"], "plant/" + MARKDOWN, "Close the container valve")
    sentence = next(s for s in chunk["text"].split("\n") if "Close the container valve" in s).strip()
    view = _view(site, MARKDOWN, {"chunk_id": chunk["id"], "sentences": [sentence]})
    assert view.status_code == 200, view.text
    data = view.json()
    assert data["target"] == "cited" and data["highlighted"] == 1
    marks = [node for node in _nodes(data["body"]) if node["t"] == "mark"]
    marked = "".join(_text(mark) for mark in marks)
    assert "container valve" in marked.lower()
    assert {node["t"] for node in _nodes(data["body"])} <= TAGS
    assert data["document"]["file"] == f"/v1/documents/{site['ids']['plant/' + MARKDOWN]}/file"


def test_a_pdf_view_is_its_pages_opened_at_the_cited_one(site: dict[str, Any]) -> None:
    chunk = _chunk(site["settings"], "plant/" + PDF, "Permissives")
    assert chunk["page"] and chunk["page"] > 1
    data = _view(site, PDF, {"chunk_id": chunk["id"], "sentences": []}).json()
    pages = [node for node in _nodes(data["body"]) if node["t"] == "section"]
    assert len(pages) >= chunk["page"]
    holding = [page for page in pages if any(n.get("a", {}).get("id") == data["target"] for n in _nodes(page))]
    assert [page["a"]["page"] for page in holding] == [chunk["page"]] and data["page"] == chunk["page"]
    assert "Permissives" in _text(holding[0])


def test_a_docx_view_is_its_text_with_headings_and_tables(site: dict[str, Any]) -> None:
    data = _view(site, DOCX, {}).json()
    tags = [node["t"] for node in _nodes(data["body"])]
    assert "h1" in tags and tags.count("h2") >= 3 and "p" in tags
    tables = [node for node in _nodes(data["body"]) if node["t"] == "table"]
    assert len(tables) == 4  # the SOP's tables, as tables: their header row in thead, as th
    heads = [[_text(th) for th in row["c"]] for table in tables for row in table["c"][0]["c"]]
    assert all(table["c"][0]["t"] == "thead" for table in tables)
    assert ["Item", "Description", "Where kept"] in heads
    assert "|" not in "".join(_text(table) for table in tables)  # no pipe-table text left


def test_an_html_view_keeps_the_words_and_nothing_that_could_run_or_reach_out(site: dict[str, Any]) -> None:
    data = _view(site, "hostile.html", {"sentences": ["Close valve VLV-7001-C before opening the crankcase door."]})
    assert data.status_code == 200 if hasattr(data, "status_code") else True
    body = data.json()["body"]
    text = _text(body)
    for word in ("Compressor isolation", "VLV-7001-C", "Wear the face shield", "4.0 bar", "[image: valve diagram]"):
        assert word in text
    serialized = json.dumps(body)
    for payload in ("scriptpayload", "onloadpayload", "clickpayload", "formpayload", "linkpayload", "svgpayload"):
        assert payload not in serialized
    assert "198.51.100.7" not in serialized and "javascript:" not in serialized
    assert {node["t"] for node in _nodes(body)} <= TAGS
    attributes = {key for node in _nodes(body) for key in node.get("a", {})}
    assert attributes <= {"colspan", "rowspan", "id", "n", "kind", "page", "start"}
    assert data.json()["highlighted"] == 1


def test_a_view_of_a_chunk_of_another_document_is_refused(site: dict[str, Any]) -> None:
    chunk = _chunk(site["settings"], "plant/" + PDF, "Permissives")
    response = _view(site, MARKDOWN, {"chunk_id": chunk["id"]})
    assert response.status_code == 404 and "not a passage of" in response.json()["detail"]


def test_search_prints_the_file_and_page_to_open_on_the_host(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from appliance.cli.main import cli

    monkeypatch.setenv("APPLIANCE_HOME", str(site["settings"].home))
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(site["settings"].models_dir))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["search", "backwash permissives PLC-300", "--k", "3", "--type", "pdf"])
    assert result.exit_code == 0, result.output
    assert f"open: {site['plant'] / PDF} (page " in result.output


def test_a_file_below_the_working_directory_is_named_from_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from appliance.documents.original import open_hint

    monkeypatch.chdir(tmp_path)
    assert open_hint(str(tmp_path.resolve() / "docs" / "SOP-1.pdf"), 3) == "open: docs/SOP-1.pdf (page 3)"
    assert open_hint("/srv/sops/SOP-2.md", None) == "open: /srv/sops/SOP-2.md"


def test_html_nested_past_the_parsers_limit_is_still_shown_and_its_scripts_are_not() -> None:
    from appliance.documents.highlight import highlight
    from appliance.documents.render_html import render_html

    deep = "<html><body>" + "<div>" * 10_000 + "deepest nested text<script>alert('payload')</script>"
    tree = render_html(deep + "</div>" * 10_000 + "<p>after the nest</p></body></html>")
    text = tree.root.text()
    assert "deepest nested text" in text and "after the nest" in text and "payload" not in text
    assert highlight(tree.root, ["deepest nested text"]).found == 1
