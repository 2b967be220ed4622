"""Top and bottom coding of numeric attributes (Hundepool et al. 2012, §3.4.2 "Top and
bottom coding"; sdcMicro's ``topBotCoding(x, value, replacement, kind)``; issue 29
item 3).

Values of a ``numeric``-role attribute above a top threshold (``kind="top"``), below a
bottom threshold (``"bottom"``) or both (``"both"``) are replaced by a replacement
value; the others are published as they are.  The thresholds are given as values
(``value``: one number, or ``"low;high"`` for both ends, the same for every column
coded, so give it with one column in ``columns``, as sdcMicro's ``column``) or as a
quantile (``quantile = q``: the top threshold is the column's ``q``-quantile, the
bottom one its ``(1 - q)``-quantile, so one knob protects more as it decreases at
either end; 0.99 when neither is given).  ``value`` and ``quantile`` exclude each other.  Quantiles are
R's default (type 7, linear interpolation; numpy's ``"linear"``), each column's own.
As in sdcMicro, a value is coded when it is strictly beyond its threshold
(``x > top``, ``x < bottom``).

The replacement (sdcMicro makes the user give it; here ``replacement``):
``"threshold"`` (the default) publishes the threshold itself — the coded values are
known to lie beyond it, nothing more; ``"mean"`` publishes the mean of the values coded
at that end, which keeps the column's mean and total exactly but reveals the mean of
the tail (with one coded value, that value itself: no protection for it); a number
(``"100000"``, or ``"0;100000"`` for both ends) publishes that number.

``columns`` names the attributes to code (default: every numeric attribute; the others
are published unchanged).  A perturbative method: inside a whole-file strategy it is
the step of the numeric attributes (``top_bottom_coding+recode``), its ``quantile`` the
knob bisection tunes.  Missing values do not occur (a data set refuses or drops them).
"""
from __future__ import annotations

import math
import re

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param, ParamType, register_method
from sdceval.methods._numeric import numeric_release

__all__ = ["top_bottom_coding", "code_column", "Numbers", "DEFAULT_QUANTILE"]

#: the quantile used when neither ``value`` nor ``quantile`` is given
DEFAULT_QUANTILE = 0.99
KINDS = ("top", "bottom", "both")


class Numbers(ParamType):
    """One number, or two (``"low;high"``, ``,`` also separates; a list from Python),
    as a tuple of floats; words in ``words`` are kept as text."""

    name = "number or 'low;high'"

    def __init__(self, words: tuple = ()):
        self.words = tuple(words)
        if words:
            self.name = " or ".join(map(repr, words)) + " or a number or 'low;high'"

    def parse(self, raw, where: str):
        if raw is None:
            return None
        if isinstance(raw, str) and raw.strip() in self.words:
            return raw.strip()
        items = (re.split(r"[;,]", raw) if isinstance(raw, str)
                 else list(raw) if isinstance(raw, (list, tuple)) else [raw])
        try:
            if isinstance(raw, bool) or any(isinstance(v, bool) for v in items):
                raise ValueError
            out = tuple(float(v) for v in items if not (isinstance(v, str) and not v.strip()))
        except (TypeError, ValueError):
            out = ()
        if not 1 <= len(out) <= 2 or not all(math.isfinite(v) for v in out):
            also = f" or {' or '.join(map(repr, self.words))}" if self.words else ""
            raise SdcevalError(f"{where} must be a number or two numbers 'low;high' (for "
                               f"kind=both){also}, got {raw!r}")
        return out


QUANTILE = Param("quantile", float, None, low=0.5, high=1.0, protection="decreasing",
                 grid=(0.8, 0.9, 0.95, 0.99), unprotected=1.0, unit="quantile",
                 description="code values above the q-quantile (top) / below the "
                             "(1-q)-quantile (bottom) of each column; 0.99 when neither "
                             "quantile nor value is given")


def code_column(x: np.ndarray, kind: str, value=None, quantile: float | None = None,
                replacement="threshold") -> tuple[np.ndarray, dict]:
    """One column top/bottom coded (module notes): ``(coded copy, info)``, info giving
    per end the threshold, the replacement and the number of values coded."""
    x = np.asarray(x, dtype=np.float64)
    ends = ("bottom", "top") if kind == "both" else (kind,)
    if value is not None:
        if len(value) != len(ends):
            raise SdcevalError(
                f"top_bottom_coding: kind={kind} needs {len(ends)} value(s) "
                f"({'low;high' if kind == 'both' else 'one threshold'}), got "
                f"{';'.join(f'{v:g}' for v in value)}")
        thresholds = dict(zip(ends, value))
        if kind == "both" and thresholds["bottom"] > thresholds["top"]:
            raise SdcevalError(f"top_bottom_coding: value 'low;high' has low "
                               f"{thresholds['bottom']:g} above high {thresholds['top']:g}")
    else:
        q = DEFAULT_QUANTILE if quantile is None else quantile
        thresholds = {e: float(np.quantile(x, q if e == "top" else 1.0 - q)) for e in ends}
    if isinstance(replacement, tuple) and len(replacement) != len(ends):
        raise SdcevalError(f"top_bottom_coding: kind={kind} needs {len(ends)} replacement "
                           f"number(s), got {len(replacement)}")
    out = x.copy()
    info = {}
    for i, end in enumerate(ends):
        t = thresholds[end]
        mask = x > t if end == "top" else x < t
        if replacement == "threshold":
            r = t
        elif replacement == "mean":
            r = float(x[mask].mean()) if mask.any() else t
        else:
            r = float(replacement[i])
        out[mask] = r
        info[end] = {"threshold": t, "replacement": r, "coded": int(mask.sum())}
    return out, info


@register_method(
    "top_bottom_coding", family="perturbative", random=False, label="top/bottom coding",
    # it changes the tails only, so alone it rarely reaches a risk target: named
    # explicitly or composed (top_bottom_coding+recode), never a default candidate alone
    alone=False,
    params=[QUANTILE,
            Param("kind", str, "top", choices=KINDS,
                  description="code the top, the bottom or both ends of each column"),
            Param("value", Numbers(), None,
                  description="threshold(s) instead of a quantile: one number, or "
                              "'low;high' for kind=both (excludes quantile)"),
            Param("replacement", Numbers(("threshold", "mean")), "threshold",
                  description="what a coded value becomes: 'threshold' (default), 'mean' "
                              "(of the values coded at that end) or a number ('low;high' "
                              "for both ends)"),
            Param("columns", str, None,
                  description="numeric attributes to code ('income,savings'; default: "
                              "every numeric attribute)")],
    description="top/bottom coding of numeric attributes (sdcMicro's topBotCoding): "
                "values beyond a threshold or quantile replaced by the threshold, the "
                "tail's mean or a given value")
def top_bottom_coding(dataset, *, seed, quantile, kind, value, replacement, columns):
    """Top and bottom coding (module docstring).

    Returns
    -------
    Release
        ``kind="perturbative"``: the numeric attributes, coded ones replaced; ``info``:
        per column the threshold, replacement and count of each end coded.
    """
    if value is not None and quantile is not None:
        raise SdcevalError("top_bottom_coding: give value or quantile, not both (value: "
                           "fixed thresholds; quantile: thresholds from each column's "
                           "distribution)")
    numeric = list(dataset.schema.numeric)
    x = dataset.numeric_matrix(who="top_bottom_coding")
    names = [c for c in re.split(r"[,+\s]+", columns or "") if c]
    for c in names:
        if c not in numeric:
            raise SdcevalError(f"top_bottom_coding: columns names {c!r}, which is not a "
                               f"numeric attribute of {dataset.name!r}."
                               f"{suggest(c, numeric)} Numeric attributes: "
                               f"{', '.join(numeric)}")
    names = names or numeric
    out = np.array(x, dtype=np.float64, copy=True)
    info = {}
    for c in names:
        j = numeric.index(c)
        out[:, j], info[c] = code_column(x[:, j], kind, value, quantile, replacement)
    return numeric_release(dataset, out, info={"coded": info}, method="top_bottom_coding")
