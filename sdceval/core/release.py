"""What a method publishes, plus what it knows (SPEC §1).

A `Release` is row-aligned with the original: row ``i`` is the protected version of
record ``i``.  Besides the table it carries the structure measures need, so that no
measure re-derives what the method already knew: equivalence-class / bucket ids, the
generalized cell of every QI as a leaf-code range ``[lo, hi]`` (see `Hierarchy`), the
suppressed rows and the released sensitive codes.

A release is a validated value object (issue 6 §4).  Its shape is checked once, at
construction (`Release.__post_init__`): the structures its kind must and may carry, one
class id / flag / code per row, integer ids, ``0 <= lo <= hi`` cells; its arrays are
private read-only copies and ``cells`` cannot be changed, so the checks stay true.
What needs the data set (row count = ``dataset.n``, a cell for every QI with
``hi < n_leaves``, sensitive codes within the domain) is `Release.check`, run by the
per-kind constructors and by the registry before any method result leaves it or any
measure sees a release, and remembered per data set.  Measures therefore trust what they
get; the kinds a measure accepts and the roles/structures it needs are declared when it
registers (`sdceval.core.registry.register_measure`) and checked there, once.

What a release publishes (`publishable_columns`, issue 6 §1): only what the method
protects plus the columns the user asked to pass through (role ``passthrough``), in the
data set's column order; every other column of the data set is dropped and listed in
`Release.dropped`, so that nothing is published without being asked for.

* ``perturbative`` (MDAV, noise, rank swapping): the masked ``numeric``-role columns.
* ``generalized`` (full-domain generalization, Mondrian): the generalized QIs, plus the
  sensitive column unchanged — the sensitive values are what the generalized table is
  published for (Li & Li §2), and the privacy model (ℓ, t, δ) is what protects them.
* ``bucketized`` (bucketization, Anatomy): the exact QIs, the sensitive values permuted
  within buckets, and the method's ``bucket`` column.

The ``label`` column (the class attribute of the ``cm`` measure) is not protected by any
method, so it is dropped like any other column unless the user passes it through; ``cm``
reads the labels of the original data set, not of the release.
* ``external``: a table read from disk, published as it is.
* ``synthetic`` (synthetic data and differential-privacy samplers, issue 32): new records
  drawn from a model of the whole file, with no record correspondence: row ``i`` is not
  record ``i``'s release and the row count is the user's choice.  It publishes every
  column the schema uses (QIs, numeric, sensitive, label and passthrough columns, each
  synthesized; the design columns are not: a synthetic file is no sample of a design),
  as values in the original's types, and carries no structures.  Measures that need row
  alignment (record-linkage risks, the paper's numeric utilities) do not accept the kind
  (`ALIGNED_KINDS`): their reading of such a release is "not applicable", never 0.
* ``composite`` (a whole-file strategy, `sdceval.methods.strategy`, SPEC §5): every
  column the schema uses, each as the strategy's step for its group left it — cells for
  every QI (exact ``lo = hi`` where the QIs are published as is) and for the numeric
  attributes a syntactic step took as interval QIs, masked numbers for the numeric
  attributes of a perturbative step, the sensitive column (permuted within buckets when
  ``buckets`` is set: a bucketization step), passthrough columns unchanged.  Measures
  that read only part of such a table (privacy checks over classes, GLM, the paper's
  numeric utilities) do not accept the kind, so none of them overstates protection by
  ignoring the columns it does not read.

The released sensitive values follow one rule (`Release.sensitive`): the release's
``sensitive_codes`` when it carries them, else the data set's (a generalized release
publishes them unchanged).  A bucketized release permutes them, so it must carry them —
checked at construction, not left to each measure.
"""
from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.release_needs import NEEDS, require  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # imported where used: the method modules import this one, and
    import pandas as pd  # `sdceval list methods` must not load pandas (issue 27)

KINDS = ("perturbative", "generalized", "bucketized", "external", "composite", "synthetic")
#: the kinds whose row i is the release of original record i (every kind but synthetic)
ALIGNED_KINDS = tuple(k for k in KINDS if k != "synthetic")
#: the structural column of a bucketized release file (`sdceval.methods.bucketization`:
#: which bucket a row belongs to; `sdceval.core.release_checks.is_bucketized`)
BUCKET_COLUMN = "bucket"

#: structures a release of each kind must carry / may carry
_STRUCTURES = ("classes", "cells", "suppressed", "sensitive_codes")
REQUIRED = {"perturbative": (), "generalized": ("classes",),
            "bucketized": ("classes", "sensitive_codes"), "external": (),
            "composite": ("cells",), "synthetic": ()}
ALLOWED = {"perturbative": ("classes",), "generalized": _STRUCTURES,
           "bucketized": _STRUCTURES, "external": (), "composite": _STRUCTURES,
           "synthetic": ()}


# release -> weak reference to the data set it was last checked against
_CHECKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class Cells(dict):
    """``{qi: (lo, hi)}`` that cannot be changed after construction (the release was
    validated with these cells).  Pickles as a plain mapping."""

    def _frozen(self, *_, **__):
        raise TypeError("Release.cells cannot be changed; build a new Release "
                        "(e.g. dataclasses.replace(release, cells={...}))")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _frozen
    __ior__ = _frozen

    def __reduce__(self):
        return (Cells, (dict(self),))


def _owner(method: str) -> str:
    return f"release of {method!r}" if method else "release"


def _ids(a, name: str, n: int, who: str) -> np.ndarray:
    """One integer per row, as a private read-only int64 array."""
    arr = np.asarray(a)
    if arr.shape != (n,):
        raise SdcevalError(f"{who}: {name} has shape {arr.shape}; expected one value per "
                           f"row ({n},)")
    if not np.issubdtype(arr.dtype, np.integer):
        raise SdcevalError(f"{who}: {name} must be integer, got dtype {arr.dtype}")
    out = arr.astype(np.int64, copy=True)
    out.setflags(write=False)
    return out


def _flags(a, name: str, n: int, who: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.shape != (n,) or arr.dtype != np.bool_:
        raise SdcevalError(f"{who}: {name} must be a bool array of one flag per row ({n},), "
                           f"got shape {arr.shape} and dtype {arr.dtype}")
    out = arr.copy()
    out.setflags(write=False)
    return out


def _cells(cells, n: int, who: str) -> Cells:
    if not isinstance(cells, Mapping):
        raise SdcevalError(f"{who}: cells must be a mapping {{qi: (lo, hi)}}, got "
                           f"{type(cells).__name__}")
    out = {}
    for q, cell in cells.items():
        if not isinstance(cell, (tuple, list)) or len(cell) != 2:
            raise SdcevalError(f"{who}: cells[{q!r}] must be a pair (lo, hi) of integer "
                               "leaf-code arrays")
        lo = _ids(cell[0], f"cells[{q!r}] lo", n, who)
        hi = _ids(cell[1], f"cells[{q!r}] hi", n, who)
        if n and lo.min() < 0:
            raise SdcevalError(f"{who}: cells of QI {q!r} are not leaf-code ranges: need "
                               "0 <= lo")
        if (lo > hi).any():
            raise SdcevalError(f"{who}: cells of QI {q!r} are not leaf-code ranges: need "
                               "lo <= hi")
        out[q] = (lo, hi)
    return Cells(out)


@dataclass(frozen=True, eq=False)
class Release:
    """A protected version of a data set (a validated, immutable value object).

    Build one with the constructor of its kind — `Release.perturbative`,
    `Release.generalized`, `Release.bucketized`, `Release.external` — which applies the
    publication rule of the module docstring and checks the release against the data
    set.  The plain constructor validates the shape only (for tables read back and
    hand-made releases); the registry checks those against the data set before use.

    Attributes
    ----------
    data : DataFrame
        The table as it would be published (numbers for perturbative methods, readable
        labels such as ``[40-49]`` or ``*`` for generalized QIs).
    method : str
    params : dict
        The resolved parameters the method ran with (including ``seed``).
    kind : one of `KINDS`
    classes : ndarray of int64 or None
        Equivalence class / bucket / microaggregation group of each record.  Required
        for generalized and bucketized releases.
    cells : mapping column -> (lo, hi) or None
        Generalized cell of each QI per record, as inclusive leaf-code ranges.
    suppressed : ndarray of bool or None
        Records published fully generalized (``*``); all False if not given, for
        generalized and bucketized releases.
    sensitive_codes : ndarray of int64 or None
        Released sensitive value codes (permuted within buckets for bucketization;
        required for bucketized releases).
    info : dict
        Method diagnostics (warnings, iterations, ...).
    dropped : tuple of str
        Columns of the data set the release does not publish.
    """

    data: pd.DataFrame
    method: str = ""
    params: dict = field(default_factory=dict)
    kind: str = "perturbative"
    classes: np.ndarray | None = None
    cells: Mapping | None = None
    suppressed: np.ndarray | None = None
    sensitive_codes: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    dropped: tuple = ()
    #: a composite release whose sensitive values are permuted within its classes
    #: (a bucketization step): each row publishes its bucket's distribution
    buckets: bool = False

    def __post_init__(self):
        import pandas as pd
        who = _owner(self.method)
        if self.kind not in KINDS:
            raise SdcevalError(f"{who}: kind must be one of {', '.join(KINDS)}, got "
                               f"{self.kind!r}")
        if not isinstance(self.data, pd.DataFrame):
            raise SdcevalError(f"{who}: data must be a pandas DataFrame, got "
                               f"{type(self.data).__name__}")
        given = [s for s in _STRUCTURES if getattr(self, s) is not None]
        extra = [s for s in given if s not in ALLOWED[self.kind]]
        if extra:
            raise SdcevalError(f"{who}: a {self.kind} release carries no "
                               f"{', '.join(extra)} (allowed: "
                               f"{', '.join(ALLOWED[self.kind]) or 'none'})")
        missing = [s for s in REQUIRED[self.kind] if getattr(self, s) is None]
        if missing:
            raise SdcevalError(f"{who}: a {self.kind} release must carry "
                               f"{' and '.join(missing)}")
        n = len(self.data)
        put = object.__setattr__   # frozen: fields are set here, once
        if self.classes is not None:
            put(self, "classes", _ids(self.classes, "classes", n, who))
        if self.cells is not None:
            put(self, "cells", _cells(self.cells, n, who))
        if self.suppressed is not None:
            put(self, "suppressed", _flags(self.suppressed, "suppressed", n, who))
        elif self.kind in ("generalized", "bucketized", "composite"):
            none = np.zeros(n, dtype=bool)
            none.setflags(write=False)
            put(self, "suppressed", none)
        if self.sensitive_codes is not None:
            codes = _ids(self.sensitive_codes, "sensitive_codes", n, who)
            if n and codes.min() < 0:
                raise SdcevalError(f"{who}: sensitive_codes must be >= 0 (codes of the "
                                   "sensitive column)")
            put(self, "sensitive_codes", codes)
        if self.buckets and (self.kind != "composite" or self.classes is None
                             or self.sensitive_codes is None):
            raise SdcevalError(f"{who}: buckets=True needs a composite release with "
                               "classes (the buckets) and sensitive_codes")
        put(self, "params", dict(self.params or {}))
        put(self, "info", dict(self.info or {}))
        put(self, "dropped", tuple(self.dropped))

    # -- constructors per kind -----------------------------------------------------------
    @classmethod
    def perturbative(cls, dataset, data: pd.DataFrame, *, method: str = "",
                     classes=None, info: dict | None = None) -> "Release":
        """A perturbative release: ``data`` holds the masked ``numeric``-role columns
        (finite numbers); passthrough columns are added unchanged."""
        import pandas as pd
        frame, dropped = _publish(dataset, "perturbative", data, method)
        bad = [c for c in dataset.schema.numeric
               if not pd.api.types.is_numeric_dtype(frame[c])
               or not np.isfinite(frame[c].to_numpy(np.float64)).all()]
        if bad:
            raise SdcevalError(
                f"{method or 'method'}: masked column(s) {', '.join(map(repr, bad))} hold "
                "non-finite values (overflow or an invalid parameter?); nothing is "
                "published rather than a wrong number")
        return cls(frame, method, kind="perturbative", classes=classes, info=info or {},
                   dropped=dropped).check(dataset)

    @classmethod
    def generalized(cls, dataset, data: pd.DataFrame, *, classes, cells,
                    suppressed=None, sensitive_codes=None, method: str = "",
                    info: dict | None = None) -> "Release":
        """A generalized release: ``data`` holds the generalized QI labels; the
        sensitive, label and passthrough columns are added unchanged when ``data`` lacks
        them.  ``cells`` must give every QI; ``sensitive_codes`` default to the data
        set's (the sensitive column is published unchanged)."""
        return cls._with_sensitive(dataset, "generalized", data, method, sensitive_codes,
                                   classes=classes, cells=cells, suppressed=suppressed,
                                   info=info or {}).check(dataset, needs=("cells",))

    @classmethod
    def bucketized(cls, dataset, data: pd.DataFrame, *, classes, sensitive_codes,
                   cells=None, method: str = "", info: dict | None = None) -> "Release":
        """A bucketized release: ``data`` holds the exact QIs, the permuted sensitive
        column and the bucket id column; label and passthrough columns are added
        unchanged.  ``cells`` default to the exact codes (``lo = hi = code``)."""
        frame, dropped = _publish(dataset, "bucketized", data, method)
        if cells is None:
            cells = {q: (dataset.codes(q), dataset.codes(q)) for q in dataset.schema.qis}
        return cls(frame, method, kind="bucketized", classes=classes, cells=cells,
                   sensitive_codes=sensitive_codes, info=info or {},
                   dropped=dropped).check(dataset, needs=("cells",))

    @classmethod
    def composite(cls, dataset, data: pd.DataFrame, *, cells, classes=None,
                  suppressed=None, sensitive_codes=None, buckets: bool = False,
                  method: str = "", info: dict | None = None) -> "Release":
        """A whole-file release (module docstring): ``data`` holds the QI labels and
        the numeric attributes (masked numbers, or interval labels where ``cells`` give
        them); the sensitive and passthrough columns are added unchanged when ``data``
        lacks them.  ``cells`` must give every QI, and may give numeric attributes."""
        return cls._with_sensitive(dataset, "composite", data, method, sensitive_codes,
                                   classes=classes, cells=cells, suppressed=suppressed,
                                   info=info or {}, buckets=buckets).check(dataset)

    @classmethod
    def _with_sensitive(cls, dataset, kind: str, data, method: str, sensitive_codes,
                        **structure) -> "Release":
        """A ``kind`` release of ``data`` (`_publish`) whose sensitive codes default to
        the data set's (the sensitive column published unchanged)."""
        frame, dropped = _publish(dataset, kind, data, method)
        sens = dataset.schema.sensitive
        if sensitive_codes is None and sens is not None:
            sensitive_codes = dataset.codes(sens)
        return cls(frame, method, kind=kind, sensitive_codes=sensitive_codes,
                   dropped=dropped, **structure)

    @classmethod
    def external(cls, dataset, frame: pd.DataFrame, *, method: str = "external"
                 ) -> "Release":
        """A table read from disk (e.g. ``sdceval evaluate --release masked.csv``)."""
        if len(frame) != dataset.n:
            raise SdcevalError(
                f"release has {len(frame)} records but data set {dataset.name!r} has "
                f"{dataset.n}; a release must be row-aligned with the original (one row "
                "per original record). A synthetic file (new records, any count) is "
                "evaluated as Release.synthetic(dataset, frame), or from the file "
                "'sdceval anonymize' wrote, beside its public .method.json")
        dropped = tuple(c for c in dataset.frame.columns if c not in frame.columns)
        return cls(frame.reset_index(drop=True), method, kind="external",
                   dropped=dropped).check(dataset)

    @classmethod
    def synthetic(cls, dataset, data: pd.DataFrame, *, method: str = "",
                  info: dict | None = None) -> "Release":
        """A synthetic release (module docstring): ``data`` holds new records with every
        column `publishable_columns` names for the kind, in any number of rows; nothing
        else may be published (a data-set column outside the rule is refused)."""
        import pandas as pd
        who = method or "method"
        if not isinstance(data, pd.DataFrame):
            raise SdcevalError(f"{who}: release data must be a pandas DataFrame")
        protected, _ = _roles(dataset, "synthetic")
        missing = [c for c in protected if c not in data.columns]
        if missing:
            raise SdcevalError(f"{who}: a synthetic release must publish column(s) "
                               f"{', '.join(map(repr, missing))}")
        check_published(dataset, "synthetic", data.columns, who)
        frame = data.reset_index(drop=True)[protected]
        dropped = tuple(c for c in dataset.frame.columns if c not in protected)
        return cls(frame, method, kind="synthetic", info=info or {},
                   dropped=dropped).check(dataset)

    @property
    def aligned(self) -> bool:
        """Row i is the release of original record i (`ALIGNED_KINDS`)."""
        return self.kind in ALIGNED_KINDS

    # -- validation against the data set ------------------------------------------------
    def check(self, dataset, needs=(), who: str | None = None) -> "Release":
        """Check the release against ``dataset`` (once per data set) and the
        ``needs`` (`NEEDS`) of a measure named by ``who``; returns the release."""
        ref = _CHECKED.get(self)
        if ref is None or ref() is not dataset:
            self._check_aligned(dataset)
            _CHECKED[self] = weakref.ref(dataset)
        require(dataset, needs, who or _owner(self.method), self)
        return self

    def _check_aligned(self, dataset) -> None:
        who = _owner(self.method)
        if not self.aligned:
            return   # new records: no row count or cell to check against the original
        if self.n != dataset.n:
            raise SdcevalError(
                f"{who} has {self.n} records but data set {dataset.name!r} has "
                f"{dataset.n}; a release must be row-aligned with its original (row i "
                "is the protected record i)")
        schema = dataset.schema
        if self.cells is not None:
            qis = schema.qis
            # a composite release may give numeric attributes as interval cells too
            cellable = (list(qis) + list(schema.numeric) if self.kind == "composite"
                        else list(qis))
            missing = [q for q in qis if q not in self.cells]
            if missing:
                raise SdcevalError(f"{who} has no cells for QI(s) "
                                   f"{', '.join(map(repr, missing))}; every QI needs a "
                                   "(lo, hi) leaf-code range per record (exact QIs: "
                                   "lo = hi = code)")
            stray = [q for q in self.cells if q not in cellable]
            if stray:
                raise SdcevalError(f"{who} has cells for {', '.join(map(repr, stray))}, "
                                   f"which are not quasi-identifiers of {dataset.name!r}")
            for q in self.cells:
                m = dataset.hierarchy(q).n_leaves
                if self.n and self.cells[q][1].max() >= m:
                    raise SdcevalError(f"{who}: cells of QI {q!r} are not leaf-code ranges "
                                       f"0 <= lo <= hi <= {m - 1} of its hierarchy")
        sens = schema.sensitive
        if self.sensitive_codes is not None and sens is not None and self.n:
            m = dataset.hierarchy(sens).n_leaves
            if self.sensitive_codes.max() >= m:
                raise SdcevalError(f"{who} has sensitive codes outside 0..{m - 1} (the "
                                   f"{m} values of column {sens!r})")

    # -- views -------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.data)

    @property
    def sensitive_in_buckets(self) -> bool:
        """Each row publishes its class's sensitive distribution, not its own value
        (bucketization, alone or as a step of a whole-file strategy)."""
        return self.kind == "bucketized" or self.buckets

    def sensitive(self, dataset) -> np.ndarray:
        """The released sensitive codes: ``sensitive_codes`` if the release carries
        them, else the data set's (published unchanged, or not at all)."""
        if self.sensitive_codes is not None:
            return self.sensitive_codes
        return np.asarray(dataset.codes(dataset.schema.sensitive), dtype=np.int64)

    def class_index(self) -> tuple[np.ndarray, int]:
        """Classes renumbered ``0..C-1`` (in sorted order of the ids) and ``C``;
        computed once per release (the classes are read-only), as a read-only array."""
        cached = self.__dict__.get("_class_index")
        if cached is not None:
            return cached
        if self.classes is None:
            raise SdcevalError(f"{_owner(self.method)} has no equivalence classes")
        ids = self.classes
        lo, hi = (int(ids.min()), int(ids.max())) if len(ids) else (0, -1)
        if lo >= 0 and hi < 4 * len(ids) + 1024:
            # ids are small non-negative integers (every method's): rank them by a
            # presence table in O(n) instead of sorting
            present = np.zeros(hi + 1, dtype=bool)
            present[ids] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            inv, c = rank[ids], int(rank[-1]) + 1 if hi >= 0 else 0
        else:
            uniq, inv = np.unique(ids, return_inverse=True)
            inv, c = inv.ravel().astype(np.int64), len(uniq)
        inv.setflags(write=False)
        self.__dict__["_class_index"] = (inv, c)  # frozen dataclass: a private cache
        return inv, c

    def numeric_matrix(self, columns) -> np.ndarray:
        """The released values of ``columns`` as a float64 array, with clear errors (a
        table read from disk may lack a column or hold text)."""
        missing = [c for c in columns if c not in self.data.columns]
        if missing:
            raise SdcevalError(f"release lacks column(s) {', '.join(map(repr, missing))} "
                               "present in the original data set")
        import pandas as pd
        sub = self.data[list(columns)]
        bad = [c for c in columns if not pd.api.types.is_numeric_dtype(sub[c])]
        if bad:
            raise SdcevalError(f"release column(s) {', '.join(map(repr, bad))} are not numeric "
                               "(a generalized release cannot be used by a numeric measure)")
        x = sub.to_numpy(dtype=np.float64)
        if not np.isfinite(x).all():
            cols = [str(c) for c, ok in zip(columns, np.isfinite(x).all(axis=0)) if not ok]
            raise SdcevalError(f"release has missing or infinite values in {cols}")
        return x

    def class_sizes(self) -> np.ndarray:
        """Size of each record's class (per record)."""
        inv, c = self.class_index()
        return np.bincount(inv, minlength=c)[inv]

    def with_provenance(self, method: str, params: dict, dropped=None) -> "Release":
        """The same release labelled with the method and resolved parameters that made
        it, and the data-set columns it ``dropped`` (a copy; the arrays are shared, they
        are read-only)."""
        out = copy.copy(self)
        object.__setattr__(out, "method", method)
        object.__setattr__(out, "params", dict(params))
        if dropped is not None:
            object.__setattr__(out, "dropped", tuple(dropped))
        ref = _CHECKED.get(self)
        if ref is not None:
            _CHECKED[out] = ref
        return out

    def summary(self) -> dict[str, Any]:
        out = {"method": self.method, "params": self.params, "kind": self.kind, "n": self.n}
        if self.classes is not None:
            out["classes"] = int(len(np.unique(self.classes)))
        if self.suppressed is not None:
            out["suppressed"] = int(self.suppressed.sum())
        if self.dropped:
            out["dropped"] = list(self.dropped)
        return out


# -- what a release publishes -----------------------------------------------------------
def _roles(dataset, kind: str) -> tuple[list, list]:
    """(columns the method must publish, columns published unchanged) for ``kind``."""
    s = dataset.schema
    sens = [s.sensitive] if s.sensitive else []
    # passthrough columns and the design columns (weight, household) the user keeps
    kept = list(s.passthrough) + list(s.kept)
    if kind == "perturbative":
        return list(s.numeric), kept
    if kind == "generalized":
        return list(s.qis), sens + kept
    if kind == "bucketized":
        return list(s.qis) + sens, kept
    if kind == "composite":
        return list(s.qis) + list(s.numeric), sens + kept
    if kind == "synthetic":
        label = [s.label] if s.label else []
        synthesized = set(s.qis) | set(s.numeric) | set(sens) | set(label) | set(s.passthrough)
        return [c for c in dataset.frame.columns if c in synthesized], []
    return [], list(dataset.frame.columns)


def publishable_columns(dataset, kind: str) -> list:
    """The data-set columns a ``kind`` release publishes, in the data set's order (the
    rule of the module docstring; a bucketized release adds its ``bucket`` column)."""
    protected, unchanged = _roles(dataset, kind)
    keep = set(protected) | set(unchanged)
    return [c for c in dataset.frame.columns if c in keep]


def check_published(dataset, kind: str, columns, who: str) -> None:
    """Refuse a ``kind`` release that would publish a data-set column outside
    `publishable_columns` (a column the method does not protect and the user did not
    pass through), naming the columns and their roles."""
    allowed = set(publishable_columns(dataset, kind))
    stray = [c for c in columns if c in dataset.frame.columns and c not in allowed]
    if stray:
        roles = ", ".join(f"{c!r} (role {dataset.schema[c].role!r})" if c in dataset.schema
                          else repr(c) for c in stray)
        raise SdcevalError(
            f"{who}: a {kind} release may not publish {roles}: it publishes what the "
            "method protects and the columns given role 'passthrough' only")


def _publish(dataset, kind: str, data: pd.DataFrame, method: str) -> tuple[pd.DataFrame, tuple]:
    """The published table of a ``kind`` release built from the method's ``data``:
    the protected columns from ``data``, the unchanged ones from ``data`` or the data
    set, in the data set's order, then columns the method adds (a bucket id); and the
    dropped data-set columns.  A data-set column outside the rule is refused."""
    import pandas as pd
    who = method or "method"
    if not isinstance(data, pd.DataFrame):
        raise SdcevalError(f"{who}: release data must be a pandas DataFrame")
    if len(data) != dataset.n:
        raise SdcevalError(f"{who}: release has {len(data)} rows but data set "
                           f"{dataset.name!r} has {dataset.n}; a release must be "
                           "row-aligned with its original")
    protected, unchanged = _roles(dataset, kind)
    columns = list(dataset.frame.columns)
    missing = [c for c in protected if c not in data.columns]
    if missing:
        raise SdcevalError(f"{who}: a {kind} release must publish column(s) "
                           f"{', '.join(map(repr, missing))}")
    check_published(dataset, kind, data.columns, who)
    allowed = set(protected) | set(unchanged)
    data = data.reset_index(drop=True)
    out = {}
    for c in columns:
        if c in data.columns:
            out[c] = data[c]
        elif c in allowed:
            out[c] = dataset.frame[c].copy()
    extra = [c for c in data.columns if c not in columns]
    for c in extra:
        out[c] = data[c]
    frame = pd.DataFrame(out, columns=list(out))
    dropped = tuple(c for c in columns if c not in out)
    return frame, dropped


def external_release(dataset, frame: pd.DataFrame, name: str = "external") -> Release:
    """Wrap a table read from disk (`Release.external`)."""
    return Release.external(dataset, frame, method=name)
