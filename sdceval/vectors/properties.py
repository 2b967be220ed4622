"""Property vectors of a release: one value per original record (Dewri et al. 2009 §3).

A *property vector* ``D = (d_1, …, d_N)`` holds a measure of one property for every
tuple of the data set (D09 Def. 1; D10 Def. 1).  Scalar privacy models summarize it by
one number (k = min of the class sizes); keeping the whole vector shows who bears the
risk ("anonymization bias", D09 §2): two 5-anonymous releases can leave very different
numbers of records in classes of 5.

`property_vectors(dataset, release)` returns the vectors of a release as a DataFrame,
one column per property, row-aligned with the data (same index).  The properties:

=====================  ========  ==============================================================
name                   better    per record ``i`` (``E(i)`` its equivalence class / bucket / group)
=====================  ========  ==============================================================
``class_size``         higher    ``k_i = |E(i)|`` (D09 §3; D10 §7 𝒫_1)
``sensitive_count``    higher    ``c_i = |{j ∈ E(i) : S_j = S_i}|``, ``S`` the record's *true*
                                 sensitive value (D09 §3, the italic values; D10 §7 𝒫_2)
``glm``                lower     Iyengar's loss summed over the QIs, ``Σ_q loss_q(cell_i)``, in
                                 ``[0, d]`` (`sdceval.core.hierarchy.cell_loss`; D09 §3's
                                 "loss measurement ... for every tuple"; DEWRI A14–A15)
``p_loss``             lower     ``JS(Q, P(E(i)))`` (Li & Li 2009 §4.1; the ``p_loss`` measure)
``linkage_distance``   higher    the rank distance of record ``i`` to its released version
                                 (the ``linkage_risk`` measure's per-record vector)
any measure name       its own   the per-record vector of that registered measure (e.g. ``cm``,
                                 the 0/1 penalty; ``propensity``; ``il1s``)
=====================  ========  ==============================================================

Direction comes from the property (``higher_is_better``), so the indices of
`sdceval.vectors.indices` compare a loss the right way round without the user negating
it; ``directions={"sensitive_count": "lower_is_better"}`` flips one (DEWRI A13: the
adversary's confidence ``c_i/k_i`` grows with ``c_i``, so "higher is better" for the
sensitive count is the papers' convention, not a law).  Each property also has a
*reference* (worst) point for the hypervolume index: 0 for the privacy properties,
``d`` (the number of QIs) for ``glm``, ``ln 2`` for ``p_loss`` (DEWRI A4).

Which releases have which property: the class properties need equivalence classes
(generalized releases, Mondrian, bucketization and Anatomy buckets, MDAV groups);
``glm`` needs generalized cells (generalized and bucketized releases; a bucketized
release's cells are exact, so its loss is 0); ``p_loss`` and ``sensitive_count`` a
sensitive attribute; ``linkage_distance`` a perturbative release (numbers).  Asking for
a property a release does not have raises an error that lists the kinds that have it.

Suppressed records (DEWRI A17; ``suppressed=``):

* ``"exclude"`` (default; Dewri et al. 2010's reading): a suppressed record has no
  value (NaN); the indices use the records kept in every release compared.  The kept
  records' classes are unchanged, so ``min`` of ``class_size`` is the release's ``k``
  (Dewri's ``j + 1``) and its sum Dewri's ``S_k``.
* ``"own_class"``: the suppressed records, published as identical ``*`` rows, form one
  class of their own (D09 §3: they "still exist ... in an overly generalized form").
* ``"value"``: a suppressed record takes the value it would have in the fully
  generalized table (one class of all ``N`` records): class size ``N``, sensitive count
  the table's count of its value, ``p_loss`` 0, ``glm`` ``d`` — or the value given in
  ``suppressed_values={property: value}``.

References
----------
Dewri, Ray, Ray, Whitley (2009). On the comparison of microdata disclosure control
algorithms. EDBT, §2–3.
Dewri, Ray, Ray, Whitley (2010). On the identification of property based
generalizations in microdata anonymization. DBSec, §4, §7.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from sdceval.catalog import MEASURES, get_measure
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.measurement import DIRECTIONS
from sdceval.core.release import Release
from sdceval.core.registry import Registry
from sdceval.measures.information_loss import glm_per_record

SUPPRESSED_MODES = ("exclude", "own_class", "value")

#: release kinds that carry equivalence classes (perturbative: only MDAV-like groups)
_CLASS_KINDS = ("generalized", "bucketized", "perturbative")


class _View:
    """What the properties of one release share, computed once: class index, sizes,
    the suppressed rows, the true sensitive codes."""

    def __init__(self, dataset, release: Release, mode: str):
        self.dataset, self.release, self.mode = dataset, release, mode
        self.n = dataset.n
        supp = release.suppressed
        self.suppressed = (np.zeros(self.n, dtype=bool) if supp is None
                           else np.asarray(supp, dtype=bool))

    @cached_property
    def classes(self) -> tuple[np.ndarray, int]:
        """Per record its class ``0..C-1`` and ``C``; under ``own_class`` every
        suppressed record is in one class of its own."""
        inv, c = self.release.class_index()
        if self.mode == "own_class" and self.suppressed.any():
            inv = np.where(self.suppressed, c, inv)
            _, inv = np.unique(inv, return_inverse=True)
            inv = inv.ravel().astype(np.int64)
            c = int(inv.max()) + 1
        return inv, c

    @cached_property
    def sensitive(self) -> tuple[np.ndarray, int]:
        col = self.dataset.schema.sensitive
        return (np.asarray(self.dataset.codes(col), dtype=np.int64),
                self.dataset.hierarchy(col).n_leaves)

    def measure(self, name: str) -> np.ndarray:
        spec = get_measure(name)
        # a property vector needs every record's value, never the sample that the
        # nearest-neighbour measures link large tables on
        params = {"sample": 0} if any(p.name == "sample" for p in spec.params) else {}
        m = spec.evaluate(self.dataset, self.release, params)
        if m.per_record is None:
            raise SdcevalError(f"property {name!r}: measure {name!r} has no per-record "
                               f"vector on a {self.release.kind} release; properties: "
                               f"{', '.join(property_names())}")
        return np.asarray(m.per_record, dtype=np.float64)


@dataclass(frozen=True)
class Property:
    """One per-record property (module docstring table).

    ``compute(view) -> (N,)`` gives every record's value with the suppressed records as
    the release has them; ``top(view) -> (N,)`` the value a record has in the fully
    generalized table (for ``suppressed="value"``); ``reference(dataset)`` the worst
    point of the hypervolume index.
    """

    name: str
    higher_is_better: bool
    description: str
    needs: tuple
    kinds: tuple
    compute: Callable
    top: Callable
    reference: Callable
    #: properties take no parameters (the typed-parameter slot of every registry entry)
    params: tuple = ()

    def undefined_for(self, dataset, release: Release) -> str | None:
        """Why the property is undefined for ``release`` (None if it is defined)."""
        who = f"release of {release.method!r}" if release.method else "release"
        if release.kind not in self.kinds:
            return (f"property {self.name!r} is not defined for a {release.kind} release "
                    f"({who}); it is defined for {', '.join(self.kinds)} releases"
                    + (" with equivalence classes" if "classes" in self.needs else ""))
        if "classes" in self.needs and release.classes is None:
            return (f"property {self.name!r} needs equivalence classes, and the {who} has "
                    "none; it is defined for generalized releases, Mondrian, bucketization "
                    "and Anatomy buckets and MDAV groups (a perturbative release read back "
                    "from a file has no groups)")
        if "cells" in self.needs and release.cells is None:
            return (f"property {self.name!r} needs generalized cells, and the {who} has "
                    "none; it is defined for generalized and bucketized releases")
        if "sensitive" in self.needs and dataset.schema.sensitive is None:
            return (f"property {self.name!r} needs a sensitive attribute; data set "
                    f"{dataset.name!r} has none (give one column role 'sensitive', e.g. "
                    "--sensitive COLUMN)")
        if "numeric" in self.needs and not dataset.schema.numeric:
            return (f"property {self.name!r} needs numeric attributes; data set "
                    f"{dataset.name!r} has none (--numeric COLUMNS)")
        return None


#: the per-record properties by name (`register_property`; ``sdceval list properties``)
PROPERTIES: Registry = Registry("property vector", "property vectors")


def register_property(name, higher_is_better, description, needs, kinds, top, reference):
    """Decorator: register ``fn(view) -> (N,)`` as property ``name`` (`Property` says
    what each argument means); a name registered twice is refused."""
    def deco(fn):
        PROPERTIES.add(name, Property(name, higher_is_better, description, tuple(needs),
                                      tuple(kinds), fn, top, reference))
        return fn
    return deco


_register = register_property


def _zero(dataset) -> float:
    return 0.0


@_register("class_size", True, "size of the record's equivalence class (D09 §3)",
           needs=("classes",), kinds=_CLASS_KINDS,
           top=lambda v: np.full(v.n, float(v.n)), reference=_zero)
def _class_size(v: _View) -> np.ndarray:
    inv, c = v.classes
    return np.bincount(inv, minlength=c)[inv].astype(np.float64)


def _own_value_counts(group: np.ndarray, n_groups: int, codes: np.ndarray, m: int
                      ) -> np.ndarray:
    """Per record, how many records of its group share its code."""
    key = group * m + codes
    if n_groups * m <= 4 * len(key) + 1024:
        return np.bincount(key, minlength=n_groups * m)[key].astype(np.float64)
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    return counts[inv.ravel()].astype(np.float64)


@_register("sensitive_count", True,
           "records of the record's class sharing its true sensitive value (D09 §3)",
           needs=("classes", "sensitive"), kinds=_CLASS_KINDS,
           top=lambda v: _own_value_counts(np.zeros(v.n, dtype=np.int64), 1,
                                           *v.sensitive),
           reference=_zero)
def _sensitive_count(v: _View) -> np.ndarray:
    inv, c = v.classes
    return _own_value_counts(inv, c, *v.sensitive)


def _n_qis(dataset) -> float:
    return float(len(dataset.schema.qis))


@_register("glm", False, "Iyengar's loss summed over the QIs, in [0, d] (D09 §3, DEWRI A15)",
           needs=("cells",), kinds=("generalized", "bucketized"),
           top=lambda v: np.full(v.n, _n_qis(v.dataset)), reference=_n_qis)
def _glm(v: _View) -> np.ndarray:
    return np.asarray(glm_per_record(v.dataset, v.release.cells, v.suppressed,
                                     normalized=False), dtype=np.float64)


@_register("p_loss", False, "JS divergence of the record's class sensitive distribution "
           "from the table's (Li & Li 2009 §4.1)",
           needs=("classes", "sensitive"), kinds=("generalized", "bucketized"),
           top=lambda v: np.zeros(v.n), reference=lambda dataset: math.log(2.0))
def _p_loss(v: _View) -> np.ndarray:
    return v.measure("p_loss")


@_register("linkage_distance", True, "rank distance of the record to its released "
           "version (the linkage_risk measure's per-record vector)",
           needs=("numeric",), kinds=("perturbative", "external"),
           top=lambda v: np.full(v.n, np.nan), reference=_zero)
def _linkage(v: _View) -> np.ndarray:
    return v.measure("linkage_risk")


def property_names() -> list[str]:
    """The built-in properties (any registered measure with a per-record vector is
    also accepted by name)."""
    return list(PROPERTIES)


def _measure_property(name: str) -> Property:
    spec = MEASURES.get(name)
    if spec is None:
        raise SdcevalError(f"unknown property {name!r}{suggest(name, [*PROPERTIES, *MEASURES])}"
                           f"; properties: {', '.join(PROPERTIES)}, or any measure with a "
                           "per-record vector (sdceval list measures)")
    return Property(name, spec.direction == "higher_is_better", spec.description,
                    tuple(n for n in spec.needs if n in ("classes", "cells", "sensitive",
                                                          "numeric")),
                    spec.kinds, lambda v: v.measure(name), lambda v: np.full(v.n, np.nan),
                    _zero if spec.direction == "higher_is_better" else (lambda d: None))


def get_property(name: str) -> Property:
    """The property ``name``: a built-in one, or a registered measure's per-record
    vector (its direction from the measure's registration)."""
    if not isinstance(name, str):
        raise SdcevalError(f"a property is named by a string, got {name!r}")
    return PROPERTIES[name] if name in PROPERTIES else _measure_property(name)


def defined_properties(dataset, release: Release) -> list[str]:
    """The built-in properties defined for ``release``."""
    return [p.name for p in PROPERTIES.values() if p.undefined_for(dataset, release) is None]


def common_properties(pairs) -> list[str]:
    """The built-in properties defined for every ``(dataset, release)`` pair, in the
    registry's order; `SdcevalError` when there is none."""
    common = None
    for dataset, release in pairs:
        d = defined_properties(dataset, release)
        common = d if common is None else [p for p in common if p in d]
    if not common:
        raise SdcevalError("no property is defined for every release compared; name the "
                           "properties (e.g. properties=['class_size'])")
    return common


def _direction(name: str, prop: Property, directions: Mapping | None) -> bool:
    if directions and name in directions:
        d = directions[name]
        if isinstance(d, bool):
            return d
        if d not in DIRECTIONS:
            raise SdcevalError(f"directions[{name!r}] must be one of "
                               f"{', '.join(DIRECTIONS)} (or a bool higher_is_better), got "
                               f"{d!r}")
        return d == "higher_is_better"
    return prop.higher_is_better


def property_vectors(dataset, release: Release, properties: Sequence[str] | None = None,
                     *, suppressed: str = "exclude",
                     suppressed_values: Mapping[str, float] | None = None,
                     directions: Mapping | None = None, label: str | None = None
                     ) -> pd.DataFrame:
    """The property vectors of ``release``: one column per property, one row per record.

    Parameters
    ----------
    dataset : Dataset
        The original data the release protects (row ``i`` of the release is record
        ``i``).
    release : Release
    properties : sequence of str, optional
        Property names (module docstring); default every built-in property defined for
        this release.
    suppressed : {"exclude", "own_class", "value"}
        How suppressed records are treated (module docstring, DEWRI A17).
    suppressed_values : mapping, optional
        With ``suppressed="value"``: the value of a suppressed record per property
        (default: its value in the fully generalized table).
    directions : mapping, optional
        Override a property's direction: ``{"sensitive_count": "lower_is_better"}``.
    label : str, optional
        Name of the release in comparisons (default its method).

    Returns
    -------
    DataFrame
        Index: the data set's; columns: the properties; NaN for excluded records.
        ``attrs``: ``higher_is_better`` and ``reference`` per property, ``suppressed``
        (the mode), ``excluded`` (records without values), ``data``, ``n``, ``release``.
    """
    if not isinstance(release, Release):
        raise SdcevalError(f"property_vectors takes a Release, got {type(release).__name__}")
    if suppressed not in SUPPRESSED_MODES:
        raise SdcevalError(f"suppressed must be one of {', '.join(SUPPRESSED_MODES)}, got "
                           f"{suppressed!r}")
    release.check(dataset, who="property_vectors")
    names = (defined_properties(dataset, release) if properties is None
             else [properties] if isinstance(properties, str) else list(properties))
    if not names:
        raise SdcevalError(f"no property is defined for this {release.kind} release; "
                           f"properties: {', '.join(PROPERTIES)}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SdcevalError(f"property {dup[0]!r} is listed twice")
    props = [get_property(n) for n in names]
    for p in props:
        why = p.undefined_for(dataset, release)
        if why:
            raise SdcevalError(why)
    extra = sorted(set(suppressed_values or {}) - set(names))
    if extra:
        raise SdcevalError(f"suppressed_values names {extra[0]!r}, which is not among the "
                           f"properties asked for ({', '.join(names)})")
    if suppressed_values and suppressed != "value":
        raise SdcevalError("suppressed_values is used with suppressed='value' only")
    view = _View(dataset, release, suppressed)
    supp = view.suppressed
    cols, hib, ref = {}, {}, {}
    for p in props:
        v = np.asarray(p.compute(view), dtype=np.float64)
        if supp.any():
            if suppressed == "exclude":
                v = np.where(supp, np.nan, v)
            elif suppressed == "value":
                if suppressed_values and p.name in suppressed_values:
                    fill = np.full(view.n, float(suppressed_values[p.name]))
                else:
                    fill = np.asarray(p.top(view), dtype=np.float64)
                    if np.isnan(fill[supp]).any():
                        raise SdcevalError(
                            f"property {p.name!r} has no value for a fully generalized "
                            "record; give one with suppressed_values="
                            f"{{{p.name!r}: VALUE}} or use suppressed='exclude'")
                v = np.where(supp, fill, v)
        bad = ~np.isfinite(v)
        if suppressed == "exclude":
            bad &= ~supp
        if bad.any():
            raise SdcevalError(f"property {p.name!r} is not finite for "
                               f"{int(bad.sum())} record(s) (first: row {int(np.flatnonzero(bad)[0])})")
        cols[p.name] = v
        hib[p.name] = _direction(p.name, p, directions)
        r = p.reference(dataset)
        if hib[p.name] != p.higher_is_better:
            r = None  # a flipped direction has no known worst point
        ref[p.name] = None if r is None else float(r)
    frame = pd.DataFrame(cols, index=dataset.frame.index)
    frame.attrs.update({
        "higher_is_better": hib, "reference": ref, "suppressed": suppressed,
        "excluded": int(supp.sum()) if suppressed == "exclude" else 0,
        "data": dataset.name, "n": int(dataset.n),
        "release": label or release.method or "release"})
    return frame
