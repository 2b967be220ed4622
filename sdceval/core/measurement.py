"""The result of a measure: a value, the per-record property vector and its direction."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Measurement:
    """Value of a measure on (dataset, release).

    Attributes
    ----------
    measure : str
    value : float
    per_record : ndarray or None
        The property vector (one value per original record) when the measure has one.
    larger_is_worse : bool
        True when a larger value means more risk or more loss (e.g. propensity), False
        when a larger value means less risk (e.g. linkage distance).
    details : dict
        Secondary figures (re-identification rate, number of populations, ...).
    """

    measure: str
    value: float
    per_record: np.ndarray | None = None
    larger_is_worse: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "value": float(self.value),
                "larger_is_worse": self.larger_is_worse,
                **{k: _plain(v) for k, v in self.details.items()}}


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v
