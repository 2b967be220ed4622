"""The result of a measure: a value, the per-record property vector and its direction."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdceval.core.errors import plain

#: how to read a value (one vocabulary, see `sdceval.core.registry`): a lower value
#: means less risk / less loss, or a higher value does
DIRECTIONS = ("lower_is_better", "higher_is_better")


@dataclass
class Measurement:
    """Value of a measure on (dataset, release).

    Attributes
    ----------
    measure : str
    value : float
    per_record : ndarray or None
        The property vector (one value per original record) when the measure has one.
    direction : {"lower_is_better", "higher_is_better"}
        ``lower_is_better`` when a lower value means less risk or less loss (e.g.
        propensity), ``higher_is_better`` when a higher value does (e.g. the linkage
        distance, the achieved k).  The registry sets it from the measure's declaration.
    details : dict
        Secondary figures (re-identification rate, number of populations, ...).
    """

    measure: str
    value: float
    per_record: np.ndarray | None = None
    direction: str = "lower_is_better"
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"Measurement direction must be one of {', '.join(DIRECTIONS)}, "
                             f"got {self.direction!r}")

    @property
    def larger_is_worse(self) -> bool:
        """Alias of ``direction == "lower_is_better"`` (kept for existing callers)."""
        return self.direction == "lower_is_better"

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "value": float(self.value),
                "direction": self.direction,
                **{k: plain(v) for k, v in self.details.items()}}
