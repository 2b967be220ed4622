"""The result of a measure: a value, the per-record property vector and its direction."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdceval.core.errors import plain

#: how to read a value (one vocabulary, see `sdceval.core.registry`): a lower value
#: means less risk / less loss, or a higher value does
DIRECTIONS = ("lower_is_better", "higher_is_better")


def _over_kept(f):
    """``f`` over the records a release keeps (every record when it keeps none): the
    value of a check leaves out the class of suppressed records."""
    def agg(values, suppressed=None):
        if suppressed is not None and suppressed.any() and not suppressed.all():
            values = values[~suppressed]
        return f(values)
    return agg


#: how a measure's value follows from its per-record values (`MeasureSpec.aggregate`):
#: ``name -> f(per_record, suppressed) -> value`` (``mean_log1p``: the mean of
#: ``log(1 + v)``; ``log1p_mean``: ``log(1 + mean v)``).  NaN marks a record not
#: measured (a sample of records), left out; ``*_kept`` leave out suppressed records
#: (``release.suppressed``) unless every record is suppressed.  The contract suite
#: checks every measure's value against its declared aggregate (tests/contracts.py).
AGGREGATES = {
    "mean": lambda v, suppressed=None: float(np.nanmean(v)),
    "sum": lambda v, suppressed=None: float(np.nansum(v)),
    "max": lambda v, suppressed=None: float(np.nanmax(v)),
    "min": lambda v, suppressed=None: float(np.nanmin(v)),
    "mean_log1p": lambda v, suppressed=None: float(np.nanmean(np.log1p(v))),
    "log1p_mean": lambda v, suppressed=None: float(np.log1p(np.nanmean(v))),
    "max_kept": _over_kept(lambda v: float(np.nanmax(v))),
    "min_kept": _over_kept(lambda v: float(np.nanmin(v))),
}


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
