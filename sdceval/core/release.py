"""What a method publishes, plus what it knows (SPEC §1).

A `Release` is row-aligned with the original: row ``i`` is the protected version of
record ``i``.  Besides the table it carries the structure measures need, so that no
measure re-derives what the method already knew: equivalence-class / bucket ids, the
generalized cell of every QI as a leaf-code range ``[lo, hi]`` (see `Hierarchy`), the
suppressed rows and the released sensitive codes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError

KINDS = ("perturbative", "generalized", "bucketized", "external")


@dataclass
class Release:
    """A protected version of a data set.

    Attributes
    ----------
    data : DataFrame
        The table as it would be published (numbers for perturbative methods, readable
        labels such as ``[40-49]`` or ``*`` for generalized QIs).
    method : str
    params : dict
        The resolved parameters the method ran with (including ``seed``).
    kind : {"perturbative", "generalized", "bucketized", "external"}
    classes : ndarray of int or None
        Equivalence class / bucket / microaggregation group of each record.
    cells : dict column -> (lo, hi) or None
        Generalized cell of each QI per record, as inclusive leaf-code ranges.
    suppressed : ndarray of bool or None
        Records published fully generalized (``*``).
    sensitive_codes : ndarray of int or None
        Released sensitive value codes (permuted within buckets for bucketization).
    info : dict
        Method diagnostics (warnings, iterations, ...).
    """

    data: pd.DataFrame
    method: str
    params: dict = field(default_factory=dict)
    kind: str = "perturbative"
    classes: np.ndarray | None = None
    cells: dict | None = None
    suppressed: np.ndarray | None = None
    sensitive_codes: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise SdcevalError(f"release kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def n(self) -> int:
        return len(self.data)

    def numeric_matrix(self, columns) -> np.ndarray:
        """The released values of ``columns`` as a float64 array, with clear errors."""
        missing = [c for c in columns if c not in self.data.columns]
        if missing:
            raise SdcevalError(f"release lacks column(s) {', '.join(map(repr, missing))} "
                               "present in the original data set")
        sub = self.data[list(columns)]
        bad = [c for c in columns if not pd.api.types.is_numeric_dtype(sub[c])]
        if bad:
            raise SdcevalError(f"release column(s) {', '.join(map(repr, bad))} are not numeric "
                               "(a generalized release cannot be used by a numeric measure)")
        x = sub.to_numpy(dtype=np.float64)
        if not np.isfinite(x).all():
            cols = [c for c, ok in zip(columns, np.isfinite(x).all(axis=0)) if not ok]
            raise SdcevalError(f"release has missing or infinite values in {cols}")
        return x

    def class_sizes(self) -> np.ndarray:
        """Size of each record's class (per record)."""
        if self.classes is None:
            raise SdcevalError(f"release of {self.method!r} has no equivalence classes")
        _, inv, counts = np.unique(self.classes, return_inverse=True, return_counts=True)
        return counts[inv]

    def summary(self) -> dict[str, Any]:
        out = {"method": self.method, "params": self.params, "kind": self.kind, "n": self.n}
        if self.classes is not None:
            out["classes"] = int(len(np.unique(self.classes)))
        if self.suppressed is not None:
            out["suppressed"] = int(self.suppressed.sum())
        return out


def external_release(dataset, frame: pd.DataFrame, name: str = "external") -> Release:
    """Wrap a table read from disk (e.g. ``sdceval evaluate --release masked.csv``)."""
    if len(frame) != dataset.n:
        raise SdcevalError(
            f"release has {len(frame)} records but data set {dataset.name!r} has {dataset.n}; "
            "a release must be row-aligned with the original (one row per original record)")
    return Release(data=frame.reset_index(drop=True), method=name, kind="external")
