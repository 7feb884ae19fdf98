"""Zero-network guard: run a command under strace and prove it contacted nothing but loopback.

`guard_prefix(log)` is the strace prefix that records every connect, sendto, sendmsg, sendmmsg and
bind of a command and all its children and threads (seccomp-bpf: only those system calls stop the
process, so torch, pip and llama.cpp run at full speed; tests/offline_target.py `traced()` is this
prefix). `parse_log(log)` reads such a log and classifies every attempt:

* allowed: AF_UNIX, AF_NETLINK, AF_UNSPEC (a disconnect), and IPv4 127.0.0.0/8, IPv6 ::1 (also as
  ::ffff:127.x.y.z), whatever the port, except port 53;
* DNS: anything to port 53 (loopback included: a stub resolver is still a lookup), anything to a
  nameserver of /etc/resolv.conf, and a connect to systemd-resolved's socket.
  The names asked for are decoded from the query bytes (`us.i.posthog.com`, `huggingface.co`);
* a violation: every other address, and a bind that listens on a non-loopback address.

Each violation is reported with its strace line, so an offender such as chromadb's posthog client
or a hub look-up names itself. `NetReport.counts()` gives the figures by family and address.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SYSCALLS = ("connect", "sendto", "sendmsg", "sendmmsg", "bind")
# systemd-resolved's sockets answer host look-ups only. nscd's socket is not listed: glibc asks it for
# users and groups too (torch's import calls getpwuid), and with no nscd running (the appliance's
# units start none) a host look-up that /etc/hosts cannot answer goes on to port 53, which is caught.
NAME_SERVICE_SOCKETS = ("/run/systemd/resolve/", "/var/run/systemd/resolve/")
ALLOWED_FAMILIES = {"AF_UNIX", "AF_NETLINK", "AF_UNSPEC"}

_LINE = re.compile(
    r"^(?:\[pid\s+)?(?P<pid>\d+)\]?\s+(?:\d+:\d+:\d+(?:\.\d+)?\s+)?"
    r"(?:<\.\.\.\s+)?(?P<syscall>" + "|".join(SYSCALLS) + r")\b(?P<rest>.*)$"
)
_SOCKADDR = re.compile(r"\{sa_family=(?P<family>AF_[A-Z0-9]+)(?P<body>[^{}]*)\}")
_INET_ADDR = re.compile(r'sin_addr=inet_addr\("(?P<addr>[^"]+)"\)')
_INET6_ADDR = re.compile(r'inet_pton\(AF_INET6,\s*"(?P<addr>[^"]+)"')
_PORT = re.compile(r"sin6?_port=htons\((?P<port>\d+)\)")
_UNIX_PATH = re.compile(r'sun_path=(?P<abstract>@?)"(?P<path>(?:[^"\\]|\\.)*)"')
# -yy annotations of a connected socket: 4<TCP:[127.0.0.1:41494->127.0.0.1:56093]>, <UDPv6:[[::1]:5->[::1]:53]>
_FD_PEER = re.compile(r"^\(\d+<(?P<proto>TCP|UDP|TCPv6|UDPv6):\[(?P<local>.*?)->(?P<peer>.*?)\]>")
_RESULT = re.compile(r"\)\s+=\s+(?P<result>.*)$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b"}


def guard_prefix(log: Path) -> list[str]:
    """strace prefix recording every network system call of a command, its children and threads.

    -yy names the peer of a connected socket on sendto/sendmsg (so a send on a socket connected
    earlier is attributed), -s 256 keeps DNS query names whole."""
    return [
        "strace",
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-yy",
        "-s",
        "256",
        "-e",
        "trace=" + ",".join(SYSCALLS),
        "-o",
        str(log),
    ]


def resolvers(resolv_conf: Path = Path("/etc/resolv.conf")) -> set[str]:
    """The nameserver addresses this host would send DNS queries to."""
    try:
        text = resolv_conf.read_text()
    except OSError:
        return set()
    found = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            found.add(parts[1].split("%")[0])
    return found


@dataclass(frozen=True)
class NetEvent:
    """One attempt to reach an address, as strace recorded it."""

    pid: int
    syscall: str
    family: str
    address: str | None  # IP address, socket path, or None (netlink, unspec)
    port: int | None
    result: str
    line: str
    verdict: str  # "allowed", "dns" or "violation"
    reason: str = ""
    dns_name: str | None = None

    @property
    def target(self) -> str:
        if self.address is None:
            return self.family
        if self.port is None:
            return f"{self.family} {self.address}"
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.family} {host}:{self.port}"


@dataclass
class NetReport:
    events: list[NetEvent] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[NetEvent]:
        return [event for event in self.events if event.verdict == "violation"]

    @property
    def dns(self) -> list[NetEvent]:
        return [event for event in self.events if event.verdict == "dns"]

    @property
    def ok(self) -> bool:
        return not self.violations and not self.dns

    def counts(self) -> Counter[str]:
        """Attempts per family and address (ports left out: they are ephemeral on loopback)."""
        counter: Counter[str] = Counter()
        for event in self.events:
            if event.family in ("AF_UNIX",):
                key = f"AF_UNIX {event.address}"
            elif event.address is None:
                key = event.family
            else:
                key = f"{event.family} {event.address}"
            counter[key] += 1
        return counter

    def by_syscall(self) -> Counter[str]:
        return Counter(event.syscall for event in self.events)

    def merge(self, other: NetReport) -> NetReport:
        return NetReport(self.events + other.events, self.logs + other.logs)

    def describe(self) -> str:
        """A message naming every offending attempt with its strace line."""
        lines = [
            f"{len(self.violations)} connection(s) beyond loopback, {len(self.dns)} DNS/name look-up(s) "
            f"in {len(self.events)} network system call(s) of {', '.join(self.logs) or 'the log'}:"
        ]
        for event in self.violations + self.dns:
            name = f" (asks for {event.dns_name})" if event.dns_name else ""
            lines.append(
                f"  [{event.verdict}] {event.syscall} to {event.target}{name}: {event.reason}\n    {event.line}"
            )
        return "\n".join(lines)


def parse_log(log: Path, nameservers: Iterable[str] | None = None) -> NetReport:
    servers = set(resolvers() if nameservers is None else nameservers)
    report = NetReport(logs=[str(log)])
    for raw in log.read_text(errors="replace").splitlines():
        event = parse_line(raw, servers)
        if event is not None:
            report.events.append(event)
    return report


def parse_line(line: str, nameservers: set[str]) -> NetEvent | None:
    """The attempt a strace line records, or None (another system call, a resumed half, a signal)."""
    match = _LINE.match(line.strip())
    if match is None:
        return None
    pid, syscall, rest = int(match.group("pid")), match.group("syscall"), match.group("rest")
    if rest.lstrip().startswith("resumed>"):
        return None  # the arguments were on the "<unfinished ...>" line, already counted
    result_match = _RESULT.search(rest)
    result = result_match.group("result") if result_match else "unfinished"
    sockaddr = _SOCKADDR.search(rest)
    if sockaddr is not None:
        family, body = sockaddr.group("family"), sockaddr.group("body")
        address, port = _address_of(family, body)
    else:
        peer = _FD_PEER.match(rest)
        if peer is None:
            return None  # a send on a connected socket without -yy, or a netlink message: no new peer
        family = "AF_INET6" if peer.group("proto").endswith("v6") else "AF_INET"
        address, port = _split_host_port(peer.group("peer"))
    verdict, reason = _classify(syscall, family, address, port, nameservers)
    dns_name = _dns_name(rest) if verdict == "dns" and port == 53 and syscall.startswith("send") else None
    return NetEvent(pid, syscall, family, address, port, result, line.strip(), verdict, reason, dns_name)


def _address_of(family: str, body: str) -> tuple[str | None, int | None]:
    port_match = _PORT.search(body)
    port = int(port_match.group("port")) if port_match else None
    if family == "AF_INET":
        found = _INET_ADDR.search(body)
        return (found.group("addr") if found else None), port
    if family == "AF_INET6":
        found = _INET6_ADDR.search(body)
        return (found.group("addr") if found else None), port
    if family == "AF_UNIX":
        found = _UNIX_PATH.search(body)
        if found is None:
            return None, None
        return ("@" if found.group("abstract") else "") + found.group("path"), None
    return None, None


def _split_host_port(text: str) -> tuple[str | None, int | None]:
    """'127.0.0.1:8080' or '[::1]:8080' → (host, port)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    try:
        return host or None, int(port)
    except ValueError:
        return text or None, None


def _is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _classify(
    syscall: str, family: str, address: str | None, port: int | None, nameservers: set[str]
) -> tuple[str, str]:
    if family == "AF_UNIX":
        if address and any(address.startswith(path) for path in NAME_SERVICE_SOCKETS):
            return "dns", "a host-name look-up through systemd-resolved"
        return "allowed", ""
    if family in ALLOWED_FAMILIES:
        return "allowed", ""
    if family not in ("AF_INET", "AF_INET6"):
        return "violation", f"address family {family} is neither loopback nor local"
    if address is None:
        return "violation", "an internet address strace could not decode"
    if port == 53:
        return "dns", "DNS: port 53"
    if address.split("%")[0] in nameservers:
        return "dns", "a nameserver of /etc/resolv.conf"
    if syscall == "bind":
        if _is_loopback(address) or port in (0, None):
            return "allowed", ""  # loopback, or an ephemeral port picked for a client socket
        return "violation", "listens on a non-loopback address"
    if _is_loopback(address):
        return "allowed", ""
    return "violation", "an address beyond loopback"


def unescape(text: str) -> bytes:
    """The bytes of a C-escaped strace string ("\\2us\\1i\\7posthog\\3com\\0")."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("x") and len(code) == 3:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        return _SIMPLE_ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text).encode("latin-1", "replace")


def _dns_name(rest: str) -> str | None:
    """The name asked for in the first DNS query string of a send (header: 12 bytes, then labels)."""
    for raw in _STRING.findall(rest):
        data = unescape(raw)
        if len(data) <= 12:
            continue
        labels, position = [], 12
        while position < len(data):
            length = data[position]
            if length == 0 or length > 63 or position + 1 + length > len(data):
                break
            labels.append(data[position + 1 : position + 1 + length].decode("ascii", "replace"))
            position += 1 + length
        if labels:
            return ".".join(labels)
    return None
