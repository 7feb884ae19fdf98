"""serve: the HTTP API and web UI (uvicorn), after the loopback/token check."""

from __future__ import annotations

import logging

import click

from appliance.cli.common import current_settings, handle_errors
from appliance.config import ServerSettings, Settings


def serve_settings(settings: Settings, host: str | None, port: int | None) -> Settings:
    """Settings with the listen address the command line chose (the app checks clients against it)."""
    server = ServerSettings.model_validate(
        {
            **settings.server.model_dump(),
            **({"host": host} if host is not None else {}),
            **({"port": port} if port is not None else {}),
        }
    )
    return settings.model_copy(update={"server": server})


def run_server(settings: Settings) -> None:
    """Check where we may listen, then run uvicorn until interrupted (blocking)."""
    import uvicorn

    from appliance.server.app import create_app
    from appliance.server.security import check_bind_allowed

    host, port = settings.server.host, settings.server.port
    check_bind_allowed(settings, host)  # before anything listens: no open API on the network
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(settings)
    # No Server header (it names the software); our own middleware logs requests without query
    # strings, so uvicorn's access log (which has them) stays off.
    uvicorn.run(app, host=host, port=port, server_header=False, log_level="info", access_log=False)


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @click.option("--host", default=None, help="Listen address [default: server.host, 127.0.0.1].")
    @click.option("--port", type=click.IntRange(1, 65535), default=None, help="Listen port [default: server.port].")
    @handle_errors
    def serve_command(host: str | None, port: int | None) -> None:
        """Serve the HTTP API (/v1/ask, /v1/search, OpenAI-compatible /v1/chat/completions, …) and the web UI.

        On a loopback address without any API token, local requests are served as admin (single-host
        mode). Any other address needs at least one active token first (appliance token create),
        otherwise the command refuses to start (exit 1). API docs: http://HOST:PORT/docs (served locally).

        Example: appliance serve --host 0.0.0.0 --port 8080
        """
        run_server(serve_settings(current_settings(), host, port))
