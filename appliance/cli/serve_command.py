"""serve: the HTTP API and web UI (uvicorn), after the loopback/token check.

`--workers 1` (the default) runs the app built here in this process. `--workers N` runs N uvicorn
worker processes on one listening socket; each builds its own app with
`appliance.server.app:create_app_from_environment`, from the same environment and TOML file this
command read, plus the listen address it chose (APPLIANCE_SERVER_HOST/PORT). That needs a Chroma
server (vectors.url): the local PersistentClient is single-process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from appliance.cli.common import current_settings, handle_errors
from appliance.config import ServerSettings, Settings, load_settings
from appliance.errors import ApplianceError

APP_FACTORY = "appliance.server.app:create_app_from_environment"
MAX_WORKERS = 64


class WorkersRefused(ApplianceError):
    """More than one worker was asked for with a setup that only one process may use."""

    exit_code = 1


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


def check_workers_allowed(settings: Settings, workers: int) -> None:
    """Refuse several workers on the local Chroma store, before anything listens."""
    if workers > 1 and not settings.vectors.url:
        raise WorkersRefused(
            f"cannot start {workers} workers: Chroma's PersistentClient is single-process: set vectors.url to a "
            "`chroma run` server to use --workers N (e.g. chroma run --path /srv/chroma --port 8000, then "
            "APPLIANCE_VECTORS_URL=http://127.0.0.1:8000 appliance reindex), or serve with --workers 1"
        )


def run_server(settings: Settings, workers: int = 1) -> None:
    """Check where and how we may listen, then run uvicorn until interrupted (blocking)."""
    from appliance.server.app import configure_server_logging
    from appliance.server.security import check_bind_allowed

    host = settings.server.host
    check_workers_allowed(settings, workers)
    check_bind_allowed(settings, host)  # before anything listens: no open API on the network
    configure_server_logging()
    if workers > 1:
        _run_workers(settings, workers)
    else:
        _run_single(settings)


def _run_single(settings: Settings) -> None:
    import uvicorn

    from appliance.server.app import create_app

    app = create_app(settings)
    # No Server header (it names the software); our own middleware logs requests without query
    # strings, so uvicorn's access log (which has them) stays off.
    uvicorn.run(
        app,
        host=settings.server.host,
        port=settings.server.port,
        server_header=False,
        log_level="info",
        access_log=False,
    )


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the worker processes; restore the old values afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_workers(settings: Settings, workers: int) -> None:
    """uvicorn's multiprocess supervisor, run here rather than through uvicorn.run so that a worker
    that fails to start makes this command fail (uvicorn.run would exit 0)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from appliance.server.metrics import MULTIPROCESS_ENV, forget_worker, fresh_multiprocess_folder

    class Supervisor(Multiprocess):
        """uvicorn's, plus: a worker that is gone (died, or retired by a signal) leaves the live gauges."""

        def handle_signals(self) -> None:
            self._forgetting_the_gone(super().handle_signals)

        def keep_subprocess_alive(self) -> None:
            self._forgetting_the_gone(super().keep_subprocess_alive)

        def _forgetting_the_gone(self, step: Callable[[], None]) -> None:
            before = {process.pid for process in self.processes}
            step()
            for pid in before - {process.pid for process in self.processes}:
                if pid is not None:
                    forget_worker(metrics_folder, pid)

    host, port = settings.server.host, settings.server.port
    # Every worker counts into one folder, so /metrics answers for the server, not for the worker it reached.
    metrics_folder = fresh_multiprocess_folder(settings.metrics_dir)
    environment = {
        "APPLIANCE_SERVER_HOST": host,
        "APPLIANCE_SERVER_PORT": str(port),
        MULTIPROCESS_ENV: str(metrics_folder),
    }
    with _environment(environment):
        if load_settings() != settings:
            raise ApplianceError(
                "the worker processes would not see the settings this command uses: pass settings to "
                "`appliance serve --workers N` through APPLIANCE_* variables or the TOML file only"
            )
        config = uvicorn.Config(
            APP_FACTORY,
            factory=True,
            host=host,
            port=port,
            workers=workers,
            server_header=False,
            log_level="info",
            access_log=False,
        )
        supervisor = Supervisor(config, sockets=[config.bind_socket()])
        supervisor.run()
    failed = [process.pid for process in supervisor.processes if process.exitcode == STARTUP_FAILURE]
    if failed:
        raise ApplianceError(f"worker process {failed[0]} could not start (its reason is logged above); stopped")


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @click.option("--host", default=None, help="Listen address [default: server.host, 127.0.0.1].")
    @click.option("--port", type=click.IntRange(1, 65535), default=None, help="Listen port [default: server.port].")
    @click.option(
        "--workers",
        type=click.IntRange(1, MAX_WORKERS),
        default=1,
        help="Worker processes sharing the port. More than 1 needs vectors.url (a `chroma run` server).",
    )
    @handle_errors
    def serve_command(host: str | None, port: int | None, workers: int) -> None:
        """Serve the HTTP API (/v1/ask, /v1/search, OpenAI-compatible /v1/chat/completions, …) and the web UI.

        On a loopback address without any API token, local requests are served as admin (single-host
        mode). Any other address needs at least one active token first (appliance token create),
        otherwise the command refuses to start (exit 1). API docs: http://HOST:PORT/docs (served locally).

        --workers N runs N processes on one port. Chroma's local PersistentClient is single-process, so
        N > 1 needs vectors.url pointing at a `chroma run` server (refused otherwise, exit 1). Each
        worker loads its own embedder and, on its first question, its own local LLM (N copies in
        memory, and generator.queue_size applies per worker) unless generator.backend = "openai"
        points every worker at one shared model server. Tokens and the audit log are shared files, so
        token rules and the audit chain hold across workers, and /metrics counts for them all.

        Example: appliance serve --host 0.0.0.0 --port 8080

        Example: APPLIANCE_VECTORS_URL=http://127.0.0.1:8000 appliance serve --workers 4
        """
        run_server(serve_settings(current_settings(), host, port), workers)
