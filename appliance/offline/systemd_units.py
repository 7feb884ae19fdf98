"""The systemd units: render the templates in systemd/ for one host, install them, create the service user.

Standard library only: this module also runs inside the bootstrap installer, before anything is
installed. The templates (appliance.service, appliance-reindex.{service,path,timer},
appliance-watch.service) hold
placeholders such as ``@PREFIX@``; `render_units` fills them from `UnitParams`, which refuses any
value that would change the meaning of a unit line (whitespace, quotes, ``%`` specifiers, ``$``
variables, backslashes).

It is also the readiness probe of appliance.service (its ExecStartPost)::

    python -m appliance.offline.systemd_units wait-ready http://127.0.0.1:8080/readyz
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import ipaddress
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from appliance.durable import write_atomically

TEMPLATE_NAMES = (
    "appliance.service",
    "appliance-reindex.service",
    "appliance-reindex.path",
    "appliance-reindex.timer",
    "appliance-watch.service",
)
# What `install_units` enables and starts; the reindex service itself is started by the path unit (on a
# change at the top of the docs folder, or on the trigger file appliance-watch.service writes for a
# change anywhere below it) and by the timer.
ENABLE_UNITS = ("appliance.service", "appliance-reindex.path", "appliance-reindex.timer", "appliance-watch.service")
REINDEX_SERVICE = "appliance-reindex.service"
DEFAULT_UNIT_DIR = Path("/etc/systemd/system")
# Present only when PID 1 is systemd (what sd_booted(3) checks).
SYSTEMD_RUN_DIR = Path("/run/systemd/system")

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
# Would change the meaning of a unit line: whitespace splits values, quotes and backslashes are
# parsed, % starts a specifier, $ a variable in Exec lines, ; separates commands.
_FORBIDDEN_CHARACTERS = frozenset("%$\\\"';`")
# ProtectHome=yes makes these inaccessible to the services: nothing they need may live there.
_PROTECTED_HOMES = (Path("/home"), Path("/root"), Path("/run/user"))
_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_MEMORY = re.compile(r"(?:\d+(?:\.\d+)?[KMGTPE]?|\d+(?:\.\d+)?%|infinity)")


@dataclass(frozen=True)
class UnitParams:
    """What the units need to know about one host. Invalid values raise ValueError naming the field.

    prefix: where the bundle is installed (the venv is prefix/venv); home: APPLIANCE_HOME, the only
    writable folder; docs: the folder the reindex units watch and index. host and port are what
    `appliance serve` listens on (an IP address or localhost: a wildcard such as 0.0.0.0 listens
    everywhere and needs an API token first). operator_subnet (a CIDR) may reach the service besides
    localhost. memory_max is systemd's MemoryMax= (``8G``, ``75%``, ``infinity``).
    """

    prefix: Path
    home: Path
    docs: Path
    user: str = "appliance"
    group: str = "appliance"
    host: str = "127.0.0.1"
    port: int = 8080
    operator_subnet: str | None = None
    memory_max: str = "8G"

    def __post_init__(self) -> None:
        for name in ("prefix", "home", "docs"):
            object.__setattr__(self, name, _checked_path(name, getattr(self, name)))
        if len(self.home.parts) < 3:
            raise ValueError(f"home: {self.home} is / or a top-level folder; it would all be writable by the service")
        for name in ("user", "group"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME.fullmatch(value):
                raise ValueError(
                    f"{name}: {value!r} is not a valid system {name} name (lowercase letters, digits, _ and -, "
                    "at most 32 characters, not starting with a digit or -)"
                )
        if self.user == "root" or self.group == "root":
            raise ValueError("user: the service must run as a dedicated unprivileged user, not root")
        object.__setattr__(self, "host", _checked_host(self.host))
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise ValueError(f"port: {self.port!r} is not a port number (1-65535)")
        if self.operator_subnet is not None:
            object.__setattr__(self, "operator_subnet", _checked_subnet(self.operator_subnet))
        if not isinstance(self.memory_max, str) or not _MEMORY.fullmatch(self.memory_max):
            raise ValueError(
                f"memory_max: {self.memory_max!r} is not a MemoryMax= value (bytes with an optional K, M, G, T "
                "suffix such as 8G, a percentage such as 75%, or infinity)"
            )

    def placeholders(self) -> dict[str, str | None]:
        """Placeholder name → its text in a unit; None removes every line that holds that placeholder."""
        return {
            "PREFIX": str(self.prefix),
            "HOME": str(self.home),
            "DOCS": str(self.docs),
            "USER": self.user,
            "GROUP": self.group,
            "HOST": self.host,
            "PORT": str(self.port),
            "READY_URL": ready_url(self.host, self.port),
            "OPERATOR_SUBNET": self.operator_subnet,
            "HOST_ADDRESS": _own_address(self.host),
            # A literal % in a unit file is written %% (a lone % starts a specifier).
            "MEMORY_MAX": self.memory_max.replace("%", "%%"),
        }


def _checked_path(field: str, value: object) -> Path:
    if not isinstance(value, str | Path):
        raise ValueError(f"{field}: expected a path, got {type(value).__name__}")
    text = str(value)
    bad = sorted({c for c in text if c in _FORBIDDEN_CHARACTERS or c.isspace() or not c.isprintable()})
    if bad:
        raise ValueError(f"{field}: {text!r} contains {''.join(bad)!r}, which a systemd unit line cannot hold as is")
    path = Path(text)
    if not path.is_absolute():
        raise ValueError(f"{field}: {text!r} is not an absolute path")
    if ".." in path.parts or text != str(path) or "//" in text:
        raise ValueError(f"{field}: {text!r} is not a normalized path (no '..', no '//', no trailing '/')")
    for protected in _PROTECTED_HOMES:
        if path == protected or protected in path.parents:
            raise ValueError(
                f"{field}: {text} is under {protected}, which ProtectHome=yes hides from the services; "
                "use a folder such as /srv or /var/lib"
            )
    return path


def _checked_host(host: object) -> str:
    if not isinstance(host, str) or not host:
        raise ValueError(f"host: {host!r} is not an IP address or localhost")
    if host == "localhost":
        return host
    if "%" in host:
        raise ValueError(f"host: {host!r}: scoped IPv6 addresses are not supported in a unit")
    try:
        return str(ipaddress.ip_address(host.strip("[]") if host.startswith("[") else host))
    except ValueError:
        raise ValueError(
            f"host: {host!r} is not an IP address or localhost (a host name could resolve to anything, and "
            "the readiness probe and the IP filter need a known address)"
        ) from None


def _checked_subnet(subnet: object) -> str:
    if not isinstance(subnet, str) or not subnet or "%" in subnet:
        raise ValueError(f"operator_subnet: {subnet!r} is not an IPv4 or IPv6 network (CIDR such as 10.20.0.0/16)")
    try:
        network = ipaddress.ip_network(subnet.strip())
    except ValueError as exc:
        hint = ""
        with contextlib.suppress(ValueError):
            hint = f"; did you mean {ipaddress.ip_network(subnet.strip(), strict=False)}?"
        raise ValueError(
            f"operator_subnet: {subnet!r} is not an IPv4 or IPv6 network (CIDR such as 10.20.0.0/16): {exc}{hint}"
        ) from None
    return str(network)


def _is_wildcard(host: str) -> bool:
    return host != "localhost" and ipaddress.ip_address(host).is_unspecified


def _own_address(host: str) -> str | None:
    """The listen address, when IPAddressAllow=localhost does not already cover it (so the probe gets through)."""
    if host == "localhost" or _is_wildcard(host) or ipaddress.ip_address(host).is_loopback:
        return None
    return host


def ready_url(host: str, port: int) -> str:
    """Where the readiness probe asks: the listen address, or loopback when listening on a wildcard."""
    if host == "localhost":
        target = "127.0.0.1"
    elif _is_wildcard(host):
        target = "::1" if ipaddress.ip_address(host).version == 6 else "127.0.0.1"
    else:
        target = host
    if ":" in target:
        target = f"[{target}]"
    return f"http://{target}:{port}/readyz"


def unit_templates_dir(prefix: Path | None = None) -> Path:
    """The folder holding the unit templates.

    With `prefix` (an installed bundle): prefix/share/systemd. Without: the bundle this Python runs
    from (sys.prefix is prefix/venv), else the source checkout's systemd/ folder.
    """
    if prefix is not None:
        candidates = [Path(prefix) / "share" / "systemd"]
    else:
        candidates = [
            Path(sys.prefix).parent / "share" / "systemd",
            Path(__file__).resolve().parents[2] / "systemd",
        ]
    for candidate in candidates:
        if (candidate / TEMPLATE_NAMES[0]).is_file():
            return candidate
    raise FileNotFoundError("no systemd unit templates in " + " or ".join(str(c) for c in candidates))


def render_unit(template: str, values: dict[str, str | None], name: str = "unit") -> str:
    """Fill one template. A line whose placeholder is None is dropped; an unknown placeholder is an error."""
    unknown = sorted({m.group(1) for m in PLACEHOLDER.finditer(template)} - values.keys())
    if unknown:
        raise ValueError(f"{name}: unknown placeholders {', '.join('@' + u + '@' for u in unknown)}")
    lines: list[str] = []
    for line in template.splitlines(keepends=True):
        names = [m.group(1) for m in PLACEHOLDER.finditer(line)]
        if any(values[n] is None for n in names):
            continue
        lines.append(PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), line))
    return "".join(lines)


def render_units(templates: Path, params: UnitParams) -> dict[str, str]:
    """Every unit template in `templates` filled for `params`: file name → unit text."""
    values = params.placeholders()
    units: dict[str, str] = {}
    for name in TEMPLATE_NAMES:
        path = Path(templates) / name
        try:
            template = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"unit template {path} is missing") from None
        units[name] = render_unit(template, values, name)
    return units


class UnitInstallError(RuntimeError):
    """A systemctl, useradd or groupadd command failed; the message says which and why."""


def _run(command: Sequence[str], hint: str = "") -> None:
    result = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise UnitInstallError(f"`{' '.join(command)}` failed (exit {result.returncode}): {output}{hint}")


def install_units(
    units: dict[str, str],
    unit_dir: Path = DEFAULT_UNIT_DIR,
    *,
    enable: bool = True,
    systemctl: str = "systemctl",
    start_reindex: bool = True,
    systemd_run_dir: Path = SYSTEMD_RUN_DIR,
) -> list[str]:
    """Write `units` into `unit_dir` (atomically, mode 0644); with `enable`, daemon-reload and enable --now.

    `enable --now` waits until appliance.service is ready (its readiness probe). With
    `start_reindex`, appliance-reindex.service is then started in the background: the first index
    of the docs folder, which the path unit would only start at the next change. Without systemctl,
    or when PID 1 is not systemd (a container, a chroot), the files are written and enabling is
    skipped; the returned actions say so. Returns what was done, one line each.
    """
    for name in units:
        if "/" in name or name.startswith(".") or not name.endswith((".service", ".path", ".timer")):
            raise ValueError(f"{name!r} is not a unit file name")
    unit_dir = Path(unit_dir)
    unit_dir.mkdir(parents=True, exist_ok=True)
    actions: list[str] = []
    for name, text in units.items():
        write_atomically(unit_dir / name, text)
        actions.append(f"wrote {unit_dir / name}")
    if not enable:
        return actions
    systemctl_path = shutil.which(systemctl)
    if systemctl_path is None:
        actions.append(f"skipped enabling: {systemctl} not found; enable the units where systemd runs")
        return actions
    if not Path(systemd_run_dir).is_dir():
        actions.append(
            f"skipped enabling: systemd is not running as PID 1 here ({systemd_run_dir} is missing); "
            f"on the host run: systemctl daemon-reload && systemctl enable --now {' '.join(ENABLE_UNITS)}"
        )
        return actions
    _run([systemctl_path, "daemon-reload"])
    actions.append("systemctl daemon-reload")
    to_enable = [name for name in ENABLE_UNITS if name in units]
    if to_enable:
        _run(
            [systemctl_path, "enable", "--now", *to_enable],
            hint="; see `systemctl status appliance.service` and `journalctl -u appliance.service`",
        )
        actions.append("systemctl enable --now " + " ".join(to_enable))
    if start_reindex and REINDEX_SERVICE in units:
        _run([systemctl_path, "start", "--no-block", REINDEX_SERVICE])
        actions.append(f"systemctl start --no-block {REINDEX_SERVICE} (first index of the docs folder)")
    return actions


def _nologin_shell() -> str:
    for candidate in ("/usr/sbin/nologin", "/sbin/nologin"):
        if os.access(candidate, os.X_OK):
            return candidate
    return "/bin/false"


def _exists(lookup: Callable[[str], object], name: str) -> bool:
    try:
        lookup(name)
    except KeyError:
        return False
    return True


def service_user_commands(
    user: str, group: str, home: Path, *, useradd: str = "useradd", groupadd: str = "groupadd"
) -> list[list[str]]:
    """The groupadd/useradd commands still needed for a system user `user` in `group` with home `home`."""
    for field, value in (("user", user), ("group", group)):
        if not _NAME.fullmatch(value):
            raise ValueError(f"{field}: {value!r} is not a valid system {field} name")
    commands: list[list[str]] = []
    if not _exists(grp.getgrnam, group):
        commands.append([groupadd, "--system", group])
    if not _exists(pwd.getpwnam, user):
        commands.append(
            [
                useradd,
                "--system",
                "--gid",
                group,
                "--home-dir",
                str(home),
                "--no-create-home",
                "--shell",
                _nologin_shell(),
                "--comment",
                "offline question-answering appliance",
                user,
            ]
        )
    return commands


def ensure_service_user(
    user: str, group: str, home: Path, *, useradd: str = "useradd", groupadd: str = "groupadd"
) -> str:
    """Create the system group and user when missing and give them `home` (created 0750 if absent).

    Only root can do that: otherwise nothing is changed and the message says what the admin must run
    ("not root: as root, run: ..."). As root, the message lists what was done, separated by "; ".
    """
    home = Path(home)
    commands = service_user_commands(user, group, home, useradd=useradd, groupadd=groupadd)
    chown = ["chown", "-R", f"{user}:{group}", str(home)]
    if os.geteuid() != 0:
        needed = [" ".join(c) for c in commands] + [f"mkdir -p -m 0750 {home}", " ".join(chown)]
        return "not root: as root, run: " + " && ".join(needed)
    actions: list[str] = []
    for command in commands:
        _run(command)
        actions.append(" ".join(command))
    try:
        uid = pwd.getpwnam(user).pw_uid
        gid = grp.getgrnam(group).gr_gid
    except KeyError as exc:
        raise UnitInstallError(f"{user}:{group} still does not exist after {useradd}/{groupadd}: {exc}") from None
    if not home.exists():
        home.mkdir(parents=True, mode=0o750)
        os.chmod(home, 0o750)
        actions.append(f"created {home} (0750)")
    # Everything under the home belongs to the service (files an admin created as root included);
    # symlinks are changed themselves, never followed.
    os.lchown(home, uid, gid)
    for root, dirs, files in os.walk(home):
        for entry in (*dirs, *files):
            os.lchown(os.path.join(root, entry), uid, gid)
    actions.append(" ".join(chown))
    return "; ".join(actions)


SECURITY_SUMMARY = re.compile(r"Overall exposure level for (\S+): ([0-9.]+) (\w+)")


def security_exposure(unit_file: Path, systemd_analyze: str = "systemd-analyze") -> tuple[float, str, str]:
    """`systemd-analyze security --offline=true` of one service file: (exposure 0-10, level, full report).

    Lower is better: 0 PERFECT, below 1 SAFE, below 5 OK, below 7.5 MEDIUM, then EXPOSED, UNSAFE,
    DANGEROUS. Only services have an exposure: a path or timer unit runs no process, and
    systemd-analyze scores it as an unhardened one (9.8 UNSAFE), which means nothing.
    """
    result = subprocess.run(
        [systemd_analyze, "security", "--offline=true", "--no-pager", str(unit_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    match = SECURITY_SUMMARY.search(result.stdout)
    if match is None:
        raise UnitInstallError(f"systemd-analyze security {unit_file} gave no exposure: {result.stderr.strip()}")
    return float(match.group(2)), match.group(3), result.stdout


# --- the readiness probe (ExecStartPost of appliance.service) ---


def probe(url: str, timeout: float = 10.0) -> tuple[int, str]:
    """GET `url` once, no proxies: (HTTP status, or 0 when nothing answered; a short reason)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status, "ready"
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode("utf-8", "replace")
        match = re.search(r'"detail"\s*:\s*"((?:[^"\\]|\\.)*)"', detail)
        return exc.code, match.group(1) if match else exc.reason
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return 0, str(reason)


def wait_ready(
    url: str,
    timeout: float | None = None,
    interval: float = 1.0,
    report_every: float = 15.0,
    log: Callable[[str], None] | None = None,
) -> bool:
    """Ask `url` until it answers 200 (True) or `timeout` seconds have passed (False; None: forever).

    The reason it is not ready yet goes to `log` when it changes and every `report_every` seconds.
    """
    emit = log or (lambda line: print(line, file=sys.stderr, flush=True))
    started = time.monotonic()
    last: tuple[int, str] | None = None
    last_report = 0.0
    while True:
        status, reason = probe(url)
        if status == 200:
            emit(f"ready: {url} answered 200 after {time.monotonic() - started:.1f} s")
            return True
        now = time.monotonic()
        if (status, reason) != last or now - last_report >= report_every:
            emit(f"not ready yet: {url}: " + (f"HTTP {status}: {reason}" if status else reason))
            last, last_report = (status, reason), now
        if timeout is not None and now - started >= timeout:
            emit(f"not ready after {timeout:g} s: {url}")
            return False
        time.sleep(interval)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m appliance.offline.systemd_units")
    commands = parser.add_subparsers(dest="command", required=True)
    wait = commands.add_parser("wait-ready", help="wait until URL answers 200 (appliance.service's ExecStartPost)")
    wait.add_argument("url")
    wait.add_argument("--timeout", type=float, default=None, help="give up after this many seconds [forever]")
    wait.add_argument("--interval", type=float, default=1.0, help="seconds between tries [1]")
    args = parser.parse_args(argv)
    return 0 if wait_ready(args.url, timeout=args.timeout, interval=args.interval) else 1


if __name__ == "__main__":
    sys.exit(main())
