"""Calibrations belong to their model: a threshold fitted on one embedder's cosines means nothing on another's.

Two decisions use numbers fitted on all-MiniLM-L6-v2 cosines: the evidence decision (its logistic
model weighs the top dense similarity, and its threshold was tuned with it) and the support check's
semantic threshold. Each names, in its settings, the embedder it was fitted for (`evidence.calibrated_for`,
`support.calibrated_for`). With another embedder configured (the `gpu` bundle profile ships
bge-base-en-v1.5, whose cosines sit on another scale) neither number is used: the evidence decision
falls back to a logistic model without the dense similarity (`evidence.scale_free_*`, fitted on the same
questions), the support check to its lexical rules alone (a reworded sentence is then unsupported, the
safer error). `appliance status`, `/readyz` and the log say so, until the decisions are calibrated for
the new embedder (scripts/calibrate_evidence.py) and the settings name it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from appliance.config import Settings

log = logging.getLogger("appliance.calibration")
logged_warnings: set[str] = set()  # what this process has logged already


@dataclass(frozen=True)
class Calibration:
    name: str  # what is calibrated
    setting: str  # the setting naming the embedder it was fitted for
    fitted_for: str
    embedder: str  # the configured embedder
    fallback: str  # what decides instead when the two differ

    @property
    def applies(self) -> bool:
        return self.fitted_for == self.embedder

    @property
    def warning(self) -> str | None:
        if self.applies:
            return None
        return (
            f"the {self.name} was calibrated for embedder '{self.fitted_for}' ({self.setting}), not for the "
            f"configured '{self.embedder}': {self.fallback} decides instead"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "setting": self.setting,
            "fitted_for": self.fitted_for,
            "embedder": self.embedder,
            "applies": self.applies,
            "fallback": None if self.applies else self.fallback,
        }


def calibrations(settings: Settings) -> list[Calibration]:
    embedder = settings.embedder.model
    return [
        Calibration(
            "evidence decision",
            "evidence.calibrated_for",
            settings.evidence.calibrated_for,
            embedder,
            "the scale-free evidence model (evidence.scale_free_coefficients, no dense similarity)",
        ),
        Calibration(
            "support check's semantic threshold",
            "support.calibrated_for",
            settings.support.calibrated_for,
            embedder,
            "the lexical support rules alone (a reworded sentence is unsupported)",
        ),
    ]


def calibration_warnings(settings: Settings) -> list[str]:
    return [c.warning for c in calibrations(settings) if c.warning is not None]


def evidence_calibrated(settings: Settings) -> bool:
    return settings.evidence.calibrated_for == settings.embedder.model


def support_calibrated(settings: Settings) -> bool:
    return settings.support.calibrated_for == settings.embedder.model


def log_calibration_warnings(settings: Settings) -> None:
    """Log each mismatch once per process (every searcher of a process would repeat it)."""
    for warning in calibration_warnings(settings):
        if warning not in logged_warnings:
            logged_warnings.add(warning)
            log.warning("%s", warning)
