"""Prometheus metrics (prometheus_client): one set of counts for the server, however many workers serve it.

`appliance serve --workers N` hands its workers a private folder (PROMETHEUS_MULTIPROC_DIR, the home's
metrics/ folder, emptied at start): each worker's counters and histograms live in files there, a
scrape answered by any worker reads them all (prometheus_client's multiprocess mode), and the queue
depth is the sum over the live workers. A single process (`--workers 1`, the tests) counts in a
registry of its own app.

Labels are only route templates, status codes and stage names: never a question, a path of a
document or anything else a client chose, so the series count stays bounded.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

# prometheus_client reads it when it is imported: a worker must have it in its environment from the start.
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
MEDIA_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # the text format Prometheus has always read
# Seconds: from a cached /healthz to a long local generation on a CPU.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STAGES = ("retrieve", "rerank", "first_token", "total")


class Metrics:
    """Counters and histograms updated by the request middleware and the ask route; thread-safe."""

    def __init__(self) -> None:
        # This app's own registry, not prometheus_client's global one: a process that builds several
        # apps (the tests) counts each apart. In multiprocess mode the counts are the folder's files.
        self.folder = os.environ.get(MULTIPROCESS_ENV) or None
        self._registry = CollectorRegistry()
        self._requests = Counter(
            "appliance_requests",  # exposed as appliance_requests_total
            "HTTP requests served, by route and status.",
            ("endpoint", "status"),
            registry=self._registry,
        )
        self._durations = Histogram(
            "appliance_request_duration_seconds",
            "HTTP request duration, by route.",
            ("endpoint",),
            buckets=REQUEST_BUCKETS,
            registry=self._registry,
        )
        self._stages = Histogram(
            "appliance_stage_duration_seconds",
            "Duration of the stages of an answer (retrieve, rerank, first_token, total).",
            ("stage",),
            buckets=REQUEST_BUCKETS,
            registry=self._registry,
        )
        self._queue_depth = Gauge(
            "appliance_generator_queue_depth",
            "Generations running plus waiting for the model.",
            multiprocess_mode="livesum",  # each worker has its own model queue: the server's is their sum
            registry=self._registry,
        )
        self._depth_lock = threading.Lock()

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        self._requests.labels(endpoint, str(status)).inc()
        self._durations.labels(endpoint).observe(seconds)

    def observe_stages(self, timings_ms: dict[str, float]) -> None:
        """Record the stages of one answer (AnswerResult.timings_ms); absent stages are not observed."""
        for stage in STAGES:
            if stage in timings_ms:
                self._stages.labels(stage).observe(timings_ms[stage] / 1000.0)

    def refresh_queue_depth(self, depth: Callable[[], int]) -> None:
        """This process's queue depth, read now. Read and set under one lock: the last caller, who read
        the latest depth, is the one whose value stays."""
        with self._depth_lock:
            self._queue_depth.set(depth())

    def render(self, gauges: dict[str, tuple[str, float]]) -> bytes:
        """The exposition text; `gauges` maps a metric name to (help, current value), read at this scrape."""
        registry = CollectorRegistry()
        if self.folder is not None:
            MultiProcessCollector(registry, path=self.folder)
        else:
            registry.register(_WithoutCreated(self._registry))
        registry.register(_Current(gauges))
        return generate_latest(registry)


class _WithoutCreated(Collector):
    """A registry's metrics without the `_created` timestamps prometheus_client adds in one process
    (multiprocess mode has none): the same series either way."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for family in self._registry.collect():
            family.samples = [sample for sample in family.samples if not sample.name.endswith("_created")]
            yield family


class _Current(Collector):
    """Gauges read at the scrape by the worker answering it (the index is one for every worker)."""

    def __init__(self, gauges: dict[str, tuple[str, float]]) -> None:
        self._gauges = gauges

    def collect(self) -> Iterable[Metric]:
        for name, (help_text, value) in sorted(self._gauges.items()):
            yield GaugeMetricFamily(name, help_text, value=value)


def fresh_multiprocess_folder(folder: Path) -> Path:
    """Empty the workers' metrics folder before they start: files of an earlier run would add their counts."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700, parents=True)
    return folder


def forget_worker(folder: Path, pid: int) -> None:
    """A worker is gone: its share of the live gauges goes with it (its counts stay in the totals)."""
    mark_process_dead(pid, str(folder))
