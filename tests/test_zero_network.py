"""Zero network: the installed appliance's whole life under strace contacts nothing but loopback.

The install itself ran under strace with the network cut off (the `installed_appliance` fixture, shared
with tests/test_offline_install.py); here the installed `prefix/bin/appliance` ingests, serves (plain
strace, no namespace: the client must reach it on 127.0.0.1), answers a real question with the installed
Qwen model, refuses another, searches, reindexes and reports its status — each process traced with
every connect, sendto, sendmsg, sendmmsg and bind of every thread and child. The guard's parser is
itself proven on code that does reach out (a TEST-NET connect, a posthog look-up, a huggingface_hub
call). The harness: scripts/reliability/netguard.py and zero_network.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from appliance.offline_env import OFFLINE_VARIABLES
from scripts.reliability.netguard import parse_line, parse_log
from scripts.reliability.procs import REPO, clean_env
from scripts.reliability.security import find_leaks, log_files
from scripts.reliability.zero_network import (
    ocr_ingest_report,
    offender_report,
    onnx_runtime_reports,
    run_lifecycle,
)
from tests.scans import image_bytes, mixed_pdf, page_image

RESOLVERS = {"10.255.255.53"}


def verdict(line: str) -> tuple[str, str | None, int | None]:
    event = parse_line(line, RESOLVERS)
    assert event is not None, line
    return event.verdict, event.address, event.port


def test_the_parser_classifies_every_shape_of_strace_line() -> None:
    inet = 'connect(7, {sa_family=AF_INET, sin_port=htons(%d), sin_addr=inet_addr("%s")}, 16) = %s'
    inet6 = (
        'sendto(6<UDPv6:[5]>, "y", 1, 0, {sa_family=AF_INET6, sin6_port=htons(%d), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "%s", &sin6_addr), sin6_scope_id=0}, 28) = 1'
    )
    assert verdict("12 " + inet % (8080, "127.0.0.1", "0")) == ("allowed", "127.0.0.1", 8080)
    assert verdict("12 " + inet % (8080, "127.3.4.5", "0"))[0] == "allowed"
    # us.i.posthog.com and huggingface.co resolve to public addresses: any such connect is named.
    assert verdict("12 " + inet % (443, "44.198.60.97", "-1 EINPROGRESS (Operation now in progress)"))[0] == "violation"
    assert verdict("12 " + inet % (53, "127.0.0.53", "0"))[0] == "dns", "a stub resolver is still DNS"
    assert verdict("12 " + inet % (853, "10.255.255.53", "0"))[0] == "dns", "a nameserver on any port"
    assert verdict("12 " + inet6 % (9, "::1"))[0] == "allowed"
    assert verdict("12 " + inet6 % (9, "::ffff:127.0.0.1"))[0] == "allowed"
    assert verdict("12 " + inet6 % (443, "::ffff:8.8.8.8"))[0] == "violation"
    assert verdict("12 " + inet6 % (443, "2606:4700::6810:84e5"))[0] == "violation"
    unix = '12 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1 ENOENT (No such file)'
    assert verdict(unix) == ("allowed", "/var/run/nscd/socket", None)  # users and groups: torch asks getpwuid
    resolved = '12 connect(3, {sa_family=AF_UNIX, sun_path="/run/systemd/resolve/io.systemd.Resolve"}, 110) = 0'
    assert verdict(resolved)[0] == "dns"
    assert (
        verdict("12 bind(7<NETLINK:[1]>, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0")[0] == "allowed"
    )
    assert verdict("12 " + inet.replace("connect", "bind") % (0, "0.0.0.0", "0"))[0] == "allowed"
    assert verdict("12 " + inet.replace("connect", "bind") % (8080, "0.0.0.0", "0"))[0] == "violation"
    assert verdict("12 connect(3, {sa_family=AF_PACKET, sll_protocol=htons(ETH_P_ALL)}, 20) = 0")[0] == "violation"
    # A send on a socket connected earlier names its peer only through -yy: still attributed.
    connected = '12 sendto(4<TCP:[192.0.2.2:41494->203.0.113.9:443]>, "\\26\\3\\1", 3, MSG_NOSIGNAL, NULL, 0) = 3'
    assert verdict(connected) == ("violation", "203.0.113.9", 443)
    unfinished = "12 " + (inet % (443, "203.0.113.9", "")).removesuffix(") = ") + " <unfinished ...>"
    assert verdict(unfinished)[0] == "violation"
    assert parse_line("12 <... connect resumed>) = 0", RESOLVERS) is None
    assert parse_line('12 openat(AT_FDCWD, "/etc/hosts", O_RDONLY) = 3', RESOLVERS) is None
    query = (
        "12 sendmmsg(7<UDP:[192.0.2.2:46466->10.255.255.53:53]>, [{msg_hdr={msg_name=NULL, msg_namelen=0, "
        'msg_iov=[{iov_base="\\252\\266\\1\\0\\0\\1\\0\\0\\0\\0\\0\\0\\2us\\1i\\7posthog\\3com\\0\\0\\1\\0\\1", '
        "iov_len=34}], msg_iovlen=1}, msg_len=34}], 1, MSG_NOSIGNAL) = 1"
    )
    event = parse_line(query, RESOLVERS)
    assert event is not None and event.verdict == "dns" and event.dns_name == "us.i.posthog.com"


def test_the_guard_catches_deliberate_offenders(tmp_path: Path) -> None:
    reports = offender_report(tmp_path)
    for name, report in reports.items():
        assert not report.ok, f"{name} reached out and the guard missed it"
    raw = reports["raw-connect"]
    assert [event.target for event in raw.violations] == ["AF_INET 203.0.113.1:443"]
    assert "203.0.113.1" in raw.describe() and "connect(" in raw.describe(), "the message quotes the syscall line"
    assert "us.i.posthog.com" in {event.dns_name for event in reports["posthog-lookup"].dns}
    hub = reports["huggingface-hub"]
    assert "huggingface.co" in {event.dns_name for event in hub.dns}
    assert "asks for huggingface.co" in hub.describe()


def test_importing_the_appliance_turns_every_offline_switch_on_over_inherited_values() -> None:
    # An admin's shell (or a unit file) that exports HF_HUB_OFFLINE=0 or ORT_DISABLE_TELEMETRY=0 must not win.
    inherited = clean_env(**{name: "0" for name in OFFLINE_VARIABLES})
    probe = "import json, os, appliance; print(json.dumps({k: os.environ[k] for k in json.loads(os.sys.argv[1])}))"
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(sorted(OFFLINE_VARIABLES))],
        env=inherited,
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert json.loads(done.stdout) == OFFLINE_VARIABLES
    # Both names of ONNX Runtime's opt-out: 1.29-1.32 read the first, later releases the second.
    assert OFFLINE_VARIABLES["ORT_DISABLE_TELEMETRY"] == OFFLINE_VARIABLES["ORT_TELEMETRY_DISABLED"] == "1"


def test_the_guarded_runs_do_not_inherit_the_ci_markers_that_silence_onnx_runtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ONNX Runtime sends nothing where CI=true is set, so in CI a guarded run would pass without the fix.
    for marker in ("CI", "GITHUB_ACTIONS", "TF_BUILD", "JENKINS_URL"):
        monkeypatch.setenv(marker, "true")
    monkeypatch.setenv("PATH_FOR_THE_TEST", "kept")
    env = clean_env()
    assert not {"CI", "GITHUB_ACTIONS", "TF_BUILD", "JENKINS_URL"} & set(env)
    assert env["PATH_FOR_THE_TEST"] == "kept"


@pytest.mark.slow
def test_onnx_runtime_phones_home_unless_the_appliance_runs_it(tmp_path: Path, models_dir: Path) -> None:
    # The ONNX embedder is what "auto" runs on CPUs without bfloat16; ONNX Runtime >= 1.29 has a telemetry
    # uploader on Linux. Bare, the guard catches it; through the appliance, with both opt-outs inherited as 0
    # from the caller, nothing leaves. Neither run sees a CI marker (it would silence ONNX Runtime either way).
    reports = onnx_runtime_reports(tmp_path, models_dir / "embedder" / "all-MiniLM-L6-v2")
    bare = reports["onnxruntime-bare"]
    assert not bare.ok and "mobile.events.data.microsoft.com" in {event.dns_name for event in bare.dns}
    assert reports["onnxruntime-appliance"].ok, reports["onnxruntime-appliance"].describe()


@pytest.mark.slow
def test_an_ocr_ingest_contacts_nothing(tmp_path: Path, models_dir: Path) -> None:
    # A scanned card and a PDF with a scanned page: the OCR model comes from the store, nothing is fetched.
    docs = tmp_path / "scans"
    docs.mkdir()
    lines = ["2. Isolation", "Close valve VLV-3042-B and lock it."]
    (docs / "card.png").write_bytes(image_bytes(page_image(lines), "PNG"))
    mixed_pdf(docs / "manual.pdf", ["1. Scope", "Pump P-101."], page_image(lines))
    ingested, report = ocr_ingest_report(tmp_path / "run", docs, models_dir)
    assert report.ok, report.describe()
    # 3 pages: the card, the scanned page, and the PDF's first page (4 words in its text layer, fewer than
    # ingest.ocr_min_words: OCR reads it too, and the layer stays since OCR finds no more words).
    assert ingested["added"] == 2 and not ingested["failed"] and ingested["ocr"]["pages"] == 3


@pytest.mark.slow
def test_the_installed_appliance_contacts_nothing_but_loopback(
    installed_appliance: dict[str, Any], tmp_path: Path
) -> None:
    install = parse_log(installed_appliance["strace_log"])
    assert install.ok, install.describe()

    life = run_lifecycle(
        installed_appliance["prefix"],
        installed_appliance["home"],
        tmp_path / "life",
        install_log=installed_appliance["strace_log"],
    )
    report = life.report
    counts = report.counts()
    print("\nnetwork system calls by family and address:", dict(counts), dict(report.by_syscall()))
    assert report.ok, report.describe()
    # The guard really watched the server: its answers went out on loopback sockets.
    assert counts["AF_INET 127.0.0.1"] > 0 and report.by_syscall()["sendto"] > 0
    assert {event.family for event in report.events} <= {"AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_UNSPEC"}

    assert life.steps["ingest"]["added"] == 3 and not life.steps["ingest"]["failed"]
    assert life.search_hits > 0
    assert life.refusal["refused"] is True
    assert life.quoted["refused"] is False and life.quoted["answer_kind"] == "excerpt" and life.quoted["model"] is None
    assert any("Never reuse a gasket" in step["text"] for step in life.quoted["steps"])
    answer = life.answer
    assert answer["refused"] is False and answer["model"] == "qwen2.5-coder-1.5b-instruct"
    assert answer["generation"]["completion_tokens"] > 0 and answer["answer"].strip()
    assert (life.steps["reindex"]["updated"], life.steps["reindex"]["removed"]) == (1, 1)
    assert life.steps["status"]["consistent"] is True
    assert life.steps["serve_exit"] in (0, -15, 143)

    scanned, leaks = find_leaks(log_files(tmp_path / "life"), [], [answer["answer"]])
    assert scanned >= 2 and not leaks, leaks  # serve.log and the audit file at least
