"""Schemathesis against the app's own OpenAPI schema: whatever a client sends, never a 5xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

from appliance.answer.answerer import Answerer
from appliance.config import GeneratorSettings, Settings
from appliance.server.app import create_app
from appliance.server.auth import TokenStore
from tests.fakes import ScriptedGenerator


@pytest.fixture(scope="module")
def fuzz_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    from appliance.ingest.pipeline import ingest
    from tests.test_api import CHLORINE, PUMP

    base = tmp_path_factory.mktemp("fuzz")
    plant = base / "plant"
    plant.mkdir()
    (plant / "SOP-CL-004.md").write_text(CHLORINE)
    (plant / "SOP-RW-001.md").write_text(PUMP)
    ingest(Settings(home=base / "home", models_dir=models_dir), [plant])
    return base / "home"


@pytest.fixture(scope="module")
def admin_secret(fuzz_home: Path) -> str:
    with TokenStore(fuzz_home / "tokens.sqlite") as store:
        _, secret = store.create("admin", "fuzzer")
    return secret


@pytest.fixture(scope="module")
def api_schema(fuzz_home: Path, models_dir: Path, admin_secret: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    settings = Settings(
        home=fuzz_home, models_dir=models_dir, generator=GeneratorSettings.model_validate({"model": "scripted"})
    )
    app = create_app(settings, answerer=Answerer(settings, generator=ScriptedGenerator()))  # type: ignore[arg-type]
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_no_request_gets_a_server_error(api_schema: Any, admin_secret: str) -> None:
    """Every operation, 25 generated requests each (schemathesis' pytest plugin does not support this
    pytest yet, so the operations are driven with hypothesis directly)."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 8

    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        def call(case: Any) -> None:
            response = case.call(headers={"Authorization": f"Bearer {admin_secret}"})
            assert response.status_code < 500 or response.status_code in (503, 504), (
                f"{case.method} {case.path} -> {response.status_code}: {response.text[:300]}"
            )
            if response.status_code >= 400:
                content_type = response.headers.get("content-type", [""])  # schemathesis: lists of values
                assert str(content_type[0] if isinstance(content_type, list) else content_type).startswith(
                    "application/problem+json"
                )

        call()
