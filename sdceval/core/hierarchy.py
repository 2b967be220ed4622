"""Generalization hierarchies (value generalization trees and numeric interval trees).

Layout (the one ARX uses, so ARX hierarchies can be loaded): a table with one row per
leaf value and one column per level, column 0 the leaf, the last column the root
(a single value, conventionally ``*``).  Level ``j`` generalizes level ``j-1``.

Internally every leaf gets an integer *code*.  Leaves are ordered so that the leaves
under any node form a contiguous range of codes (depth-first order for categorical
trees, numeric order for interval trees).  A generalized cell is therefore always a
closed code range ``[lo, hi]``; this is how `Release.cells` stores cells, and it makes
"how many leaves of the cell fall in a predicate" (the uniform assumption of Li & Li
§4.2) a range intersection.
"""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import read_text_file

if TYPE_CHECKING:  # imported where used: the method modules import this one, and
    import pandas as pd  # `sdceval list methods` must not load pandas (issue 27)

ROOT_LABEL = "*"
#: the label of the missing-value leaf (`Hierarchy.missing_leaf`): published as an empty
#: cell, which a CSV file writes as an empty field
MISSING_LABEL = ""
#: a number as a number writer prints it: no leading zeros, no '+', no spaces
_PLAIN_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
_LAYOUT = ("one row per leaf value, then one label per level up to the root '*', "
           "separated by ';' (or ','), no header")


def _fmt(x: float, exact: bool = False) -> str:
    """Number as text: integers without a decimal point; ``exact`` (leaf values) the
    shortest text that reads back as the same float, else 10 significant digits (interval
    bounds, so that 3 * 0.2 prints as 0.6)."""
    x = float(x)
    if x.is_integer():
        return str(int(x))
    return repr(x) if exact else f"{x:.10g}"


def check_finite(values: np.ndarray, name: str) -> None:
    """Refuse ``inf``, ``-inf`` and NaN in the numbers of column ``name`` (an interval
    hierarchy, or any numeric code, needs finite numbers)."""
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        first = values[bad][0]
        if np.isnan(first):
            raise SdcevalError(f"column {name!r} holds NaN (a missing value): remove or fill "
                               "it (or set the schema's missing policy)")
        raise SdcevalError(f"column {name!r} holds {'inf' if first > 0 else '-inf'}: remove "
                           "or cap it (numbers must be finite)")


def nice_width(raw: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``raw`` (> 0)."""
    mag = 10 ** math.floor(math.log10(raw))
    return float(min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=10 * mag))


def interval_grid(vals: np.ndarray, levels: int, name: str, whole: bool = False,
                  clip: bool = False) -> tuple[list[float], float]:
    """Widths and origin of the interval levels for sorted, distinct, finite ``vals``
    (`Hierarchy.auto_intervals`, `sdceval.core.hierarchy_builders.build_intervals`): a
    "nice" base width (`nice_width` of range / 2**levels; at least 1 when ``whole``),
    doubled at each of ``levels`` levels, aligned at a multiple of the base width at or
    below the minimum.

    The range is taken as max/2 - min/2 (halving is exact), which cannot overflow.  When
    the grid itself cannot be written in floating point (the distance from its origin to
    the maximum, or, unless ``clip`` keeps the labels within the data, the end of the last
    interval, beyond the largest float, about 1.8e308) the column is refused, naming it
    and its range: no interval label could hold its values."""
    if not len(vals):
        raise SdcevalError(f"column {name!r}: an interval hierarchy needs finite numbers")
    lo, hi = float(vals[0]), float(vals[-1])
    half_span = hi / 2 - lo / 2 if len(vals) > 1 else 0.5
    base = nice_width(max(half_span / 2.0 ** (levels - 1), 1e-12))
    if whole:
        base = max(base, 1.0)  # whole widths for whole numbers: [40-44], never [40, 40.5)
    widths = [base * 2.0 ** i for i in range(levels)]
    # Python floats: an overflow gives inf, never an exception
    first = lo / base
    origin = math.floor(first) * base if math.isfinite(first) else math.inf
    if origin > lo:  # lo / base rounded up to a whole number (-5e-324 / 2 is -0.0)
        origin -= base
    reach = hi - origin  # inf when the grid is wider than floats go
    # the start of the last interval is within the data; its end may not be
    top = (widths[-1] * math.floor(reach / widths[-1]) + origin + widths[-1]
           if math.isfinite(reach) else math.inf)
    if not (math.isfinite(widths[-1]) and math.isfinite(reach) and origin <= lo
            and (clip or math.isfinite(top))):
        raise SdcevalError(
            f"column {name!r} spans {lo:g} to {hi:g}: intervals over that range go beyond "
            "the largest floating-point number (about 1.8e308); rescale the column (e.g. "
            "divide it by a power of ten) or give its hierarchy in the schema "
            "([hierarchies])")
    return widths, origin


class Hierarchy:
    """A generalization hierarchy over the leaf values of one attribute.

    Parameters
    ----------
    table : sequence of rows or DataFrame
        One row per leaf: ``[leaf, level1, ..., root]``.  Every row has the same length,
        every label at level ``j`` has exactly one parent at level ``j+1`` (levels nest),
        and the last column holds a single value (one root).  Empty fields at the end of
        a row (a trailing ``;``, as some exporters write) are dropped, so they add no
        level; any other empty label is refused, naming its row.  A label names one node:
        an inner node may repeat the label of its own sole leaf (``Private;Private;*``),
        but a label that names different sets of leaves (an inner node ``02139`` above
        ``02138`` and ``02140`` while ``02139`` is a leaf too) is refused, naming both.
    name : str
        Attribute name (used in messages).
    numeric : bool
        Leaves are numbers; they are ordered numerically and every inner node must then
        cover a contiguous run of leaves (an interval).
    missing : bool
        Add a leaf for the missing value (``missing = "keep"``, `with_missing_leaf`):
        label `MISSING_LABEL`, the last code, a node of its own at every level below the
        root (an inner node repeating its sole leaf's label, so a generalized missing
        value is still published as missing, never as a value, and a cell ``lo = hi =
        missing_leaf`` at every level), and under the root like every leaf.  Categorical
        hierarchies only.

    Attributes
    ----------
    leaves : ndarray of str
        Leaf labels in code order.
    leaf_values : ndarray of float or None
        Numeric leaf values (numeric hierarchies only).
    height : int
        Number of levels above the leaf level (``levels`` run 0..height).
    node_of[j] : ndarray of int, shape (n_leaves,)
        Local id, within level ``j``, of each leaf's ancestor at level ``j``.
    labels[j] : ndarray of str
        Label of each node of level ``j``.
    lo[j], hi[j] : ndarray of int
        First and last leaf code under each node of level ``j``.
    missing_leaf : int or None
        Code of the missing-value leaf (``missing=True``), else None.  `encode` maps a
        missing value (NaN, None) to it.
    """

    #: the file the hierarchy was read from (`from_csv`), else None
    source: Path | None = None
    #: the builder that made it from the data (`sdceval.core.hierarchy_builders`:
    #: ``intervals``, ``masking``, ``grouping``, ``flat``; ``auto_intervals`` for a
    #: numeric sensitive attribute or label), else None
    builder: str | None = None
    #: code of the missing-value leaf, else None (class notes)
    missing_leaf: int | None = None

    def __init__(self, table, name: str = "", numeric: bool = False,
                 missing: bool = False):
        import pandas as pd
        rows = self._rows(table, name)
        self.name = name
        self.numeric = bool(numeric)
        width = {len(r) for r in rows}
        if len(width) != 1:
            raise SdcevalError(
                f"hierarchy {name!r}: rows have different numbers of levels {sorted(width)}; "
                "every row must list the leaf and one label per level up to the root")
        width = width.pop()
        if width < 2:
            raise SdcevalError(
                f"hierarchy {name!r}: needs at least two columns (leaf and root '*')")
        if missing:
            if self.numeric:
                raise SdcevalError(
                    f"hierarchy {name!r} is numeric: a missing value has no place among "
                    "numbers (missing = \"keep\" keeps categorical keys only); impute it "
                    "or drop those records (--missing drop)")
            # appended last, so the depth-first order below gives it the last code
            rows = rows + [[MISSING_LABEL] * (width - 1) + [rows[0][-1]]]
        arr = np.array(rows, dtype=object).astype(str)
        leaves = arr[:, 0]
        uniq, counts = np.unique(leaves, return_counts=True)
        if (counts > 1).any():
            raise SdcevalError(
                f"hierarchy {name!r}: leaf values listed more than once: "
                f"{', '.join(uniq[counts > 1][:10])}")
        roots = np.unique(arr[:, -1])
        if len(roots) != 1:
            raise SdcevalError(
                f"hierarchy {name!r}: the last level must be a single root, found "
                f"{len(roots)} values ({', '.join(roots[:5])}); add a final '*' column")
        for j in range(1, width - 1):
            parents = pd.DataFrame({"c": arr[:, j], "p": arr[:, j + 1]}).groupby("c")["p"].nunique()
            bad = parents[parents > 1]
            if len(bad):
                raise SdcevalError(
                    f"hierarchy {name!r}: levels do not nest: at level {j}, "
                    f"{', '.join(map(repr, bad.index[:5]))} "
                    f"{'has' if len(bad) == 1 else 'have'} more than one parent at level {j + 1}")
        if self.numeric:
            try:
                values = leaves.astype(float)
            except ValueError:
                raise SdcevalError(
                    f"hierarchy {name!r} is declared numeric but has non-numeric leaves") from None
            order = np.argsort(values, kind="stable")
        else:
            # depth-first order: sort by the first-appearance rank of each ancestor,
            # from the root's child down to the leaf, so every subtree is contiguous.
            keys = []
            for j in range(width - 2, -1, -1):
                _, first = np.unique(arr[:, j], return_index=True)
                rank = {lab: r for r, lab in enumerate(arr[np.sort(first), j])}
                keys.append(np.array([rank[v] for v in arr[:, j]]))
            order = np.lexsort(keys[::-1])
        arr = arr[order]
        self._table = arr
        self.leaves = arr[:, 0]
        self.leaf_values = arr[:, 0].astype(float) if self.numeric else None
        self.height = width - 1
        self.node_of: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        codes = np.arange(len(arr))
        for j in range(width):
            col = arr[:, j]
            # nodes numbered in leaf order, so node ids are sorted by their ranges
            change = np.r_[True, col[1:] != col[:-1]]
            local = np.cumsum(change) - 1
            labels = col[change]
            if len(np.unique(labels)) != len(labels):
                dup = [lab for lab in pd.unique(labels) if (labels == lab).sum() > 1]
                raise SdcevalError(
                    f"hierarchy {name!r}: node {dup[0]!r} at level {j} covers leaves that are "
                    "not contiguous" + (" in numeric order (numeric nodes must be intervals; "
                                        "if the leaves are codes rather than quantities, "
                                        "declare the hierarchy numeric = false)"
                                        if self.numeric else ""))
            self.node_of.append(local)
            self.labels.append(labels)
            self.lo.append(np.minimum.reduceat(codes, np.flatnonzero(change)))
            self.hi.append(np.maximum.reduceat(codes, np.flatnonzero(change)))
        self._check_unambiguous(order)
        self._leaf_index = {lab: i for i, lab in enumerate(self.leaves)}
        self.missing_leaf = self._leaf_index[MISSING_LABEL] if missing else None
        self._range_label = {}
        for j in range(width):
            for lab, a, b in zip(self.labels[j], self.lo[j], self.hi[j]):
                self._range_label.setdefault((int(a), int(b)), lab)

    def _check_unambiguous(self, order: np.ndarray) -> None:
        """Every label names one set of leaves: a published label must read back as one
        cell.  An inner node may carry the label of its own sole leaf (``Private;Private;*``
        or ``United-States`` up several levels, as in the bundled adult hierarchies: the
        same cell either way), but not that of another leaf (``02139`` above ``02138`` and
        ``02140`` while ``02139`` is a leaf too), nor of a node over other leaves."""
        def where(j, a, b):
            rows = np.sort(order[a:b + 1]) + 1
            if j == 0:
                return f"the leaf of row {rows[0]}"
            shown = ", ".join(map(str, rows[:6])) + (", ..." if len(rows) > 6 else "")
            return f"the node at level {j} over row{'s' if len(rows) > 1 else ''} {shown}"

        seen: dict[str, tuple[int, int, int]] = {}
        for j in range(self.height + 1):
            for lab, a, b in zip(self.labels[j], self.lo[j], self.hi[j]):
                first = seen.setdefault(str(lab), (j, int(a), int(b)))
                if first[1:] != (int(a), int(b)):
                    raise SdcevalError(
                        f"hierarchy {self.name!r}: label {str(lab)!r} is both {where(*first)} "
                        f"and {where(j, int(a), int(b))}; a published {str(lab)!r} would be "
                        "ambiguous: rename the inner node")

    @staticmethod
    def _rows(table, name):
        import pandas as pd
        if isinstance(table, pd.DataFrame):
            rows = table.astype(str).values.tolist()
        else:
            rows = [list(map(str, r)) for r in table]
        rows = [[c.strip() for c in r] for r in rows if any(c.strip() for c in r)]
        if not rows:
            raise SdcevalError(f"hierarchy {name!r} is empty")
        for i, r in enumerate(rows):
            # a trailing separator ('a;x;*;') ends the row, it adds no level
            while r and r[-1] == "":
                r.pop()
            if "" in r:
                raise SdcevalError(
                    f"hierarchy {name!r}: row {i + 1} ({';'.join(r)!r}) has an empty label "
                    f"at level {r.index('')}; every level needs a label (a suppressed or "
                    f"published cell would be empty)")
        return rows

    # -- construction helpers ---------------------------------------------------
    @classmethod
    def flat(cls, values, name: str = "") -> "Hierarchy":
        """Two-level hierarchy: each value, then ``*``."""
        import pandas as pd
        values = pd.unique(pd.Series(list(values)).astype(str))
        return cls([[v, ROOT_LABEL] for v in values], name=name)

    @classmethod
    def intervals(cls, values, widths: Sequence[float], name: str = "",
                  origin: float = 0.0, clip: bool = False) -> "Hierarchy":
        """Numeric interval hierarchy: level ``j`` = intervals of width ``widths[j-1]``
        aligned at ``origin``, then ``*``.  Each width must divide the next so levels nest.
        Integer data get labels ``[40-44]`` (closed), other data ``[40, 45)``.

        ``clip``: labels stay within the values' range: the interval holding the smallest
        value starts at it and the one holding the largest ends at it (ages 17..90 in
        widths of 40 from 15: ``[17-54]``, ``[55-90]``; real data ``[55, 90.5]``, closed
        at the maximum).  The intervals, and so the tree, are the same either way.
        """
        vals = np.unique(np.asarray(list(values), dtype=float))
        check_finite(vals, name)
        widths = [float(w) for w in widths]
        for a, b in zip(widths, widths[1:]):
            if b <= a or not math.isclose(b / a, round(b / a)):
                raise SdcevalError(
                    f"hierarchy {name!r}: interval widths must grow and each must divide "
                    f"the next (got {widths})")
        # closed integer labels [40-44] only when the data, widths and origin are whole
        integer = (np.all(vals == np.round(vals)) and all(w.is_integer() for w in widths)
                   and float(origin).is_integer())
        # bin indices of the first level, rounded so that 0.6 / 0.2 = 2.9999999999999996
        # lands in bin 3; coarser levels by integer division, so levels always nest
        base = np.floor(np.round((vals - origin) / widths[0], 9)).astype(np.int64)
        cols = [[_fmt(v, exact=True) for v in vals]]
        for w in widths:
            step = round(w / widths[0])
            lo = (base // step) * w + origin
            if not clip:
                if integer:
                    cols.append([f"[{_fmt(a)}-{_fmt(a + w - 1)}]" for a in lo])
                else:
                    cols.append([f"[{_fmt(a)}, {_fmt(a + w)})" for a in lo])
                continue
            # the first and last bins (by index, not by comparing floats) are clipped
            # to the smallest and largest value, written exactly
            first, last = base // step == base[0] // step, base // step == base[-1] // step
            a_txt = [_fmt(vals[0], exact=True) if f else _fmt(a) for a, f in zip(lo, first)]
            if integer:
                b_txt = [_fmt(vals[-1], exact=True) if t else _fmt(a + w - 1)
                         for a, t in zip(lo, last)]
                cols.append([f"[{a}-{b}]" for a, b in zip(a_txt, b_txt)])
            else:
                cols.append([f"[{a}, {_fmt(vals[-1], exact=True)}]" if t
                             else f"[{a}, {_fmt(b + w)})"
                             for a, b, t in zip(a_txt, lo, last)])
        cols.append([ROOT_LABEL] * len(vals))
        return cls(list(zip(*cols)), name=name, numeric=True)

    @classmethod
    def auto_intervals(cls, values, name: str = "", levels: int = 4) -> "Hierarchy":
        """Interval hierarchy for a numeric QI given without one: a 'nice' base width
        (1, 2 or 5 times a power of ten, about range/2**levels), doubled at each level."""
        vals = np.unique(np.asarray(list(values), dtype=float))
        check_finite(vals, name)
        widths, origin = interval_grid(vals, levels, name)
        return cls.intervals(vals, widths, name=name, origin=origin)

    @classmethod
    def from_csv(cls, path, name: str | None = None, numeric: bool | None = False,
                 delimiter: str | None = None) -> "Hierarchy":
        """Load a hierarchy file in ARX's layout: one row per leaf, the levels from the
        leaf to the root ``*`` separated by ``;`` (what ARX exports) or ``,``, no header.

        Every cell is read as text, exactly as written (``02310`` stays ``02310``); a
        trailing separator on a row adds no level (see the class docstring).  A missing
        file, a directory, or a file that is not UTF-8 is an `SdcevalError` naming it; a
        byte-order mark is ignored.
        ``numeric=None`` decides from the file: numeric when every leaf is a plain number
        (no leading zeros, so ``02310`` is a code) and every inner node covers an interval
        of them; categorical otherwise.
        """
        path = Path(path)
        shown = str(path)
        # missing, a directory, not UTF-8: an error naming the file; a spreadsheet's
        # byte-order mark is not part of the first leaf
        text = read_text_file(path, "hierarchy")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if delimiter is None:
            first = lines[0] if lines else ""
            delimiter = ";" if first.count(";") >= first.count(",") and ";" in first else ","
        if lines and delimiter not in lines[0]:
            raise SdcevalError(
                f"hierarchy file {shown!r} is not in ARX layout: {_LAYOUT}; its first line "
                f"{lines[0][:60]!r} has no ';' or ',' (tab-separated? use ';')")
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
        rows = [r for r in rows if any(c.strip() for c in r)]
        if len(rows) > 2:
            # a header row: its last cell is not the root the other rows share
            roots = {r[-1].strip() for r in rows[1:]}
            if len(roots) == 1 and rows[0][-1].strip() not in roots:
                raise SdcevalError(
                    f"hierarchy file {shown!r}: the first line {delimiter.join(rows[0])!r} "
                    f"looks like a header; ARX layout has none ({_LAYOUT}): remove it")
        name = name or path.stem
        if numeric is None:
            numeric = False
            if rows and all(_PLAIN_NUMBER.match(r[0].strip()) for r in rows):
                try:
                    h = cls(rows, name=name, numeric=True)
                except SdcevalError:  # groups that are not intervals: codes, not numbers
                    pass
                else:
                    h.source = path.resolve()
                    return h
        h = cls(rows, name=name, numeric=numeric)
        h.source = path.resolve()
        return h

    def with_missing_leaf(self) -> "Hierarchy":
        """This hierarchy with the missing-value leaf added (``missing`` in the class
        notes; itself when it has one): the one way `sdceval.core.dataset.Dataset` gives
        a categorical QI with missing values its leaf under ``missing = "keep"``, for
        hierarchies read from files and built from the data alike.  The other leaves
        keep their codes (the new leaf is the last)."""
        if self.missing_leaf is not None:
            return self
        rows = self._table.tolist()
        h = Hierarchy(rows, name=self.name, numeric=self.numeric, missing=True)
        h.source, h.builder = self.source, self.builder
        return h

    def to_frame(self) -> pd.DataFrame:
        """The table, one row per leaf, columns ``level0..levelH``."""
        import pandas as pd
        return pd.DataFrame(self._table, columns=[f"level{j}" for j in range(self.height + 1)])

    def csv_text(self, delimiter: str = ";") -> str:
        """The table in ARX's layout, without the missing-value leaf (an empty label,
        which a hierarchy file cannot hold; ``missing = "keep"`` adds it again)."""
        import io
        rows = [r for r in self._table.tolist() if r[0] != MISSING_LABEL]
        buf = io.StringIO()
        csv.writer(buf, delimiter=delimiter, lineterminator="\n").writerows(rows)
        return buf.getvalue()

    def to_csv(self, path, delimiter: str = ";") -> None:
        """`csv_text` written to ``path``."""
        with open(path, "w", newline="", encoding="utf-8") as fh:
            fh.write(self.csv_text(delimiter))

    # -- queries -----------------------------------------------------------------
    @property
    def n_leaves(self) -> int:
        return len(self.leaves)

    def encode(self, values, column: str | None = None) -> np.ndarray:
        """Leaf codes of data values; error naming the values missing from the tree."""
        import pandas as pd
        s = pd.Series(values)
        if self.numeric:
            num = pd.to_numeric(s, errors="coerce").to_numpy(float)
            pos = np.searchsorted(self.leaf_values, num)
            pos = np.clip(pos, 0, len(self.leaf_values) - 1)
            ok = self.leaf_values[pos] == num
            codes = pos
        else:
            # hash the values once; Python work per distinct value only
            inv, uniq = pd.factorize(s, use_na_sentinel=False)
            miss = -1 if self.missing_leaf is None else self.missing_leaf
            ucodes = np.array([miss if pd.api.types.is_scalar(u) and pd.isna(u)
                               else self._leaf_index.get(str(u), -1) for u in uniq],
                              dtype=np.int64)
            codes = ucodes[inv]
            ok = codes >= 0
        if not ok.all():
            missing = list(pd.unique(s[~ok].astype(str)))
            hint = ("add them to the hierarchy file" if self.source is not None
                    else "add them to the hierarchy")
            blank = [m for m in missing if m != m.strip() and m.strip() in self._leaf_index]
            if blank:
                hint = (f"{blank[0]!r} differs from the leaf {blank[0].strip()!r} only by "
                        "leading or trailing blanks: strip them (frame[col].str.strip(), or "
                        "read the CSV with skipinitialspace=True)")
            if not self.numeric and pd.api.types.is_numeric_dtype(s):
                hint = ("the column was read as numbers while the hierarchy's leaves are "
                        "codes: read it as text (e.g. pd.read_csv(..., dtype={col: str})) "
                        "to keep codes such as 02310 as written")
            raise SdcevalError(
                f"column {column or self.name!r}: {len(missing)} value(s) are not leaves of its "
                f"hierarchy: {', '.join(map(repr, missing[:10]))}"
                f"{' ...' if len(missing) > 10 else ''}; {hint}")
        return np.asarray(codes, dtype=np.int64)

    def generalize(self, codes: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Code ranges ``(lo, hi)`` of the level-``level`` ancestors of ``codes``."""
        if not 0 <= level <= self.height:
            raise SdcevalError(
                f"hierarchy {self.name!r}: level {level} outside 0..{self.height}")
        node = self.node_of[level][codes]
        return self.lo[level][node], self.hi[level][node]

    def label(self, lo: int, hi: int) -> str:
        """Readable label of the cell ``[lo, hi]``: the node label if the range is a node,
        else an interval ``[a-b]`` of the leaf values (numeric Mondrian cells)."""
        lab = self._range_label.get((int(lo), int(hi)))
        if lab is not None:
            return lab
        if self.numeric:
            a, b = self.leaf_values[int(lo)], self.leaf_values[int(hi)]
            # leaf values written exactly (repr): a bound rounded to 10 digits can
            # exclude its own record's value (issue 27 item 4)
            return f"[{_fmt(a, exact=True)}-{_fmt(b, exact=True)}]"
        return "{" + ",".join(self.leaves[int(lo):int(hi) + 1]) + "}"

    def labels_of(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Vectorized `label` over many cells (computed once per distinct cell)."""
        pairs = np.stack([np.asarray(lo), np.asarray(hi)], axis=1)
        uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
        labs = np.array([self.label(a, b) for a, b in uniq], dtype=object)
        return labs[inv.ravel()]

    def children(self, level: int, node: int) -> np.ndarray:
        """Local ids (at ``level-1``) of the children of node ``node`` of ``level``."""
        if not 1 <= level <= self.height:
            raise SdcevalError(f"hierarchy {self.name!r}: level {level} has no children "
                               f"(children exist at levels 1..{self.height})")
        lo, hi = self.lo[level][node], self.hi[level][node]
        return np.unique(self.node_of[level - 1][lo:hi + 1])

    def parent(self, level: int) -> np.ndarray:
        """Local id at ``level+1`` of the parent of each node of ``level``."""
        if not 0 <= level < self.height:
            raise SdcevalError(f"hierarchy {self.name!r}: level {level} has no parent "
                               f"level (parents exist for levels 0..{self.height - 1})")
        return self.node_of[level + 1][self.lo[level]]

    def __repr__(self) -> str:
        return (f"Hierarchy({self.name!r}, leaves={self.n_leaves}, height={self.height}, "
                f"numeric={self.numeric})")


def cell_loss(hierarchy, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """GLM loss in [0, 1] of cells ``[lo, hi]`` (leaf codes) of one QI."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    if hierarchy.numeric:
        v = hierarchy.leaf_values
        span = v[-1] - v[0]
        return (v[hi] - v[lo]) / span if span > 0 else np.zeros(len(lo))
    m = hierarchy.n_leaves
    return (hi - lo) / (m - 1) if m > 1 else np.zeros(len(lo))
