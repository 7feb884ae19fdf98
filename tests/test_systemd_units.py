"""The systemd units: rendering, validation, `systemd-analyze verify` and `security`, installation.

systemd-analyze comes from Debian's `systemd` package; only the tests that run it are skipped
without it. Nothing here needs systemd as PID 1 or changes the host's users.
"""

from __future__ import annotations

import grp
import http.server
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from appliance.offline import systemd_units
from appliance.offline.systemd_units import (
    ENABLE_UNITS,
    PLACEHOLDER,
    TEMPLATE_NAMES,
    UnitParams,
    ensure_service_user,
    install_units,
    ready_url,
    render_units,
    security_exposure,
    service_user_commands,
    unit_templates_dir,
    wait_ready,
)

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is missing (Debian: apt-get install systemd)"
)
EXPOSURE_BOUND = 3.0  # systemd-analyze calls up to 4.9 "OK"; the units measure 1.2-1.3 and 0.8

HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "RestrictNamespaces": "yes",
    "LockPersonality": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "UMask": "0077",
    "ProtectProc": "invisible",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
}


def directives(text: str) -> dict[str, list[str]]:
    """Key → every value it is given, in order (comments and section headers dropped)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        found.setdefault(key.strip(), []).append(value.strip())
    return found


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A prefix with executable stand-ins for the venv's appliance and python, a home and a docs folder."""
    prefix = tmp_path / "opt" / "appliance"
    bin_dir = prefix / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("appliance", "python"):
        exe = bin_dir / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    home = tmp_path / "var" / "lib" / "appliance"
    docs = tmp_path / "srv" / "sops"
    home.mkdir(parents=True)
    docs.mkdir(parents=True)
    return {"prefix": prefix, "home": home, "docs": docs, "units": tmp_path / "units"}


def params_for(layout: dict[str, Path], **changes: Any) -> UnitParams:
    return UnitParams(prefix=layout["prefix"], home=layout["home"], docs=layout["docs"], **changes)


def test_templates_are_found_in_the_checkout_and_only_use_known_placeholders() -> None:
    templates = unit_templates_dir()
    assert sorted(p.name for p in templates.iterdir() if p.suffix in {".service", ".path", ".timer"}) == sorted(
        TEMPLATE_NAMES
    )
    known = set(UnitParams(Path("/opt/a"), Path("/var/lib/a"), Path("/srv/docs")).placeholders())
    for name in TEMPLATE_NAMES:
        used = set(PLACEHOLDER.findall((templates / name).read_text()))
        assert used <= known, name
    with pytest.raises(FileNotFoundError):
        unit_templates_dir(Path("/nonexistent-prefix"))


def test_render_typical_params_fills_every_placeholder(layout: dict[str, Path]) -> None:
    params = params_for(layout)
    units = render_units(unit_templates_dir(), params)
    assert list(units) == list(TEMPLATE_NAMES)
    for text in units.values():
        assert not PLACEHOLDER.search(text)
        assert "@" not in text.replace("@system-service", "").replace("@privileged", "")

    service = directives(units["appliance.service"])
    prefix, home = layout["prefix"], layout["home"]
    assert service["ExecStart"] == [f"{prefix}/venv/bin/appliance serve --host 127.0.0.1 --port 8080"]
    assert service["ExecStartPost"] == [
        f"{prefix}/venv/bin/python -I -m appliance.offline.systemd_units wait-ready http://127.0.0.1:8080/readyz"
    ]
    assert service["Type"] == ["exec"]
    assert service["Environment"][0] == f"APPLIANCE_HOME={home}"
    assert service["User"] == ["appliance"] and service["Group"] == ["appliance"]
    assert service["ReadWritePaths"] == [str(home)]
    assert service["MemoryMax"] == ["8G"]
    assert service["Restart"] == ["on-failure"]
    assert service["IPAddressDeny"] == ["any"]
    assert service["IPAddressAllow"] == ["localhost"]  # no subnet: its line is gone, not left empty


def test_render_with_operator_subnet_and_listen_address(layout: dict[str, Path]) -> None:
    params = params_for(layout, host="10.20.0.5", port=9000, operator_subnet="10.20.0.0/16", memory_max="75%")
    service = directives(render_units(unit_templates_dir(), params)["appliance.service"])
    assert service["IPAddressAllow"] == ["localhost", "10.20.0.0/16", "10.20.0.5"]
    assert service["ExecStart"][0].endswith("serve --host 10.20.0.5 --port 9000")
    assert service["ExecStartPost"][0].endswith("wait-ready http://10.20.0.5:9000/readyz")
    assert service["MemoryMax"] == ["75%%"]  # a literal % in a unit file


def test_ready_url_reaches_the_listener() -> None:
    assert ready_url("127.0.0.1", 8080) == "http://127.0.0.1:8080/readyz"
    assert ready_url("0.0.0.0", 8080) == "http://127.0.0.1:8080/readyz"
    assert ready_url("::", 8080) == "http://[::1]:8080/readyz"
    assert ready_url("::1", 81) == "http://[::1]:81/readyz"
    assert ready_url("localhost", 8080) == "http://127.0.0.1:8080/readyz"
    assert ready_url("fd00::5", 8080) == "http://[fd00::5]:8080/readyz"


def test_hardening_directives_are_present(layout: dict[str, Path]) -> None:
    units = render_units(unit_templates_dir(), params_for(layout))
    # The watcher only reads folders and writes one file: no IP sockets at all, a small memory bound.
    stricter = {"appliance-watch.service": {"RestrictAddressFamilies": "AF_UNIX", "MemoryMax": "512M"}}
    for name in ("appliance.service", "appliance-reindex.service", "appliance-watch.service"):
        found = directives(units[name])
        expected = {**HARDENING, "MemoryMax": "8G", **stricter.get(name, {})}
        for key, value in expected.items():
            assert found.get(key) == [value], f"{name}: {key}"
        assert found["SystemCallFilter"] == ["@system-service", "~@privileged"], name
        # Judged unsafe for llama.cpp/torch and explained in the unit, so deliberately absent.
        assert "MemoryDenyWriteExecute" not in found and "ProcSubset" not in found, name


def test_reindex_units(layout: dict[str, Path]) -> None:
    units = render_units(unit_templates_dir(), params_for(layout))
    prefix, home, docs = layout["prefix"], layout["home"], layout["docs"]
    service = directives(units["appliance-reindex.service"])
    assert service["Type"] == ["oneshot"]
    assert service["PrivateNetwork"] == ["yes"]
    assert service["ExecStart"] == [f"{prefix}/venv/bin/appliance ingest --json {docs}"]
    assert service["ReadWritePaths"] == [str(home)]
    assert service["ReadOnlyPaths"] == [f"-{docs}"]
    path = directives(units["appliance-reindex.path"])
    # The top of the docs folder, and the file the watcher writes for a change anywhere below it.
    assert path["PathChanged"] == [str(docs), f"{home}/run/docs-changed"]
    assert path["Unit"] == ["appliance-reindex.service"]
    assert "subfolders" in units["appliance-reindex.path"]
    watcher = directives(units["appliance-watch.service"])
    assert watcher["ExecStart"] == [
        f"{prefix}/venv/bin/appliance watch --trigger {home}/run/docs-changed --settle 2 {docs}"
    ]
    assert watcher["Type"] == ["exec"] and watcher["Restart"] == ["on-failure"]
    assert watcher["PrivateNetwork"] == ["yes"] and watcher["IPAddressDeny"] == ["any"]
    assert watcher["ReadWritePaths"] == [str(home)] and watcher["ReadOnlyPaths"] == [f"-{docs}"]
    assert service["After"] == ["appliance.service"]  # the server claims the vector store first at boot
    timer = directives(units["appliance-reindex.timer"])
    assert timer["OnCalendar"] == ["daily"]
    assert timer["Persistent"] == ["yes"]
    assert timer["RandomizedDelaySec"] == ["1h"]
    assert timer["Unit"] == ["appliance-reindex.service"]


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("prefix", {"prefix": Path("relative/prefix")}),
        ("prefix", {"prefix": Path("/opt/app liance")}),
        ("home", {"home": Path("/var/lib/app\nliance")}),
        ("home", {"home": Path("/var/lib/%n")}),
        ("home", {"home": Path("/srv")}),
        ("home", {"home": Path("/home/ops/appliance")}),
        ("docs", {"docs": Path('/srv/"docs"')}),
        ("docs", {"docs": Path("/srv/$DOCS")}),
        ("docs", {"docs": Path("/srv/../etc")}),
        ("docs", {"docs": Path("/root/docs")}),
        ("user", {"user": "root"}),
        ("user", {"user": "app liance"}),
        ("user", {"user": "Appliance"}),
        ("group", {"group": "x;y"}),
        ("host", {"host": "appliance.example"}),
        ("host", {"host": "127.0.0.1 --port 1"}),
        ("host", {"host": "fe80::1%eth0"}),
        ("port", {"port": 0}),
        ("port", {"port": 70000}),
        ("port", {"port": True}),
        ("operator_subnet", {"operator_subnet": "10.20.0.5/16"}),
        ("operator_subnet", {"operator_subnet": "10.20.0.0/33"}),
        ("operator_subnet", {"operator_subnet": "everyone"}),
        ("operator_subnet", {"operator_subnet": "10.0.0.0/8 192.168.0.0/16"}),
        ("memory_max", {"memory_max": "8 G"}),
        ("memory_max", {"memory_max": "lots"}),
    ],
)
def test_invalid_params_are_rejected_naming_the_field(field: str, changes: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "prefix": Path("/opt/appliance"),
        "home": Path("/var/lib/appliance"),
        "docs": Path("/srv/d"),
    }
    with pytest.raises(ValueError, match=rf"^{field}: "):
        UnitParams(**{**base, **changes})


def test_valid_variants_are_normalized() -> None:
    params = UnitParams(
        prefix="/opt/appliance",  # type: ignore[arg-type]
        home=Path("/var/lib/appliance"),
        docs=Path("/srv/docs"),
        host="[::1]",
        operator_subnet="fd00:20::/64",
        memory_max="infinity",
    )
    assert params.prefix == Path("/opt/appliance")
    assert params.host == "::1"
    assert params.operator_subnet == "fd00:20::/64"


@needs_systemd_analyze
@pytest.mark.parametrize("subnet", [None, "10.20.0.0/16"])
def test_systemd_analyze_verify_is_clean(layout: dict[str, Path], subnet: str | None) -> None:
    units = render_units(unit_templates_dir(), params_for(layout, operator_subnet=subnet))
    install_units(units, layout["units"], enable=False)
    files = [str(layout["units"] / name) for name in units]
    result = subprocess.run(
        [str(SYSTEMD_ANALYZE), "verify", "--man=no", *files], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == "", result.stdout + result.stderr


@needs_systemd_analyze
def test_systemd_analyze_verify_notices_a_missing_binary(layout: dict[str, Path]) -> None:
    """The check above is real: verify fails when ExecStart's binary is not there."""
    units = render_units(unit_templates_dir(), params_for(layout))
    (layout["prefix"] / "venv" / "bin" / "appliance").unlink()
    install_units(units, layout["units"], enable=False)
    result = subprocess.run(
        [str(SYSTEMD_ANALYZE), "verify", "--man=no", str(layout["units"] / "appliance.service")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "not executable" in result.stderr


@needs_systemd_analyze
@pytest.mark.parametrize("subnet", [None, "10.20.0.0/16"])
def test_security_exposure_is_low(layout: dict[str, Path], subnet: str | None) -> None:
    units = render_units(unit_templates_dir(), params_for(layout, operator_subnet=subnet))
    install_units(units, layout["units"], enable=False)
    service, level, report = security_exposure(layout["units"] / "appliance.service", str(SYSTEMD_ANALYZE))
    assert service < EXPOSURE_BOUND, report
    assert level in {"PERFECT", "SAFE", "OK"}
    reindex, _, report = security_exposure(layout["units"] / "appliance-reindex.service", str(SYSTEMD_ANALYZE))
    assert reindex <= service, report  # no network at all: never more exposed than the server
    watcher, _, report = security_exposure(layout["units"] / "appliance-watch.service", str(SYSTEMD_ANALYZE))
    assert watcher <= reindex, report  # not even an IP socket


def test_install_units_without_enabling_writes_0644_files(layout: dict[str, Path]) -> None:
    units = render_units(unit_templates_dir(), params_for(layout))
    old_umask = os.umask(0o077)  # the files are 0644 whatever the installer's umask
    try:
        actions = install_units(units, layout["units"], enable=False)
    finally:
        os.umask(old_umask)
    assert actions == [f"wrote {layout['units'] / name}" for name in units]
    for name, text in units.items():
        path = layout["units"] / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert path.read_text() == text
    assert sorted(p.name for p in layout["units"].iterdir()) == sorted(units)  # no temporary files left
    # Reinstalling replaces the files in place.
    install_units({"appliance.service": "[Unit]\n"}, layout["units"], enable=False)
    assert (layout["units"] / "appliance.service").read_text() == "[Unit]\n"


def test_install_units_rejects_odd_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        install_units({"../evil.service": ""}, tmp_path, enable=False)


def fake_systemctl(tmp_path: Path, exit_code: int = 0) -> tuple[Path, Path]:
    log = tmp_path / "systemctl.log"
    script = tmp_path / "fake-systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\necho "boom" >&2\nexit {exit_code}\n')
    script.chmod(0o755)
    return script, log


def test_install_units_enables_through_systemctl(tmp_path: Path, layout: dict[str, Path]) -> None:
    units = render_units(unit_templates_dir(), params_for(layout))
    systemctl, log = fake_systemctl(tmp_path)
    run_dir = tmp_path / "run-systemd-system"
    run_dir.mkdir()
    actions = install_units(units, layout["units"], systemctl=str(systemctl), systemd_run_dir=run_dir)
    assert log.read_text().splitlines() == [
        "daemon-reload",
        "enable --now " + " ".join(ENABLE_UNITS),
        "start --no-block appliance-reindex.service",
    ]
    assert actions[-3:] == [
        "systemctl daemon-reload",
        "systemctl enable --now appliance.service appliance-reindex.path appliance-reindex.timer "
        "appliance-watch.service",
        "systemctl start --no-block appliance-reindex.service (first index of the docs folder)",
    ]


def test_install_units_reports_a_failing_systemctl(tmp_path: Path, layout: dict[str, Path]) -> None:
    systemctl, _ = fake_systemctl(tmp_path, exit_code=1)
    run_dir = tmp_path / "run-systemd-system"
    run_dir.mkdir()
    with pytest.raises(systemd_units.UnitInstallError, match=r"daemon-reload.*boom"):
        install_units(
            {"appliance.service": "[Unit]\n"}, layout["units"], systemctl=str(systemctl), systemd_run_dir=run_dir
        )


def test_install_units_skips_enabling_without_systemd(tmp_path: Path, layout: dict[str, Path]) -> None:
    units = {"appliance.service": "[Unit]\n"}
    systemctl, log = fake_systemctl(tmp_path)
    actions = install_units(units, layout["units"], systemctl=str(systemctl), systemd_run_dir=tmp_path / "absent")
    assert actions[-1].startswith("skipped enabling: systemd is not running as PID 1")
    assert not log.exists()
    actions = install_units(units, layout["units"], systemctl="no-such-systemctl-here")
    assert actions[-1].startswith("skipped enabling: no-such-systemctl-here not found")
    assert (layout["units"] / "appliance.service").exists()


def test_service_user_commands_for_a_missing_user() -> None:
    commands = service_user_commands("appliance-nouser", "appliance-nogroup", Path("/var/lib/appliance"))
    assert commands[0] == ["groupadd", "--system", "appliance-nogroup"]
    useradd = commands[1]
    assert useradd[:2] == ["useradd", "--system"] and useradd[-1] == "appliance-nouser"
    assert useradd[useradd.index("--gid") + 1] == "appliance-nogroup"
    assert useradd[useradd.index("--home-dir") + 1] == "/var/lib/appliance"
    assert "--no-create-home" in useradd
    nobody = pwd.getpwnam("nobody")
    assert service_user_commands("nobody", grp.getgrgid(nobody.pw_gid).gr_name, Path("/var/lib/x")) == []
    with pytest.raises(ValueError, match=r"^user: "):
        service_user_commands("bad user", "g", Path("/var/lib/x"))


def test_ensure_service_user_as_non_root_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(systemd_units.os, "geteuid", lambda: 1000)
    home = tmp_path / "home"
    message = ensure_service_user("appliance-nouser", "appliance-nogroup", home)
    assert message.startswith("not root: as root, run: groupadd --system appliance-nogroup && useradd --system")
    assert f"chown -R appliance-nouser:appliance-nogroup {home}" in message
    assert not home.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_ensure_service_user_as_root_chowns_the_home(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    group = grp.getgrgid(nobody.pw_gid).gr_name
    home = tmp_path / "state" / "appliance"
    message = ensure_service_user("nobody", group, home)  # exists: no useradd/groupadd
    assert message == f"created {home} (0750); chown -R nobody:{group} {home}"
    assert stat.S_IMODE(home.stat().st_mode) == 0o750
    (home / "sub").mkdir()
    (home / "sub" / "catalog.sqlite").write_text("x")
    (home / "link").symlink_to("/etc/hostname")
    ensure_service_user("nobody", group, home)
    for path in (home, home / "sub", home / "sub" / "catalog.sqlite"):
        assert (path.stat().st_uid, path.stat().st_gid) == (nobody.pw_uid, nobody.pw_gid)
    assert os.lstat(home / "link").st_uid == nobody.pw_uid
    assert Path("/etc/hostname").stat().st_uid == 0  # the link was not followed


@pytest.mark.skipif(os.geteuid() != 0, reason="only root creates users")
def test_ensure_service_user_runs_groupadd_and_useradd(tmp_path: Path) -> None:
    """Stand-ins record the commands (the host's users are never changed); the user still missing is an error."""
    log = tmp_path / "calls.log"
    tools = {}
    for name in ("useradd", "groupadd"):
        tools[name] = tmp_path / name
        tools[name].write_text(f'#!/bin/sh\necho {name} "$@" >> {log}\n')
        tools[name].chmod(0o755)
    with pytest.raises(systemd_units.UnitInstallError, match="still does not exist"):
        ensure_service_user(
            "appliance-nouser",
            "appliance-nogroup",
            tmp_path / "home",
            useradd=str(tools["useradd"]),
            groupadd=str(tools["groupadd"]),
        )
    calls = log.read_text().splitlines()
    assert calls[0] == "groupadd --system appliance-nogroup"
    assert calls[1].startswith("useradd --system --gid appliance-nogroup --home-dir ")
    assert calls[1].endswith(" appliance-nouser")


class _Readiness(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []

    def do_GET(self) -> None:
        code = self.answers.pop(0) if self.answers else 200
        body = b'{"ready": true}' if code == 200 else b'{"title": "Not ready", "detail": "the index is inconsistent"}'
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def readiness_server() -> Iterator[tuple[str, type[_Readiness]]]:
    handler = type("Handler", (_Readiness,), {"answers": []})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/readyz", handler
    finally:
        server.shutdown()
        server.server_close()


def test_wait_ready_waits_for_200(readiness_server: tuple[str, type[_Readiness]]) -> None:
    url, handler = readiness_server
    handler.answers = [503, 503]
    lines: list[str] = []
    assert wait_ready(url, timeout=10, interval=0.01, log=lines.append)
    assert lines[0] == f"not ready yet: {url}: HTTP 503: the index is inconsistent"
    assert lines[-1].startswith(f"ready: {url} answered 200")


def test_wait_ready_gives_up_after_its_timeout(readiness_server: tuple[str, type[_Readiness]]) -> None:
    url, handler = readiness_server
    handler.answers = [503] * 1000
    lines: list[str] = []
    assert not wait_ready(url, timeout=0.2, interval=0.01, log=lines.append)
    assert lines[-1] == f"not ready after 0.2 s: {url}"


def test_wait_ready_command_line_against_a_closed_port(tmp_path: Path) -> None:
    """The ExecStartPost command itself, against nothing listening: it keeps trying, then fails."""
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "appliance.offline.systemd_units",
            "wait-ready",
            "http://127.0.0.1:9/readyz",
            "--timeout",
            "0.3",
            "--interval",
            "0.1",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert re.search(r"not ready yet: http://127.0.0.1:9/readyz: .*refused", result.stderr)
