"""Any release read as plain values, one per record and column (issue 32 item 4): what
a regression (`ci_overlap`) or a propensity model (`s_pmse`) needs, for every kind.

The reading is `sdceval.measures.utility_loss.published` (the one shared with
`query_error` and `ml_utility`), turned into one value per released row:

* a published number (perturbative and synthetic releases, masked numbers of a composite
  one, numbers of an external table) is used as it is;
* a cell of a numeric (interval) hierarchy — a generalized numeric QI, a numeric
  attribute a composite release took as an interval, a numeric column the release does
  not publish (fully suppressed: the whole domain) — is its *midpoint*, the mean of the
  cell's first and last leaf values (`cell_midpoints`), as `ml_utility` reads it.  Why
  the midpoint and not a uniform draw within the cell: as a regressor, a grouped value
  read at its cell's centre carries a Berkson-type error (the true value scatters
  around the published one), which leaves a slope nearly unbiased, while a value drawn
  at random within the cell adds a classical error that attenuates it; so the midpoint
  does not lower a generalized release's score by noise of the reading's own making;
* a cell of a categorical hierarchy (a generalized or suppressed QI, an unknown label, a
  column the release does not publish) is a *leaf drawn uniformly within the cell*,
  seeded (`draw_leaves`): the uniform assumption of `query_error` and U_loss (every
  leaf of a cell equally likely) as one value per record — a categorical value has no
  midpoint, and a regression or a propensity model needs one level per record, where
  `ml_utility` can spread a record's weight over its cell's leaves.  An exact cell
  (``lo = hi``) is its leaf, with no draw;
* the sensitive attribute and the label (the target-like columns): the released values
  where the release publishes them (`published_sensitive`: a generalized, bucketized or
  composite release's released codes — permuted within buckets for bucketization —, an
  external table's or a synthetic release's column); a value the release does not
  publish (the sensitive attribute of a perturbative release), and the label of any
  aligned release (which no method protects), is the original's, row by row, as
  `ml_utility` reads a target: the method did not protect it.  A synthetic release
  publishes every such column, and its own values are read (`target_codes`).

The original itself is read by the same rule (``release=None``): numbers as they are, a
categorical column its leaf codes.
"""
from __future__ import annotations

import zlib

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.release import Release
from sdceval.measures.utility_loss import published, published_sensitive, value_codes

#: the roles read as targets (module notes)
TARGET_ROLES = ("sensitive", "label")


def model_columns(dataset) -> list:
    """The columns an analyst's model reads by default: the QIs, the numeric
    attributes, the sensitive attribute and the label, in the data set's order."""
    s = dataset.schema
    used = set(s.qis) | set(s.numeric) | {s.sensitive, s.label}
    return [c for c in dataset.frame.columns if c in used]


def cell_midpoints(hierarchy, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The midpoint of each cell ``lo..hi`` of a numeric hierarchy, in original units:
    the mean of its first and last leaf values."""
    v = hierarchy.leaf_values
    return (v[lo] + v[hi]) / 2.0


def draw_leaves(lo: np.ndarray, hi: np.ndarray, seed: int, column: str) -> np.ndarray:
    """A leaf drawn uniformly within each cell ``lo..hi`` (exact cells: their leaf).
    The generator is seeded by ``seed`` and the column's name, so a column's draws do
    not depend on which other columns are read."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out = lo.copy()
    wide = np.flatnonzero(hi > lo)
    if len(wide):
        rng = np.random.default_rng([int(seed), zlib.crc32(str(column).encode())])
        out[wide] += rng.integers(0, hi[wide] - lo[wide] + 1)
    return out


def numbers(hierarchy, values, column: str, who: str) -> np.ndarray:
    """Published numbers of ``column`` as float64; refused when its hierarchy is not
    numeric (the numbers would match none of its leaves)."""
    if not hierarchy.numeric:
        raise SdcevalError(
            f"{who}: column {column!r} is published as numbers but its hierarchy is not "
            "numeric; give it a numeric (interval) hierarchy")
    return np.asarray(values, dtype=np.float64)


def is_numeric(dataset, column: str) -> bool:
    """Whether ``column`` is read as numbers (its hierarchy is numeric)."""
    return bool(dataset.hierarchy(column).numeric)


def plain_values(dataset, release: Release | None, columns, seed: int = 0,
                 who: str = "measure") -> dict:
    """``{column: values}`` of ``release`` (or of the original, ``release=None``), one
    per row: float64 numbers for a column with a numeric hierarchy, int64 leaf codes
    otherwise (module notes)."""
    out = {}
    for c in columns:
        if c not in dataset.schema:
            raise SdcevalError(f"{who}: column {c!r} is not a column of data set "
                               f"{dataset.name!r}")
        h = dataset.hierarchy(c)
        how = _source(dataset, release, c)
        if how[0] == "value":
            out[c] = numbers(h, how[1], c, who)
        elif h.numeric:
            out[c] = cell_midpoints(h, how[1], how[2])
        else:
            out[c] = draw_leaves(how[1], how[2], seed, c)
    return out


def _source(dataset, release: Release | None, column: str) -> tuple:
    """``("value", x)`` or ``("cell", lo, hi)`` of ``column`` (module notes)."""
    role = dataset.schema[column].role
    if release is None:
        if dataset.hierarchy(column).numeric and (
                role == "numeric" or column not in dataset.schema.qis):
            return "value", dataset.frame[column].to_numpy(np.float64)
        code = np.asarray(dataset.codes(column), dtype=np.int64)
        return "cell", code, code
    if role in TARGET_ROLES:
        codes = target_codes(dataset, release, column)
        return "cell", codes, codes
    return published(dataset, release, column)


def target_codes(dataset, release: Release, column: str) -> np.ndarray:
    """Leaf code of the sensitive attribute or the label in every row of ``release``
    (module notes): the released value where the release publishes it, else the
    original's (an aligned release: the method did not protect it).  A synthetic
    release must publish the column, with values in the original's domain."""
    codes = None
    if column == dataset.schema.sensitive:
        codes = published_sensitive(dataset, release)
    elif not release.aligned and column in release.data.columns:
        # the label of an aligned release is the original's, published or not (no
        # method protects it; `ml_utility` and ``cm`` read it so)
        codes = value_codes(dataset, column, release.data[column])
    if not release.aligned:
        if codes is None or column not in release.data.columns:
            raise SdcevalError(f"release of {release.method!r} does not publish column "
                               f"{column!r}; a synthetic release must")
        bad = codes < 0
        if bad.any():
            raise SdcevalError(
                f"release of {release.method!r} has {int(bad.sum())} value(s) of column "
                f"{column!r} outside the original's values (e.g. "
                f"{release.data[column][bad].iloc[0]!r})")
        return codes
    original = np.asarray(dataset.codes(column), dtype=np.int64)
    if codes is None:
        return original
    return np.where(codes >= 0, codes, original)
