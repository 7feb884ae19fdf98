"""Prometheus metrics, hand-written in the text exposition format (prometheus_client is not a dependency).

Labels are only route templates, status codes and stage names: never a question, a path of a
document or anything else a client chose, so the series count stays bounded.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

# Seconds: from a cached /healthz to a long local generation on a CPU.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STAGES = ("retrieve", "rerank", "first_token", "total")


@dataclass
class _Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        for position, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[position] += 1
        self.total += value
        self.count += 1


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{name}="{_escape(value)}"' for name, value in pairs)
    return "{" + inner + "}" if inner else ""


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class Metrics:
    """Counters and histograms updated by the request middleware and the ask route; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str], int] = {}
        self._durations: dict[str, _Histogram] = {}
        self._stages: dict[str, _Histogram] = {}

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            key = (endpoint, str(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            self._durations.setdefault(endpoint, _Histogram(REQUEST_BUCKETS)).observe(seconds)

    def observe_stages(self, timings_ms: dict[str, float]) -> None:
        """Record the stages of one answer (AnswerResult.timings_ms); absent stages are not observed."""
        with self._lock:
            for stage in STAGES:
                if stage in timings_ms:
                    self._stages.setdefault(stage, _Histogram(REQUEST_BUCKETS)).observe(timings_ms[stage] / 1000.0)

    def render(self, gauges: dict[str, tuple[str, float]]) -> str:
        """The exposition text; `gauges` maps a metric name to (help, current value)."""
        lines: list[str] = []
        with self._lock:
            lines += [
                "# HELP appliance_requests_total HTTP requests served, by route and status.",
                "# TYPE appliance_requests_total counter",
            ]
            for (endpoint, status), count in sorted(self._requests.items()):
                lines.append(f"appliance_requests_total{_labels([('endpoint', endpoint), ('status', status)])} {count}")
            lines += _histogram_lines(
                "appliance_request_duration_seconds", "HTTP request duration, by route.", "endpoint", self._durations
            )
            lines += _histogram_lines(
                "appliance_stage_duration_seconds",
                "Duration of the stages of an answer (retrieve, rerank, first_token, total).",
                "stage",
                self._stages,
            )
        for name, (help_text, value) in sorted(gauges.items()):
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {_number(value)}"]
        return "\n".join(lines) + "\n"


def _histogram_lines(name: str, help_text: str, label: str, histograms: dict[str, _Histogram]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
    for key, histogram in sorted(histograms.items()):
        for bound, count in zip(histogram.buckets, histogram.counts, strict=True):
            lines.append(f"{name}_bucket{_labels([(label, key), ('le', _number(bound))])} {count}")
        lines.append(f"{name}_bucket{_labels([(label, key), ('le', '+Inf')])} {histogram.count}")
        lines.append(f"{name}_sum{_labels([(label, key)])} {_number(histogram.total)}")
        lines.append(f"{name}_count{_labels([(label, key)])} {histogram.count}")
    return lines
