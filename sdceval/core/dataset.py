"""A data set: a DataFrame plus a `Schema`, validated once, integer-coded once.

Loading (bundled data sets, users' files) is `sdceval.core.loaders`.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain, suggest
from sdceval.core.hierarchy import ROOT_LABEL, Hierarchy
from sdceval.core.hierarchy_builders import build_hierarchy
from sdceval.core.schema import UNUSED_ROLES, Schema, column_names


def identifier_range(values) -> tuple[int, int] | None:
    """``(first, last)`` when ``values`` are the distinct integers 0..n-1 or 1..n in any
    order (n = number of values, at least 3), i.e. a record number rather than an
    attribute; else None.  Integer columns only (a record number is written as one).
    O(n): bounds first, then a count per value."""
    s = pd.Series(values) if not isinstance(values, pd.Series) else values
    n = len(s)
    if n < 3 or not pd.api.types.is_integer_dtype(s) or s.hasnans:
        return None
    x = s.to_numpy(dtype=np.int64)
    lo, hi = x.min(), x.max()
    if lo not in (0, 1) or hi != lo + n - 1:
        return None
    if not (np.bincount((x - lo).astype(np.int64), minlength=n) == 1).all():
        return None
    return int(lo), int(hi)


#: the largest magnitude up to which every integer is a float64 exactly
_EXACT_INT = 2 ** 53


def _row(mask) -> int:
    """1-based row (record) number of the first True of ``mask``."""
    return int(np.flatnonzero(np.asarray(mask))[0]) + 1


def _check_coded_values(values: pd.Series, spec, is_qi: bool) -> list[str]:
    """Refuse the values of a QI or the sensitive attribute that its codes would misread;
    return notes.

    * a QI value equal to the root label of its hierarchy (``*``): a published ``*``
      would read back as a suppressed cell;
    * integers beyond 2**53 in a numeric column: a float64 cannot hold them, so
      distinct records would share a leaf (or publish a value none has);
    * text with leading or trailing blanks when the hierarchy is built from the data:
      hierarchy labels are compared without them;
    * a note for a categorical column of numbers with a few text cells.
    """
    col, notes = spec.name, []
    text = values.astype(str)
    root = str(spec.hierarchy.labels[-1][0]) if spec.hierarchy is not None else ROOT_LABEL
    if is_qi:
        star = (text == root).to_numpy()
        if star.any():
            raise SdcevalError(
                f"column {col!r} holds the value {root!r} ({int(star.sum())} record(s), first "
                f"in row {_row(star)}), the label of the root of its hierarchy: a published "
                f"{root!r} is a suppressed cell, so those records would read back as "
                f"suppressed; rename the value (e.g. frame[{col!r}].replace({root!r}, "
                "'other'))")
    if spec.kind == "numeric" and pd.api.types.is_integer_dtype(values):
        x = values.to_numpy()
        big = (x > _EXACT_INT) | (x < -_EXACT_INT)
        if big.any():
            raise SdcevalError(
                f"column {col!r} holds integers beyond 2**53 (e.g. {x[big][0]} in row "
                f"{_row(big)}), which are not exact as floating-point numbers: records would "
                f"publish values that are not their own; declare the column categorical in "
                f"the schema's [kinds] ({col} = \"categorical\"), or scale it (subtract an "
                "offset or divide) before anonymizing")
    if spec.hierarchy is None and spec.kind != "numeric":
        uniq = pd.unique(text[values.notna()])  # a kept missing value is no label
        padded = [u for u in uniq if u != u.strip()]
        if padded:
            stripped = {}
            for u in uniq:
                stripped.setdefault(u.strip(), []).append(u)
            clash = next((v for v in stripped.values() if len(v) > 1), None)
            what = (f"values {', '.join(map(repr, clash[:3]))} differ only by blanks"
                    if clash else f"value {padded[0]!r} has leading or trailing blanks")
            raise SdcevalError(
                f"column {col!r}: {what} ({len(padded)} distinct value(s) with leading or "
                f"trailing blanks, first in row {_row(text == padded[0])}); its hierarchy, "
                "built from the data, compares labels without blanks: strip them first "
                f"(frame[{col!r}].str.strip(), or read the CSV with skipinitialspace=True)")
        if is_qi and not pd.api.types.is_numeric_dtype(values):
            nums = pd.to_numeric(values, errors="coerce")
            # a missing value kept (missing = "keep") is no text cell
            bad = (nums.isna() & values.notna()).to_numpy()
            if bad.any() and (~bad).sum() >= bad.sum():
                notes.append(
                    f"column {col!r} is treated as categorical although {int((~bad).sum())} "
                    f"of its {len(bad)} cells are numbers: {int(bad.sum())} cell(s) are text "
                    f"(e.g. {text[bad].iloc[0]!r}, row {_row(bad)}); if those mark missing "
                    "values, leave them empty, or fix them to treat the column as numeric "
                    "(intervals)")
    return notes


class Dataset:
    """A validated table with a schema.

    The caller's frame is copied and never modified.  Columns used by a role (any but
    ``identifier`` and ``ignore``) are checked here (missing values, numeric kind for
    ``numeric`` columns, hierarchy coverage for QIs), so methods and measures can trust
    them.  Records with a missing value in a used column are refused, naming the columns
    and counts, or removed when the schema says ``missing = "drop"`` (a note in
    `messages` says how many); ``missing = "keep"`` keeps those with missing values in
    categorical QIs only (`missing_keys`: the value is the missing-value leaf of the
    QI's hierarchy, `Hierarchy.with_missing_leaf`) and refuses any other.

    Parameters
    ----------
    frame : DataFrame
    schema : Schema
    name : str
    """

    #: files the data set was read from (data, schema, hierarchies): outputs never
    #: overwrite them.  Set by the loaders.
    input_files: tuple = ()
    #: one-line notes for the user (e.g. the roles inferred when none were given)
    messages: tuple = ()
    #: the categorical QIs whose missing values are kept (``missing = "keep"``)
    missing_keys: tuple = ()
    #: records held out before anonymization (a `Dataset` with this one's schema and
    #: hierarchies), which the attack measures compare against; None when none were
    #: (`sdceval.core.control.hold_out`)
    control: "Dataset | None" = None

    def __init__(self, frame: pd.DataFrame, schema: Schema, name: str = "data"):
        if not isinstance(frame, pd.DataFrame):
            raise SdcevalError(f"data set {name!r}: expected a pandas DataFrame")
        if len(frame) == 0:
            raise SdcevalError(f"data set {name!r} has no records (empty file?)")
        if len(frame) < 2:
            raise SdcevalError(
                f"data set {name!r} has a single record; disclosure control needs at least 2")
        self.name = name
        self.schema = schema
        names = column_names(frame)  # refuses duplicated names
        self._frame = frame.reset_index(drop=True).copy()
        self._frame.columns = names  # on the copy: the caller's names stay as they were
        used = [c.name for c in schema.columns if c.role not in UNUSED_ROLES]
        for c in used:
            if c not in self._frame.columns:
                raise SdcevalError(f"data set {name!r}: schema column {c!r} is not in the data."
                                   f"{suggest(c, self._frame.columns)}")
        if schema.weight is not None:
            # a missing design weight is refused under either policy: dropping records
            # would change the design the other weights were computed for
            holes = np.flatnonzero(self._frame[schema.weight].isna().to_numpy())
            if len(holes):
                raise SdcevalError(
                    f"weight column {schema.weight!r}: {len(holes)} record(s) without a "
                    f"design weight (missing): row(s) {', '.join(map(str, holes[:5]))}"
                    f"{', ...' if len(holes) > 5 else ''}; give every record its weight "
                    "(the number of population units it stands for), or remove those "
                    "records and recompute the weights")
        na = self._frame[used].isna().sum()
        na = na[na > 0]
        notes = []
        # categorical QIs whose missing values are kept: their hierarchies get the
        # missing-value leaf (`_HierarchyCache`)
        self.missing_keys = ()
        if len(na) and schema.missing == "keep":
            na, notes = self._keep_missing(na)
        if len(na):
            cols = ", ".join(f"{c!r} ({n} missing)" for c, n in na.items())
            if schema.missing != "drop":
                keys = [c for c in na.index if c in schema.qis]
                keep = (f"; or keep the records, a missing value of a categorical "
                        f"quasi-identifier ({', '.join(map(repr, keys))}) read as "
                        "sdcMicro does: --missing keep") if keys and \
                    schema.missing != "keep" else ""
                raise SdcevalError(
                    f"data set {name!r}: missing values in {cols}; drop or impute those "
                    "records first (e.g. frame.dropna(subset=[...])), or let sdceval remove "
                    "them: --missing drop (in a schema file: missing = \"drop\")"
                    f"{keep}; sdceval does not guess them")
            complete = self._frame[list(na.index)].notna().all(axis=1).to_numpy()
            removed = int((~complete).sum())
            if int(complete.sum()) < 2:
                raise SdcevalError(
                    f"data set {name!r}: only {int(complete.sum())} record(s) left once the "
                    f"{removed} with missing values ({cols}) are removed; disclosure "
                    "control needs at least 2")
            self._frame = self._frame[complete].reset_index(drop=True)
            notes.append(f"removed {removed} of {len(complete)} records with missing values "
                         f"(missing = drop): {cols}; {len(self._frame)} records remain")
        for c in schema.numeric:
            if not pd.api.types.is_numeric_dtype(self._frame[c]) or \
                    pd.api.types.is_bool_dtype(self._frame[c]):
                bad = pd.to_numeric(self._frame[c], errors="coerce").isna()
                example = self._frame[c][bad].iloc[0] if bad.any() else self._frame[c].iloc[0]
                raise SdcevalError(
                    f"column {c!r} has role 'numeric' but holds non-numeric values "
                    f"(e.g. {example!r}); give it role 'qi'/'ignore' or convert it to numbers")
            if not np.isfinite(self._frame[c].to_numpy(float)).all():
                raise SdcevalError(f"column {c!r} holds infinite values")
        for c in schema.qis + ([schema.sensitive] if schema.sensitive else []):
            notes += _check_coded_values(self._frame[c], schema[c], c in schema.qis)
            self.codes(c)  # validates hierarchy coverage now, not deep inside a method
        notes += self._check_design()
        for role, cols in (("numeric attribute", schema.numeric),
                           ("quasi-identifier", schema.qis)):
            for c in cols:
                rng = identifier_range(self._frame[c])
                if rng is not None:
                    notes.append(
                        f"column {c!r} looks like a record identifier (its values are the "
                        f"distinct integers {rng[0]}..{rng[1]}, one per record) but is used "
                        f"as a {role}; if it numbers the records, give it role 'ignore'")
        self.messages = tuple(notes)

    def _keep_missing(self, na: pd.Series) -> tuple[pd.Series, list[str]]:
        """``missing = "keep"``: the records with missing values in categorical QIs are
        kept (`missing_keys`; the value becomes the missing-value leaf of the QI's
        hierarchy, `Hierarchy.with_missing_leaf`, matching every category in the
        population risks as sdcMicro's ``NA``); a missing value in any other used column
        (a numeric QI, a numeric or sensitive attribute, the label, ...) is refused,
        naming the columns.  Returns the counts left (none) and the note."""
        s = self.schema

        def categorical_key(c):
            spec = s[c]
            return (spec.role == "qi" and spec.kind == "categorical"
                    and (spec.hierarchy is None or not spec.hierarchy.numeric))

        other = [c for c in na.index if not categorical_key(c)]
        if other:
            cols = ", ".join(f"{c!r} ({s[c].role}"
                             f"{', numeric' if s[c].kind == 'numeric' else ''}: "
                             f"{int(na[c])} missing)" for c in other)
            raise SdcevalError(
                f"data set {self.name!r}: missing values in {cols}; missing = \"keep\" "
                "keeps missing values in categorical quasi-identifiers only: impute them, "
                "or remove those records (--missing drop; in a schema file: missing = "
                "\"drop\")")
        empty = [c for c in na.index if int(na[c]) == self.n]
        if empty:
            raise SdcevalError(
                f"data set {self.name!r}: quasi-identifier {empty[0]!r} has no value in "
                "any record; give it role 'ignore'")
        self.missing_keys = tuple(na.index)
        rows = int(self._frame[list(na.index)].isna().any(axis=1).sum())
        cols = ", ".join(f"{c!r} ({int(n)} missing)" for c, n in na.items())
        note = (f"kept {rows} of {self.n} records with missing values in quasi-identifiers "
                f"(missing = keep): {cols}; a missing value is a category of its own, "
                "published as an empty cell, and matches every category in the population "
                "risks (sdcMicro's NA)")
        return na.iloc[:0], [note]

    def _check_design(self) -> list[str]:
        """The survey design's columns (issue 29 item 1): weights numeric, finite and
        > 0, the offending rows named; household-level keys equal within each
        household, the first household that disagrees named."""
        s, notes = self.schema, []
        if s.weight is not None:
            raw = self._frame[s.weight]
            w = pd.to_numeric(raw, errors="coerce").to_numpy(np.float64)
            bad = ~np.isfinite(w) | (w <= 0)
            if bad.any():
                rows = np.flatnonzero(bad)
                shown = ", ".join(f"row {r} ({plain(raw.iloc[r])!r})" for r in rows[:5])
                raise SdcevalError(
                    f"weight column {s.weight!r}: {len(rows)} record(s) without a positive "
                    f"design weight: {shown}{', ...' if len(rows) > 5 else ''}; a design "
                    "weight is the number of population units a record stands for (> 0): "
                    "fix or remove those records, or name the right column with --weight")
            if (w < 1).any():
                notes.append(f"weight column {s.weight!r}: {int((w < 1).sum())} weight(s) "
                             "below 1: a design weight usually counts population units "
                             "(>= 1); population risks read them as they are")
        if s.household is not None and s.household_keys:
            hh = self.households
            for k in s.household_keys:
                codes = self.codes(k)
                first = np.full(int(hh.max()) + 1, -1, dtype=np.int64)
                first[hh[::-1]] = codes[::-1]
                odd = np.flatnonzero(first[hh] != codes)
                if len(odd):
                    h = self._frame[s.household].iloc[odd[0]]
                    vals = sorted(map(str, pd.unique(self._frame[k][hh == hh[odd[0]]])))
                    raise SdcevalError(
                        f"household_keys: {k!r} is household-level but its members "
                        f"disagree in {int(len(np.unique(hh[odd])))} household(s), e.g. "
                        f"household {plain(h)!r} ({', '.join(vals[:5])}); fix the data or remove "
                        f"{k!r} from household_keys")
        return notes

    @cached_property
    def weights(self) -> np.ndarray | None:
        """The design weights (role ``weight``) as a read-only float64 array, or None
        when the file is taken as the whole population."""
        if self.schema.weight is None:
            return None
        w = self._frame[self.schema.weight].to_numpy(np.float64, copy=True)
        w.setflags(write=False)
        return w

    @cached_property
    def households(self) -> np.ndarray | None:
        """Household codes 0..H-1 (in order of first appearance; role ``household``)
        as a read-only int64 array, or None."""
        if self.schema.household is None:
            return None
        codes = pd.factorize(self._frame[self.schema.household])[0].astype(np.int64)
        codes.setflags(write=False)
        return codes

    # -- views ----------------------------------------------------------------------
    @property
    def frame(self) -> pd.DataFrame:
        """The data (a private copy; treat as read-only)."""
        return self._frame

    @property
    def n(self) -> int:
        return len(self._frame)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        s = self.schema
        return (f"Dataset({self.name!r}, n={self.n}, numeric={len(s.numeric)}, "
                f"qi={s.qis}, sensitive={s.sensitive!r})")

    @cached_property
    def _numeric(self) -> np.ndarray:
        x = self._frame[self.schema.numeric].to_numpy(dtype=np.float64, copy=True)
        x.setflags(write=False)
        return x

    def numeric_matrix(self, who: str | None = None, require_variance: bool = False
                       ) -> np.ndarray:
        """The ``numeric``-role columns as a read-only float64 (n, m) array.

        ``who`` names the method/measure asking, for the error when there are no numeric
        columns; ``require_variance`` rejects constant columns (e.g. for z-scoring).
        """
        if not self.schema.numeric:
            raise SdcevalError(
                f"{who or 'this operation'} needs numeric attributes but data set "
                f"{self.name!r} has none with role 'numeric'; pass --numeric COLS or a schema")
        x = self._numeric
        if require_variance:
            # max == min, not std == 0: a column of values near 1e-300 has a std that
            # underflows to 0 although its values differ
            const = [c for c, lo, hi in zip(self.schema.numeric, x.min(axis=0),
                                            x.max(axis=0)) if lo == hi]
            if const:
                raise SdcevalError(
                    f"{who or 'this operation'}: column(s) {', '.join(map(repr, map(str, const)))} are "
                    "constant (zero variance); drop them or give them role 'ignore'")
        return x

    def hierarchy(self, column: str) -> Hierarchy:
        """The column's hierarchy; a column without one gets one built from its values
        (`sdceval.core.hierarchy_builders`; the sensitive attribute and the label,
        never generalized, a flat one, or `Hierarchy.auto_intervals` if numeric)."""
        return self._hierarchies[column]

    @cached_property
    def _hierarchies(self) -> dict:
        return _HierarchyCache(self)

    def codes(self, column: str) -> np.ndarray:
        """Integer codes of a QI or the sensitive column (leaf codes of its hierarchy,
        or ranks among the sorted distinct values).  Computed once."""
        return self._codes[column]

    def domain(self, column: str) -> np.ndarray:
        """Labels of the codes of ``column`` (index = code)."""
        return self.hierarchy(column).leaves

    @cached_property
    def _codes(self) -> dict:
        return _CodeCache(self)


class _HierarchyCache(dict):
    def __init__(self, ds: Dataset):
        super().__init__()
        self.ds = ds

    def __missing__(self, col):
        ds = self.ds
        if col not in ds.schema:
            raise SdcevalError(f"unknown column {col!r}.{suggest(col, ds.frame.columns)}")
        spec = ds.schema[col]
        values = ds.frame[col]
        if spec.hierarchy is not None:
            h = spec.hierarchy
        elif spec.role in ("sensitive", "label"):
            # never generalized: the sensitive attribute's hierarchy serves the
            # hierarchical distance of t-closeness, where groups made up from sorted
            # values would invent similarities (a flat tree: every value equally far);
            # the label's serves its codes only
            if spec.kind == "numeric":
                h = Hierarchy.auto_intervals(values.to_numpy(float), name=col)
                h.builder = "auto_intervals"
            else:
                h = Hierarchy.flat(sorted(pd.unique(values.astype(str))), name=col)
                h.builder = "flat"
        else:
            h = build_hierarchy(values.dropna() if col in ds.missing_keys else values,
                                name=col, kind=spec.kind)
        if col in ds.missing_keys:
            # the one place a kept missing value gets its leaf (missing = "keep"),
            # whether the hierarchy is the user's or built from the data
            h = h.with_missing_leaf()
        self[col] = h
        return h


class _CodeCache(dict):
    def __init__(self, ds: Dataset):
        super().__init__()
        self.ds = ds

    def __missing__(self, col):
        h = self.ds.hierarchy(col)
        codes = h.encode(self.ds.frame[col], column=col)
        codes.setflags(write=False)
        self[col] = codes
        return codes
