"""Does a published table fit the records it claims to protect? (issue 19 item 6,
issue 22 item 2, issue 27 item 1)

A release read without its key must be in record order (`check_record_order`: each row
scored against its record by the evidence a release offers, `_evidence`, against random
permutations), and every published cell must contain its record's value (`check_cells`),
keyed or not: a release that does not fit its records would be measured against the
wrong records and its risk understated.  Used by `sdceval.core.release_io` for files and
DataFrames alike; the key itself is `sdceval.core.release_order`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.release import BUCKET_COLUMN
from sdceval.core.release_public import draw_probability

#: random permutations of the null distribution, and how many of their standard
#: deviations the release in file order must beat them by to count as record order
_NULL_DRAWS, _Z = 40, 6.0
#: above -3 standard deviations the error says "no better than at random"
_Z_SHUFFLED = 3.0


def check_record_order(dataset, frame: pd.DataFrame, cells: dict, *, release_path,
                       key_path=None, fix: str | None = None, perturbed=(),
                       public_hint: str | None = None) -> None:
    """Refuse a release read without a key unless it is in record order.

    Each published row ``i`` is scored against record ``i``: one per generalized cell
    (``cells``: ``{column: (lo, hi, ...)}`` of the published labels of the QIs and of
    the numeric-role columns of labels, `sdceval.core.release_io.published_cells`) not
    containing the record's value, one per exact column (the sensitive value of a release that does
    not permute it, a passed-through text column) that differs, plus the distance of
    the masked / passed-through numbers (standardized by the original's deviation).  In
    record order, a truthful release (generalized, bucketized, QIs passed through) has
    no mismatch; otherwise the mean score must lie at least 6 standard deviations below
    that of the rows matched to records at random (40 draws).  A shuffled file (z about
    0) fails, naming the key file and ``--no-key``: a release in record order whose
    rows match their records too weakly to tell (a few records, or much noise) fails
    too, and is read with ``key=False``; a file whose rows cannot be told apart at all
    passes.  ``fix``: what the error tells the user to do (default: put the key file
    ``key_path`` beside the release, or ``--no-key``); ``release_path``: the file, or
    how the release was given (a DataFrame).

    ``perturbed``: the keys PRAM redrew (`sdceval.core.release_public`) are no
    evidence: any category of the domain may be published for any record, so they
    cannot show that a row is its record's.  When they are all a release publishes that
    could show it, its order is unproven and the file is refused (read it with its
    key, or ``--no-key`` when it is known to be in record order).  ``public_hint``:
    where the public file was expected (absent); said by the error when a key is
    published as exact cells that do not all fit their records (PRAM-like).
    """
    n = len(frame)
    perturbed = [q for q in perturbed if q in cells]
    cells = {c: v for c, v in cells.items() if c not in perturbed}
    exact, numeric = _evidence(dataset, frame, cells)
    if not exact and numeric is None:
        if not perturbed:
            return  # nothing published that can be compared with the records
        raise SdcevalError(
            f"release {str(release_path)!r} cannot be shown to be in record order: the "
            f"only columns that could show it are keys PRAM redrew "
            f"({', '.join(map(repr, perturbed))}), which may publish any category for any "
            f"record, and {fix or _default_fix(key_path)}")

    def score(order) -> tuple[float, float]:
        """(exact mismatches, numeric distance), means over the rows."""
        s = np.zeros(n)
        for kind, a, b, c in exact:
            if kind == "cell":  # a = lo, b = hi, c = record codes
                s += ~((a <= c[order]) & (c[order] <= b))
            else:  # a = published codes, c = record codes
                s += a != c[order]
        d = 0.0
        if numeric is not None:
            rel, orig = numeric
            d = float(np.sqrt(((rel - orig[order]) ** 2).mean(axis=1)).mean())
        return float(s.mean()), d

    rng = np.random.default_rng(0)
    aligned = score(np.arange(n))
    null = np.array([score(rng.permutation(n)) for _ in range(_NULL_DRAWS)])
    if exact and aligned[0] == 0 and null[:, 0].max() > 0:
        return  # every published value agrees with its record; at random they do not
    total = null.sum(axis=1)
    mu, tau = total.mean(), total.std(ddof=1)
    z = (sum(aligned) - mu) / tau if tau > 0 else 0.0
    if tau == 0 or z <= -_Z:
        return
    how = ("no better than rows matched at random" if z > -_Z_SHUFFLED else
           f"only a little better than rows matched at random (z = {z:.1f}: few records, "
           "or much noise)")
    pram_like = public_hint is not None and any(
        q in dataset.schema.qis and (lo == hi).all()
        and not ((lo <= dataset.codes(q)) & (dataset.codes(q) <= hi)).all()
        for q, (lo, hi, *_) in cells.items())
    raise SdcevalError(
        f"release {str(release_path)!r} is not in record order as far as sdceval can tell "
        f"(its rows match their records {how}) and {fix or _default_fix(key_path)}"
        + (f".  If PRAM redrew its keys, {public_hint}" if pram_like else ""))


def _default_fix(key_path) -> str:
    return (f"its key file {str(key_path)!r} is missing: 'sdceval anonymize' writes "
            "the rows shuffled, with that key beside them; put the key file there or "
            "give it with --key FILE (key=FILE in Python).  A release known to be in "
            "record order (written with --keep-order) is read with --no-key (key=False)")


def unchanged(original: pd.Series, published: pd.Series) -> np.ndarray:
    """Per record, whether ``published`` holds the original value: numbers compared as
    numbers (to 1e-12 relative: a value written and read back as text; missing equal to
    missing), anything else as text (a table read back may hold numbers as strings)."""
    if pd.api.types.is_numeric_dtype(original) and not pd.api.types.is_bool_dtype(original):
        p = pd.to_numeric(published, errors="coerce").to_numpy(float)
        o = original.to_numpy(float)
        return np.isclose(p, o, rtol=1e-12, atol=0) | (np.isnan(p) & np.isnan(o))
    return published.astype(str).to_numpy() == original.astype(str).to_numpy()


def check_cells(dataset, frame: pd.DataFrame, cells: dict, *, release_path,
                file_row: np.ndarray | None = None, in_file: bool = True,
                perturbed: dict | None = None, public_hint: str | None = None) -> None:
    """Refuse a release (in record order) with a published cell its record does not fit
    (issue 22 item 2): every published cell (``cells``: those of the QIs and of the
    numeric-role columns published as labels, e.g. intervals ``[30-39]`` of a whole-file
    release, `sdceval.core.release_io.published_cells`) must contain the record's
    value, the sensitive value of a release that does not permute it and every
    passed-through column must equal the record's, and a bucketized release's sensitive
    values must be those of its bucket's records (permuted within the bucket).  A shuffled file, an
    edited label or another data set's file of the same shape is therefore refused,
    naming the first bad row (``file_row``: the file's row of each record; ``in_file``
    False: a DataFrame's row, by position) and column.
    Masked numbers (a perturbative release, the masked numeric attributes of a
    whole-file one) are not cells to check.

    A key PRAM redrew (``perturbed``: ``{key: its public parameters}`` from the
    release's public file, `sdceval.core.release_public`) publishes a category drawn
    for its record, which need not be the record's own: its cells must be categories
    of the key's domain (exact cells: a leaf, not a node or an interval; an unknown
    label is refused when its cells are parsed) that the published transition matrix
    of the record's stratum can draw from the record's value (probability > 0,
    `draw_probability`), not cells containing the record's value.  ``public_hint``:
    where the public file was expected (it is absent); a key published as exact cells
    that do not fit their records, what PRAM without its public file looks like, is
    then refused with that hint."""
    schema = dataset.schema
    where = (lambda i: int(file_row[i]) if file_row is not None else int(i))
    bad_cells = []  # (record, column, what)
    perturbed = perturbed or {}
    for q, (lo, hi, *_) in cells.items():
        if q in perturbed:
            bad = np.flatnonzero(lo != hi)
            if len(bad):
                i = bad[0]
                bad_cells.append((i, q, f"the published {frame[q].iloc[i]!r} is not a "
                                        f"category of {q!r}'s domain (a key PRAM redrew "
                                        "publishes one category per record)"))
                continue
            bad = np.flatnonzero(draw_probability(dataset, q, perturbed[q], lo) <= 0)
            if len(bad):
                i = bad[0]
                bad_cells.append((i, q, f"the published {frame[q].iloc[i]!r} cannot be "
                                        f"drawn for the record's value "
                                        f"{dataset.frame[q].iloc[i]!r} (probability 0 in "
                                        "the transition matrix of the public file)"))
            continue
        codes = dataset.codes(q)
        bad = np.flatnonzero(~((lo <= codes) & (codes <= hi)))
        if len(bad):
            i = bad[0]
            what = (f"the published {frame[q].iloc[i]!r} does not contain the record's "
                    f"value {dataset.frame[q].iloc[i]!r}")
            if public_hint is not None and (lo[bad] == hi[bad]).all():
                what += f" (if PRAM redrew this key, {public_hint})"
            bad_cells.append((i, q, what))
    sens = schema.sensitive
    if sens is not None and sens in frame.columns:
        pub = dataset.hierarchy(sens).encode(frame[sens], column=sens)
        orig = dataset.codes(sens)
        if is_bucketized(dataset, frame):
            bucket = pd.factorize(frame[BUCKET_COLUMN])[0]
            a = np.lexsort((pub, bucket))
            b = np.lexsort((orig, bucket))
            diff = np.flatnonzero(pub[a] != orig[b])
            if len(diff):
                i = int(a[diff[0]])
                bad_cells.append((i, sens, f"bucket {frame[BUCKET_COLUMN].iloc[i]!r} publishes "
                                           "sensitive values that are not those of its "
                                           "records"))
        else:
            bad = np.flatnonzero(pub != orig)
            if len(bad):
                i = bad[0]
                bad_cells.append((i, sens, f"the published {frame[sens].iloc[i]!r} is not the "
                                           f"record's value {dataset.frame[sens].iloc[i]!r}"))
    for c in schema.passthrough:
        if c not in frame.columns or c not in dataset.frame.columns:
            continue
        orig = dataset.frame[c]
        bad = np.flatnonzero(~unchanged(orig, frame[c]))
        if len(bad):
            i = bad[0]
            bad_cells.append((i, c, f"the published {frame[c].iloc[i]!r} is not the "
                                    f"record's value {orig.iloc[i]!r} (a passed-through "
                                    "column is published unchanged)"))
    if not bad_cells:
        return
    i, column, what = min(bad_cells, key=lambda t: (where(t[0]), t[1]))
    row = where(i)
    at = (f"row {row + 1} of the file (line {row + 2})" if in_file else
          f"row {row} (by position)")
    raise SdcevalError(
        f"release {str(release_path)!r} does not fit data set {dataset.name!r}: "
        f"{at}, column {column!r}: {what}.  Every "
        "published cell must fit its record: this file was edited, belongs to another "
        "data set, or its rows are not in the order of its key")


def is_bucketized(dataset, frame: pd.DataFrame) -> bool:
    """Whether a published table is a bucketized release: it has a ``bucket`` column
    that is not a column of the data set.  A data-set column of that name (kept with
    ``--keep bucket``, role passthrough) is the user's data, never structure: a
    user-controlled column name must not decide how a release is measured."""
    return BUCKET_COLUMN in frame.columns and BUCKET_COLUMN not in dataset.frame.columns


def _evidence(dataset, frame: pd.DataFrame, cells: dict):
    """What a published row can be compared with its record by: exact items
    ``("cell", lo, hi, record codes)`` / ``("equal", published codes, None, record
    codes)``, and the numbers ``(published, original)`` standardized, or None."""
    schema = dataset.schema
    exact = [("cell", lo, hi, dataset.codes(q)) for q, (lo, hi, *_) in cells.items()]
    sens = schema.sensitive
    if sens is not None and sens in frame.columns and not is_bucketized(dataset, frame):
        try:  # a generalized release publishes it unchanged; bucketization permutes it
            code = dataset.hierarchy(sens).encode(frame[sens], column=sens)
            exact.append(("equal", code, None, dataset.codes(sens)))
        except SdcevalError:
            pass
    cols = []
    for c in schema.numeric + schema.passthrough:
        if c not in frame.columns or c not in dataset.frame.columns:
            continue
        orig = dataset.frame[c]
        if pd.api.types.is_numeric_dtype(orig) and not pd.api.types.is_bool_dtype(orig):
            pub = pd.to_numeric(frame[c], errors="coerce").to_numpy(float)
            o = orig.to_numpy(float)
            sd = np.nanstd(o)
            if np.isfinite(pub).all() and np.isfinite(o).all() and sd > 0:
                cols.append(((pub - o.mean()) / sd, (o - o.mean()) / sd))
        elif c in schema.passthrough:
            both = pd.concat([frame[c].astype(str), orig.astype(str)], ignore_index=True)
            codes = pd.factorize(both)[0]
            exact.append(("equal", codes[:len(frame)], None, codes[len(frame):]))
    numeric = None
    if cols:
        numeric = (np.column_stack([p for p, _ in cols]), np.column_stack([o for _, o in cols]))
    return exact, numeric


__all__ = ["BUCKET_COLUMN", "check_cells", "check_record_order", "is_bucketized",
           "unchanged"]
