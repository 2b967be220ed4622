"""Exact power-of-two rescaling of numeric columns, so that scale-invariant methods and
measures (MDAV, noise, IL1s, propensity, EMD, ...) work on any finite data (SPEC §3-§4).

A column whose values are near 1e300 overflows as soon as it is squared (variance,
Euclidean distance), and one near 1e-300 underflows to 0: a z-score then divides by
``inf`` or ``0`` and the result is silently wrong.  Dividing each column first by a power
of two ``2**e`` chosen so that its largest magnitude lies in ``[0.5, 1)`` avoids both, and
it is *exact*: multiplying by a power of two only changes the binary exponent, so every
later rounding (sums, squares, square roots, quotients) happens on the same significands
as without the rescaling.  On ordinary data the results are therefore bit-identical to the
unscaled computation; values below ``2**-1022`` times a column's largest magnitude (far
below its rounding error) lose digits.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sdceval.core.errors import SdcevalError

__all__ = ["column_exponents", "to_unit", "from_unit", "check_finite"]


def column_exponents(x: np.ndarray) -> np.ndarray:
    """Per column, the integer ``e`` with ``max |x_j| / 2**e`` in ``[0.5, 1)`` (0 for an
    all-zero column).  ``x`` must be finite, shape (n, m) with n >= 1."""
    _, e = np.frexp(np.max(np.abs(x), axis=0))
    return e


def to_unit(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``x / 2**e`` column-wise (exact; may overflow only for columns of another array
    much larger than the one ``e`` was computed from: check with `check_finite`)."""
    return np.ldexp(x, -e)


def from_unit(u: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``u * 2**e`` column-wise, the inverse of `to_unit` (exact unless it overflows, to
    ``inf`` without a warning: callers check the result with `check_finite`)."""
    with np.errstate(over="ignore"):
        return np.ldexp(u, e)


def check_finite(a: np.ndarray, columns: Sequence, who: str, what: str) -> np.ndarray:
    """Return ``a`` if it is finite, else raise `SdcevalError` naming ``who`` and the
    offending columns of ``a`` (shape (n, len(columns))); ``what`` says which values
    left the floating-point range and how to fix it."""
    bad = ~np.isfinite(a).all(axis=0)
    if bad.any():
        names = ", ".join(repr(str(c)) for c, b in zip(columns, bad) if b)
        raise SdcevalError(f"{who}: {what} in column(s) {names} exceed the floating-point "
                           f"range (about 1.8e308); rescale those columns (e.g. express "
                           f"them in larger units) and try again")
    return a
