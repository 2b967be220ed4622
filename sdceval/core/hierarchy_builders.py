"""Hierarchies built from a column's values, for a user's own data given without one
(the models are ARX's hierarchy builders: interval-based, redaction-based and
grouping-based).

`build_hierarchy` chooses the builder from the column's kind and values
(`choose_builder`):

1. a numeric column: **intervals** (value, 4 interval levels, ``*``);
2. a categorical column of at most 4 distinct values: **flat** (value, ``*``);
3. codes (`is_code_like`) that masking groups below the root: **masking** (``02116``,
   ``0211*``, ``021**``, ``02***``, ``0****``, ``*``);
4. any other categorical column: **grouping** (value, 1 or more levels of groups,
   ``*``).

* **intervals** (`build_intervals`): a "nice" base width (1, 2 or 5 times a power of ten,
  the smallest at least range / 2**4; at least 1 for integer data), doubled at each of
  the 4 levels so that every width divides the next and levels nest, aligned at a
  multiple of the base width at or below the minimum.  The tree is that of
  `Hierarchy.auto_intervals` (but for whole numbers spanning less than 16, which get
  widths 1, 2, 4, 8 instead of fractions), with as many levels, so lattices keep their
  size; the labels stay within the data's range (`Hierarchy.intervals` with ``clip``): ages
  17..90 give ``[17-19]``, ``[20-24]``, ... ``[90-90]``, then ... ``[17-54]``,
  ``[55-90]``, never ``[80-159]``.  Integer data get closed labels ``[40-44]``, real
  data ``[40, 45)`` (``[85, 90.5]``, closed, for the interval holding the maximum).
  Widths from the range rather than from quantiles: the labels are round numbers and
  the same data always give the same intervals.  The grid is `interval_grid`'s, shared
  with `Hierarchy.auto_intervals`: values spanning about +-1e308, whose intervals no
  float can bound, are refused naming the column and its range.
* **masking** (`build_masking`, ARX's redaction): one more character replaced by ``*``
  per level, from the right, up to the root ``*``: a hierarchy of height = code
  length (every level kept, as ARX does, even one that groups nothing).  Codes sort as
  text, so every masked prefix covers a contiguous run of leaves.  Chosen only when
  some level below the root has at least 2 and fewer than all prefixes, i.e. masking
  groups something before ``*`` (codes ``j0``..``j8`` are grouped instead).
* **grouping** (`build_grouping`): the distinct values in natural sort order (text,
  numbers inside it compared as numbers: ``v2`` before ``v10``), cut into contiguous
  groups; with ``m`` values there are ``h = max(1, ceil(log4 m) - 1)`` group levels
  (1 for 5..16 values, 2 for 17..64, 3 for 65..256, ...) and level ``j`` has about
  ``m / f**j`` groups, ``f = m ** (1 / (h + 1))``, each level cutting the groups of the
  one below as evenly as possible (so levels nest and fan-outs are about ``f``):
  5 values give ``{A, B, C}``, ``{D, E}``; 12 give 3 groups of 4; 30 give 10 groups of
  3, then 3 groups of 12, 9 and 9 values.  A group of at most 4 values is labelled by
  its members, ``{A, B, C}``, a larger one by its first and last value, ``v01..v12``.
  Sorted order rather than frequency: the same domain always gets the same groups, and
  neighbouring codes (``e1``, ``e2``) end up together.
* **flat**: value, then ``*`` (`Hierarchy.flat`): a group of 2 of a domain of at most
  4 values is hardly a generalization, and the domain of a text column that small is
  usually a handful of labels (sex, yes/no) with no order to group by.

`Dataset` builds the hierarchy of every column given without one but the sensitive
attribute and the label, which are never generalized and keep the flat tree
(`Hierarchy.auto_intervals` if numeric): a tree of groups made up from sorted values
would invent similarities for the hierarchical distance of t-closeness.

Leaf codes (`Dataset.codes`) follow the leaves: numbers in numeric order, text sorted
(in natural order for grouping, which differs from plain text order only for numbers of
different lengths: ``v2``, ``v10``).  A built hierarchy is only a start: ``sdceval hierarchy export --out FILE`` writes it in ARX's layout, to be edited
and named in the schema's ``[hierarchies]``.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy import ROOT_LABEL, Hierarchy, check_finite, interval_grid

#: interval levels of a numeric hierarchy (then ``*``), as `Hierarchy.auto_intervals`
INTERVAL_LEVELS = 4
#: categorical domains of at most this many distinct values get value -> ``*``
MAX_FLAT = 4
#: fan-out base of the grouping levels (``ceil(log_FANOUT m) - 1`` levels)
GROUP_FANOUT = 4
#: a group of at most this many values is labelled by its members
MAX_LISTED = 4

DESCRIPTIONS = {
    "intervals": "intervals of nice widths doubled per level, labels within the data's "
                 "range",
    "masking": "codes masked one more character per level, from the right",
    "grouping": "groups of neighbouring values in sorted order",
    "flat": "each value, then '*'",
    "auto_intervals": "intervals of nice widths doubled per level (Hierarchy.auto_intervals)",
}

_CODE = re.compile(r"[0-9A-Za-z]+", flags=re.ASCII)
_DIGITS = re.compile(r"([0-9]+)", flags=re.ASCII)


def _numeric_kind(values: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(values)
            and not pd.api.types.is_bool_dtype(values))


def _distinct_text(values) -> list[str]:
    return sorted(pd.unique(pd.Series(values).astype(str)))


def is_code_like(values) -> bool:
    """True when every value is text of one length of at least 2, made of ASCII letters
    and digits with at least one digit each (ZIP ``02116``, ICD ``C50``, ``K1A0B1``):
    codes whose prefixes mean something.  Words (``red``, ``tan``) are not codes."""
    texts = _distinct_text(values)
    if not texts:
        return False
    width = len(texts[0])
    return width >= 2 and all(len(t) == width and _CODE.fullmatch(t)
                              and any(c.isdigit() for c in t) for t in texts)


def choose_builder(values, kind: str | None = None) -> str:
    """The builder for a column (module docstring table): ``intervals`` for a numeric
    column, else ``flat`` for at most `MAX_FLAT` distinct values, ``masking`` for codes
    (`is_code_like`), ``grouping`` otherwise.  ``kind`` (``numeric`` or ``categorical``)
    defaults to the one the values' type gives, as `Schema.from_roles` infers it."""
    s = values if isinstance(values, pd.Series) else pd.Series(list(values))
    if kind is None:
        kind = "numeric" if _numeric_kind(s) else "categorical"
    if kind == "numeric":
        return "intervals"
    if kind != "categorical":
        raise SdcevalError(f"kind must be numeric or categorical, got {kind!r}")
    texts = _distinct_text(s)
    if len(texts) <= MAX_FLAT:
        return "flat"
    return "masking" if is_code_like(texts) and _masking_groups(texts) else "grouping"


def _masking_groups(codes: list[str]) -> bool:
    """Some masking level below the root groups the codes into at least 2 and fewer
    than all of them (``j0``..``j8`` would go straight to ``j*``: grouping is better)."""
    m, width = len(codes), len(codes[0])
    return any(2 <= len({c[:width - j] for c in codes}) < m for j in range(1, width))


def build_hierarchy(values, name: str = "", kind: str | None = None) -> Hierarchy:
    """A hierarchy for a column given without one, by the builder `choose_builder`
    picks; its name is in the result's ``builder``."""
    builder = choose_builder(values, kind)
    h = BUILDERS[builder](values, name=name)
    h.builder = builder
    return h


def build_intervals(values, name: str = "", levels: int = INTERVAL_LEVELS) -> Hierarchy:
    """Numeric intervals with labels within the data's range (module docstring)."""
    try:
        vals = np.unique(np.asarray(list(values), dtype=float))
    except (TypeError, ValueError):
        raise SdcevalError(f"column {name!r} is numeric but holds values that are not "
                           "numbers; declare it categorical") from None
    check_finite(vals, name)
    if not len(vals):
        raise SdcevalError(f"column {name!r}: an interval hierarchy needs finite numbers")
    if levels < 1:
        raise SdcevalError(f"hierarchy {name!r}: levels must be at least 1, got {levels}")
    whole = bool(np.all(vals == np.round(vals)))  # widths of at least 1: [40-44]
    widths, origin = interval_grid(vals, levels, name, whole=whole, clip=True)
    h = Hierarchy.intervals(vals, widths, name=name, origin=origin, clip=True)
    h.builder = "intervals"
    return h


def build_masking(values, name: str = "") -> Hierarchy:
    """Codes of one length masked from the right, one character per level (ARX's
    redaction): ``02116``, ``0211*``, ..., ``0****``, ``*``."""
    codes = _distinct_text(values)
    width = {len(c) for c in codes}
    if len(width) != 1 or min(width) < 2:
        raise SdcevalError(f"hierarchy {name!r}: masking needs codes of one length of at "
                           f"least 2 characters (lengths found: {sorted(width)[:5]})")
    n = width.pop()
    rows = [[c] + [c[:n - j] + "*" * j for j in range(1, n)] + [ROOT_LABEL] for c in codes]
    h = Hierarchy(rows, name=name)
    h.builder = "masking"
    return h


def _natural_key(text: str):
    parts = _DIGITS.split(text)  # text, number, text, ...: same types at same places
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def _group_counts(m: int) -> list[int]:
    """Number of groups at each group level for ``m`` values (module docstring)."""
    levels = max(1, math.ceil(math.log(m, GROUP_FANOUT) - 1e-9) - 1)
    fan = m ** (1 / (levels + 1))
    counts, prev = [], m
    for j in range(1, levels + 1):
        g = min(int(round(m / fan ** j)), prev - 1)
        if g < 2:
            break
        counts.append(g)
        prev = g
    return counts


def _group_label(members) -> str:
    if len(members) <= MAX_LISTED:
        return "{" + ", ".join(members) + "}"
    return f"{members[0]}..{members[-1]}"


def build_grouping(values, name: str = "") -> Hierarchy:
    """Groups of neighbouring values in natural sort order, level on level (module
    docstring); value -> ``*`` for at most 2 values."""
    leaves = sorted(pd.unique(pd.Series(values).astype(str)), key=_natural_key)
    m = len(leaves)
    cols = [list(leaves)]
    node = np.arange(m)  # each leaf's node at the level below
    n_nodes = m
    for g in (_group_counts(m) if m > 2 else []):
        parent = np.repeat(np.arange(g), [len(a) for a in np.array_split(np.arange(n_nodes), g)])
        node = parent[node]
        first = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
        ends = np.r_[first[1:], m]
        labels = [_group_label(leaves[a:b]) for a, b in zip(first, ends)]
        if len(set(labels)) != len(labels):  # values that look like labels: number them
            labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
        cols.append([labels[i] for i in node])
        n_nodes = g
    cols.append([ROOT_LABEL] * m)
    h = Hierarchy(list(zip(*cols)), name=name)
    h.builder = "grouping"
    return h


def build_flat(values, name: str = "") -> Hierarchy:
    """Each value (sorted as text), then ``*``."""
    h = Hierarchy.flat(_distinct_text(values), name=name)
    h.builder = "flat"
    return h


BUILDERS = {"intervals": build_intervals, "masking": build_masking,
            "grouping": build_grouping, "flat": build_flat}
