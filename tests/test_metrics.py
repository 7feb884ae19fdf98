"""/metrics counts for the whole server: with `appliance serve --workers N` every worker counts into one
folder (prometheus_client's multiprocess mode), and a scrape answered by any worker sums them all; the
metric names and labels are the ones the hand-written exposition had.

prometheus_client picks its mode when it is imported, so each "worker" here is a process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from appliance.server.metrics import MULTIPROCESS_ENV, Metrics, forget_worker, fresh_multiprocess_folder
from tests.conftest import REPO

WORKER = """
import os, sys
from appliance.server.metrics import Metrics
metrics = Metrics()
for _ in range(int(sys.argv[1])):
    metrics.observe_request("/v1/search", 200, 0.02)
metrics.observe_stages({"retrieve": 12.0, "total": 80.0})
metrics.refresh_queue_depth(lambda: int(sys.argv[2]))
print(os.getpid())
"""
SCRAPE = """
from appliance.server.metrics import Metrics
print(Metrics().render({"appliance_index_documents": ("Documents indexed.", 3.0)}).decode())
"""


def run(code: str, folder: Path, *args: str) -> str:
    env = {**os.environ, MULTIPROCESS_ENV: str(folder), "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_the_counts_of_two_workers_add_up_in_any_workers_scrape(tmp_path: Path) -> None:
    folder = fresh_multiprocess_folder(tmp_path / "metrics")
    run(WORKER, folder, "3", "2")
    run(WORKER, folder, "4", "1")
    scraped = samples(run(SCRAPE, folder))
    assert scraped['appliance_requests_total{endpoint="/v1/search",status="200"}'] == 7
    assert scraped['appliance_request_duration_seconds_count{endpoint="/v1/search"}'] == 7
    assert scraped['appliance_request_duration_seconds_bucket{endpoint="/v1/search",le="0.025"}'] == 7
    assert scraped['appliance_stage_duration_seconds_count{stage="retrieve"}'] == 2
    assert scraped['appliance_stage_duration_seconds_sum{stage="total"}'] == 0.16
    assert scraped["appliance_generator_queue_depth"] == 3  # 2 + 1: each worker has its own queue
    assert scraped["appliance_index_documents"] == 3  # read at the scrape, not summed


def test_a_gone_worker_leaves_the_queue_depth_but_not_the_counts(tmp_path: Path) -> None:
    folder = fresh_multiprocess_folder(tmp_path / "metrics")
    gone = int(run(WORKER, folder, "3", "2"))
    run(WORKER, folder, "4", "1")
    forget_worker(folder, gone)
    scraped = samples(run(SCRAPE, folder))
    assert scraped["appliance_generator_queue_depth"] == 1
    assert scraped['appliance_requests_total{endpoint="/v1/search",status="200"}'] == 7


def test_a_fresh_folder_forgets_an_earlier_run(tmp_path: Path) -> None:
    folder = fresh_multiprocess_folder(tmp_path / "metrics")
    run(WORKER, folder, "5", "0")
    fresh_multiprocess_folder(folder)
    assert 'endpoint="/v1/search"' not in run(SCRAPE, folder)
    assert (folder.stat().st_mode & 0o777) == 0o700  # the workers' files are no one else's


def test_one_process_counts_in_its_own_app_with_the_same_names() -> None:
    first, second = Metrics(), Metrics()  # two apps of one process (as the tests build them)
    first.observe_request("/v1/ask", 200, 1.5)
    first.observe_request("other", 404, 0.001)
    first.refresh_queue_depth(lambda: 2)
    text = first.render({"appliance_index_chunks": ("Chunks in the catalog.", 9.0)}).decode()
    scraped = samples(text)
    assert scraped['appliance_requests_total{endpoint="/v1/ask",status="200"}'] == 1
    assert scraped['appliance_requests_total{endpoint="other",status="404"}'] == 1
    assert scraped['appliance_request_duration_seconds_bucket{endpoint="/v1/ask",le="+Inf"}'] == 1
    assert scraped["appliance_generator_queue_depth"] == 2 and scraped["appliance_index_chunks"] == 9
    assert "# TYPE appliance_requests_total counter" in text
    assert "# TYPE appliance_stage_duration_seconds histogram" in text
    assert "_created" not in text  # no series the hand-written exposition did not have
    assert 'endpoint="/v1/ask"' not in second.render({}).decode()
