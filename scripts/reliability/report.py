"""RELIABILITY.md from the results of scripts/reliability/run_all.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any


def _yes(value: Any) -> str:
    return "yes" if value else "**NO**"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", "\\n") for cell in row) + " |")
    return lines


PHASES = [
    "starting (before the lock)",
    "holding the lock, before a write",
    "mid-write (repair pending)",
    "after the last write",
    "finished",
]
SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "zero network": lambda r: (
        f"{r['network_calls']} network system calls observed in 5 processes, {len(r['violations'])} beyond "
        f"loopback, {len(r['dns'])} DNS"
    ),
    "crash": lambda r: (
        f"{r['reindex_kills']} reindex kills survived ({r['rounds']} rounds), {r['serve_kills']} serve kills, "
        f"torn audit tail reported: {_yes(r['torn_detected'])}"
    ),
    "concurrency": lambda r: (
        f"{r['requests']} requests from {r['clients']} clients, {r['server_errors']} 5xx besides "
        f"{r['busy_503']} documented 503, {r['victim_hits_after']} hits on a deleted document"
    ),
    "hostile inputs": lambda r: (
        f"{r['files']} files of {r['kinds']} kinds in one ingest, exit {r['returncode']}, peak RSS "
        f"{r['peak_rss_mb']} MB, good files {r['good']}"
    ),
    "security": lambda r: (
        f"{r['matrix_cells']} auth-matrix cells, {r['traversal_probes']} traversal probes, "
        f"{len(r['findings'])} findings; fuzz tests: {r['pytest']}"
    ),
    "disk full": lambda r: (
        f"{r['rounds']} rounds of ENOSPC (a tmpfs full before {r['full']}, filling during {r['filling']}; "
        f"{r['injected']} injected at a random write point) under ingest, upload, backup, restore and audit "
        f"records: {r['disk_full']} stopped with DiskFull, nothing lost, the next run completed; problems "
        f"{len(r['round_problems']) + len(r['problems'])}"
    ),
    "leaks": lambda r: (
        f"{r['files']} log/audit files scanned for {r['secrets']} token secrets and {r['answers']} answers: "
        f"{len(r['leaks'])} found"
    ),
}


def render(
    results: dict[str, dict[str, Any]],
    host: dict[str, str],
    started: dt.datetime,
    seconds: float,
    options: dict[str, Any],
) -> str:
    ok = all(result.get("ok") for result in results.values())
    out = [
        "# Reliability",
        "",
        "Written by `make reliability` (`scripts/reliability/run_all.py`); the same harnesses run a short round",
        "each in `make test` (tests/test_zero_network.py, test_crash_harness.py, test_concurrency.py,",
        "test_hostile_inputs.py, test_security_matrix.py, test_disk_full.py).",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}, {seconds / 60:.1f} minutes",
        f"- machine: {host['cpu']}, {host['cores']} cores, {host['memory']}, Linux {host['kernel']}, "
        f"Python {host['python']}, load average at start {host['load_at_start']} (shared with other work), "
        f"run as {host['user']}",
        f"- settings: {options['kills']} reindex kills, {options['serve_kills']} serve kills, "
        f"{options['clients']} clients for {options['load_seconds']:.0f} s, "
        f"{options.get('disk_full_rounds', 0)} disk-full rounds",
        f"- verdict: {'everything held' if ok else '**something did not hold: see below**'}",
        "",
    ]
    zn, crash, load = results.get("zero network", {}), results.get("crash", {}), results.get("concurrency", {})
    bad, sec, leaks = results.get("hostile inputs", {}), results.get("security", {}), results.get("leaks", {})
    summary: list[list[Any]] = []
    for name, result in results.items():
        figures = "did not complete" if "error" in result else SUMMARIES[name](result)
        summary.append([name, figures, _yes(result.get("ok"))])
    out += [*_table(["suite", "figures", "held"], summary), ""]

    for name, result in results.items():
        if "error" in result:
            out += [
                f"**{name} did not complete**: `{result['error']}`",
                "",
                "```",
                result["traceback"][-3000:],
                "```",
                "",
            ]

    if zn and "by_address" in zn:
        out += ["## Zero network", ""]
        out += [
            "Every process of the installed appliance ran under `strace -f --seccomp-bpf -yy -e trace=connect,sendto,"
            "sendmsg,sendmmsg,bind`: the install (network namespace cut off), `ingest`, `serve` (plain strace: the "
            f"client reached it on 127.0.0.1; {zn.get('http_requests')} requests), `reindex`, `status`. Allowed: "
            "loopback (127.0.0.0/8, ::1), AF_UNIX, AF_NETLINK; DNS (port 53, a resolver of /etc/resolv.conf, "
            "systemd-resolved) must be zero.",
            "",
        ]
        out += _table(["family and address", "system calls"], [[k, v] for k, v in zn["by_address"].items()])
        out += [
            "",
            "AF_INET 127.0.0.1 is the server's side of the HTTP requests; AF_UNIX /var/run/nscd/socket is glibc "
            "asking nscd (not running) for the user name, from `getpass.getuser()` in torch's import; AF_INET6 ::1 "
            "is a bind (not a contact) by the installer's pip: urllib3 checking whether IPv6 exists.",
        ]
        out += [
            "",
            f"By system call: {zn.get('by_syscall')}. Beyond loopback: {len(zn.get('violations', []))}. "
            f"DNS: {len(zn.get('dns', []))}.",
            "",
        ]
        out += [
            f"Real answer from `{zn.get('answer_model')}` ({zn.get('completion_tokens')} tokens): "
            f"“{zn.get('answer')}”; the off-topic question refused: {zn.get('refusal_refused')}.",
            "",
            "The guard catches what it should (each of these fails the check, named by its system call line):",
            "",
        ]
        out += _table(
            ["offender", "caught", "contacted", "names looked up"],
            [
                [name, _yes(caught), ", ".join(zn["offender_targets"][name]), ", ".join(zn["offender_names"][name])]
                for name, caught in zn.get("offenders_caught", {}).items()
            ],
        )
        out += [""]

    if crash and "phases" in crash:
        out += ["## Crash", ""]
        out += [
            f"`appliance reindex` was SIGKILLed {crash['reindex_kills']} times over {crash['rounds']} rounds of "
            f"changes ({crash['changes']}) to a generated corpus; a whole first ingest took "
            f"{crash['reference_seconds']} s. Rounds take turns: the kill comes at a random moment of the whole "
            "run, at a random moment while it holds the writer lock, or within 40 ms of its first write (the writes "
            "of a round last about 30 ms here). After every kill: FTS5 integrity, chunk rows = chunk "
            "counts, no chunk position or Chroma id twice, catalog ↔ Chroma consistent or the interrupted write "
            "flagged, every document found by a lexical and a hybrid search for its own tag, no hit outside the "
            "catalog.",
            "",
        ]
        order = {phase: n for n, phase in enumerate(PHASES)}
        phases = sorted(crash["phases"].items(), key=lambda item: order.get(item[0], len(order)))
        out += _table(["where the kill landed (judged from what it left)", "rounds"], [[k, v] for k, v in phases])
        out += [
            "",
            f"Problems after kills: {len(crash.get('round_problems', []))}; other problems: "
            f"{len(crash.get('problems', []))}. Final state equals a clean build of the same folder "
            f"(documents and chunk ids): {_yes(crash.get('equals_clean_build'))} "
            f"({crash.get('final_documents')} documents, {crash.get('final_chunks')} chunks).",
            "",
            f"`appliance serve` under 8 clients was SIGKILLed {crash['serve_kills']} times: "
            f"{crash['serve_requests_answered']} requests answered, {crash['serve_requests_cut']} cut off, "
            f"`appliance audit verify` clean after each kill, {crash['serve_unrecorded']} answered requests without "
            "a record (the record is written after the response is sent). A torn tail appended afterwards was "
            f"reported as `{crash.get('torn_problem')}` with every earlier record counted; the next start "
            f"continued the chain in a new file: {_yes(crash.get('chain_continues'))} "
            f"({crash.get('audit_records')} records).",
            "",
        ]
        for problem in crash.get("round_problems", []) + crash.get("problems", []):
            out.append(f"- {problem}")

    if load and "latency_ms" in load:
        out += ["## Concurrency", ""]
        out += [
            f"{load['clients']} clients for {load['load_seconds']} s (until every request sent had its answer) "
            f"against `appliance serve` ({load['settings']}), "
            "searching (a fifth of them for the tag of a document the admin then deletes), asking off-topic "
            "questions (refused before any model call) and questions the model answers, while an admin edited two "
            f"documents, deleted one and called POST /v1/reindex ({load['reindex']}).",
            "",
        ]
        rows = []
        for kind, figures in load["latency_ms"].items():
            rows.append([kind, figures["n"], figures["p50"], figures["p95"]])
        out += _table(["requests", "n", "p50 ms", "p95 ms"], rows)
        out += [
            "",
            f"Statuses: {load['statuses']}. 5xx other than 503: {load['server_errors']}; 503 (generation queue "
            f"full, documented, with Retry-After): {load['busy_503']}; transport errors: {len(load['errors'])}. "
            f"The deleted document was found {load['victim_found_before']} times before the reindex and "
            f"{load['victim_hits_after']} times after its removal had answered.",
            "",
            f"Generated answers, medians of the server's own timings: {load['generation_medians']}: on these two "
            "shared cores a generation holds the model for the prefill and decode, and the asks queued behind it "
            "(up to generator.queue_size) wait their turn, which is what the p50 of 'ask generated' measures.",
            "",
            f"A reindex by another process (what appliance-reindex.service does) reached the running server's "
            f"dense search: {_yes(load.get('cross_process_reindex_seen'))} (a known bug while this says NO: the "
            "server's Chroma client keeps its HNSW graph in memory).",
            "",
        ]

    if bad and "outcomes" in bad:
        out += ["## Hostile inputs", ""]
        out += [
            f"One `appliance ingest` over {bad['files']} files ({bad['kinds']} kinds) took {bad['ingest_seconds']} s, "
            f"exited {bad['returncode']}, peak RSS {bad['peak_rss_mb']} MB (wait4 of the ingest process). "
            f"Permissions: {bad['permission_case']}. The pipeline opened the named pipe (it would block forever "
            f"without the harness writing to it): {bad['fifo_opened']}.",
            "",
        ]
        out += _table(
            ["kind", "file", "outcome", "reason", "as expected"],
            [
                [kind, f"`{file!r}`", status, reason[:110], _yes(ok)]
                for kind, file, status, reason, ok in bad["outcomes"]
            ],
        )
        out += [""]

    if sec and "matrix_cells" in sec:
        out += ["## Security", ""]
        out += [
            f"Auth matrix against a real server: {sec['matrix_cells']} cells (no token, unknown, malformed, Basic, "
            "empty bearer, revoked (revoked through the CLI while the server ran), operator, admin × every /v1 route "
            f"and the open routes), failures: {len(sec['matrix_failures'])}. Path traversal: "
            f"{sec['traversal_probes']} probes (static files, docs assets, the path filter of search and ask). "
            f"Headers of {sec['responses_checked']} responses: no Server, X-Powered-By or version, a strict CSP. "
            f"Findings: {sec['findings'] or 'none'}. API fuzz and hypothesis tests: {sec['pytest']}.",
            "",
        ]
        for failure in sec["matrix_failures"]:
            out.append(f"- {failure}")
    out += disk_full_lines(results.get("disk full", {}))
    if leaks and "files" in leaks:
        out += [
            "## Secrets and answers in logs",
            "",
            f"{leaks['files']} log and audit files of all the runs above, scanned for {leaks['secrets']} token "
            f"secrets (and their random parts) and {leaks['answers']} generated answers: "
            f"{len(leaks['leaks'])} found.",
            "",
        ]
        out += [f"- {leak}" for leak in leaks["leaks"]]
    return "\n".join(out).rstrip() + "\n"


def disk_full_lines(full: dict[str, Any]) -> list[str]:
    if not full or "by_operation" not in full:
        return []
    out = ["## Disk full", ""]
    out += [
        "The home (catalog, vectors, audit log, uploads), the backups and a restore target on a "
        f"{full['file_system']}; {full['rounds']} rounds take turns over the operations. In {full['full']} a "
        "ballast file had filled the disk until a random number of bytes was left (none to what the operation took "
        f"last time); in {full['filling']}, with room for the operation and 3 MiB more, another writer filled it "
        "while the operation ran (in a random share of the time it took last time), so that it ran out at a random "
        f"point past the checks before a write; in {full['injected']} ENOSPC came from "
        "a random named write point on (APPLIANCE_FAULT_DISK_FULL_AT=*:n). "
        "The operation ran in the harness's process, as the server runs uploads and audit records. While the disk "
        "was still full: the error is DiskFull naming the path, the space needed and what is free; a reader "
        "opened before (the running server) finds every document the catalog holds by a lexical and a hybrid "
        "search for its tag; the audit log verifies; the upload folder and the catalog agree, with no temporary "
        "left; every backup folder has a manifest that verifies and no partial one is left; a failed restore "
        "left its target as it was. Then the space was freed: the index checked as a fresh reader finds it, and "
        "the same operation run again had to complete.",
        "",
    ]
    rows = [
        [op, *(row.get(key, 0) for key in ("full", "filling", "injected", "disk full", "completed"))]
        for op, row in full["by_operation"].items()
    ]
    header = ["operation", "full before", "filling during", "injected", "stopped with DiskFull", "completed"]
    out += _table(header, rows)
    out += ["", "Where the injected faults fired: " + ", ".join(f"{k} {v}" for k, v in full["points"].items()), ""]
    out += ["What an operator read (the last round of each on the tmpfs):", ""]
    out += [f"- {op}: `{message}`" for op, message in full.get("messages", {}).items()]
    out += [
        "",
        f"Problems: {len(full['round_problems']) + len(full['problems'])}. After the last round a reindex equals "
        f"a clean build of the same folders (documents and chunk ids): {_yes(full.get('equals_clean_build'))} "
        f"({full.get('final_documents')} documents, {full.get('final_chunks')} chunks).",
        "",
    ]
    out += [f"- {problem}" for problem in full["round_problems"] + full["problems"]]
    return out
