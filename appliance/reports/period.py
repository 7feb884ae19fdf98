"""A report's period: "7d", "24h", "2w", "90m", counted back from now."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from appliance.audit.format import iso_time
from appliance.errors import ApplianceError

_PERIOD_RE = re.compile(r"\s*(\d{1,5})\s*([mhdw])\s*", re.ASCII)
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_SINCE = "7d"


class PeriodError(ApplianceError):
    """A period that is not a number and a unit."""

    exit_code = 2


@dataclass(frozen=True)
class Period:
    text: str  # as given: "7d"
    start: str  # ISO time as audit records write it: records at or after it are in the period
    end: str

    def as_json(self) -> dict[str, str]:
        return {"since": self.text, "start": self.start, "end": self.end}


def parse_period(since: str, now: float | None = None) -> Period:
    """The period `since` names, ending now; raises PeriodError naming the field."""
    match = _PERIOD_RE.fullmatch(since or "")
    if match is None:
        raise PeriodError(f"since must be a number and a unit (m, h, d or w), like 7d or 24h; not {since!r:.40}")
    now = time.time() if now is None else now
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return Period(f"{match.group(1)}{match.group(2)}", iso_time(max(0.0, now - seconds)), iso_time(now))
