"""The suppression limit, declared once (issue 18 item 4): its name ``max_suppression``
in every layer, its default, and its forms — a fraction of the records in [0, 1), or a
whole number of records >= 1 — as scikit-learn declares a parameter that accepts
several forms.  The rules that apply it are in `sdceval.lattice.suppression` (a
registry; `DEFAULT_RULE` names the default one).  This module imports nothing heavy, so
the command line builds its options from it.
"""
from __future__ import annotations

import math

from sdceval.core.errors import SdcevalError
from sdceval.core.params import Param, ParamType

#: Dewri et al. 2010 §6: η = 1 % of the records, and their rule
DEFAULT_MAX_SUPPRESSION = 0.01
DEFAULT_RULE = "dewri"


def limit_records(limit: float, n: int, parameter: str = "max_suppression") -> int:
    """The suppression limit as a whole number of records: ``⌊limit·n⌋`` for a fraction
    (< 1), ``limit`` itself for a count (≥ 1, a whole number)."""
    try:
        x = float(limit)
    except (TypeError, ValueError):
        raise SdcevalError(f"{parameter} must be a number, got {limit!r}") from None
    if not math.isfinite(x) or x < 0:
        raise SdcevalError(f"{parameter} must be >= 0 (a fraction of the records if < 1, "
                           f"else a record count), got {limit!r}")
    if x < 1:
        # floor with a guard for decimal fractions: 0.04 * 30162 = 1206.48 -> 1206
        return int(math.floor(x * n + 1e-9))
    if not x.is_integer():
        raise SdcevalError(
            f"{parameter}={limit!r} is >= 1, so it is a number of records and must be a "
            "whole number (fractions are < 1, e.g. 0.01 for 1 %)")
    return int(x)


class SuppressionLimit(ParamType):
    """The forms of a suppression limit (declared once): a fraction of the records in
    [0, 1), or a whole number of records >= 1.  Parsed to a float; `limit_records`
    turns it into records for a table of ``n``."""

    name = "fraction < 1 or record count"

    def parse(self, raw, where: str) -> float:
        if isinstance(raw, bool):
            raise SdcevalError(f"{where} must be a number (a fraction of the records if "
                               f"< 1, else a record count), got {raw!r}")
        limit_records(raw, 1, where)
        return float(raw)


MAX_SUPPRESSION = Param(
    "max_suppression", SuppressionLimit(), DEFAULT_MAX_SUPPRESSION,
    unit="fraction or records",
    description="suppression limit: a fraction of the records if < 1, else a record count")
