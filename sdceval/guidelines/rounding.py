"""Rounding readings of a guideline's risk threshold (issue 30 item 2): how a threshold
written as a probability (0.09) is read against a risk that can only take the values
``1 / k`` of a class size ``k``.

The trap.  A highest (maximum) re-identification risk is ``1 / min class size``; the
threshold 0.09 lies between ``1/12 = 0.0833`` and ``1/11 = 0.0909``.  Two published
readings disagree on a class of 11:

* ``arx``: ARX's `ParameterTranslation.getSizeThreshold` (reliability package, read at
  ARX's current sources): ``s = 1/t``, ``k = floor(s)``, plus 1 when
  ``1/k - 1/s >= 0.01 · t`` (ARX's relative precision of 1 %), then the effective
  threshold ``1/k``.  0.09 -> k = 12 (``1/11 - 0.09 = 0.000909 >= 0.0009``), 0.2 -> 5,
  0.05 -> 20, 0.33 -> 4 (``1/3 - 0.33 = 0.00333 >= 0.0033``), 0.5 -> 2.
  A class of 11 fails 0.09.
* ``cell-size``: El Emam's table of precedents (El Emam & Arbuckle, *Anonymizing Health
  Data*, O'Reilly 2013, ch. 2; El Emam, *Guide to the De-Identification of Personal
  Health Information*, CRC 2013, table of cell-size precedents) equates 0.33, 0.2, 0.09
  and 0.05 with minimum cell sizes 3, 5, 11 and 20: ``k = round(1/t)``, effective
  threshold ``1/k``.  A class of 11 passes 0.09.
* ``literal``: the threshold as written, ``value <= t``: for a risk that is not a
  ``1/k`` (sdcMicro's global risk, an average, a share of records).  For a highest
  risk it agrees with ``arx`` wherever ARX's 1 % tolerance does not round down.

Every reading returns the minimum class size it implies (None for ``literal``) and the
effective threshold the value is compared with.  `exceeds` is the one comparison of a
value with a bound (guideline verdicts and the comparison's risk constraints,
`sdceval.compare.constraints`): ``v > bound · (1 + 1e-9)``, the relative slack only
absorbing floating-point rounding in a mean of equal risks (``mean`` of 22 times
``1/11`` is not always ``1/11`` to the last bit), far below any class-size step.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param, Registry

#: relative slack of `exceeds` (floating-point rounding only)
RELATIVE_SLACK = 1e-9
#: ARX's ``ParameterTranslation.RELATIVE_THRESHOLD_PRECISION``
ARX_PRECISION = 0.01


@dataclass(frozen=True)
class RoundingReading:
    """A way of reading a risk threshold: ``size(t)`` -> the minimum class size it
    implies, or None when the value is compared with ``t`` as written."""

    name: str
    size: Callable[[float], int | None]
    description: str
    params: tuple[Param, ...] = ()

    def min_class_size(self, threshold: float) -> int | None:
        _check_threshold(threshold)
        return self.size(float(threshold))

    def effective(self, threshold: float) -> float:
        """The bound the value is compared with: ``1/k``, or the threshold itself."""
        k = self.min_class_size(threshold)
        return float(threshold) if k is None else (0.0 if k == math.inf else 1.0 / k)


ROUNDINGS = Registry("rounding reading")


def _check_threshold(t) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= float(t) <= 1:
        raise SdcevalError(f"guideline threshold must be a probability in [0, 1], got {t!r}")


def arx_size(t: float):
    """ARX's ``getSizeThreshold`` (module notes); ``t = 0`` -> no class size suffices."""
    if t == 0:
        return math.inf
    size = 1.0 / t
    k = math.floor(size)
    if (1.0 / k) - (1.0 / size) >= ARX_PRECISION * t:
        k += 1
    return int(k)


def cell_size(t: float):
    """El Emam's cell size of a threshold: ``round(1/t)`` (0.09 -> 11, 0.33 -> 3)."""
    if t == 0:
        return math.inf
    return max(1, int(math.floor(1.0 / t + 0.5)))


for _r in (
        RoundingReading("literal", lambda t: None,
                        "the value is compared with the threshold as written (value <= t)"),
        RoundingReading("arx", arx_size,
                        "ARX's ParameterTranslation: minimum class size floor(1/t), +1 "
                        "when 1/floor(1/t) - t >= 1 % of t (0.09 -> 12); bound 1/k"),
        RoundingReading("cell-size", cell_size,
                        "El Emam's cell-size precedents: minimum class size round(1/t) "
                        "(0.09 -> 11, 0.2 -> 5, 0.05 -> 20); bound 1/k")):
    ROUNDINGS.add(_r.name, _r)


def get_rounding(name: str) -> RoundingReading:
    return ROUNDINGS.get_spec(name)


def exceeds(value: float, bound: float) -> bool:
    """``value > bound`` beyond floating-point rounding (module notes)."""
    return value > bound + RELATIVE_SLACK * abs(bound)


__all__ = ["ROUNDINGS", "RoundingReading", "arx_size", "cell_size", "exceeds",
           "get_rounding"]
