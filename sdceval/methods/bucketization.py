"""Bucketization: exact QIs, sensitive values permuted within buckets (Li & Li §2.1).

Two ways to form the buckets:

* ``bucketization`` — the buckets are Mondrian's equivalence classes under the same
  privacy models and parameters (`sdceval.methods.mondrian.partition`, as Li & Li §5 did:
  "We implemented Mondrian ... We used both generalization and bucketization").
* ``anatomy`` (Xiao & Tao 2006, §5) — ℓ-diverse buckets regardless of the QIs: hash the
  records by sensitive value; while at least ℓ values remain, form a bucket with one
  record of each of the ℓ most frequent remaining values (ties: smaller code first); each
  residual record (at most ℓ−1 remain, of distinct values, by their Property 1) joins a
  random bucket that does not yet hold its value.  Requires ℓ-eligibility: no value is
  held by more than n/ℓ records.  Which record of a value enters which bucket is random
  (seeded).

In both, each bucket's sensitive values are randomly permuted among its records
(seeded), so the release keeps every bucket's multiset of sensitive values but not which
record holds which.  Release contract (`Release.bucketized`): kind ``"bucketized"``,
``classes`` = bucket ids, exact cells (lo == hi == the record's code),
``sensitive_codes`` permuted, ``data`` = exact QIs + permuted sensitive + the label
and passthrough columns (if any), in the data set's order, + a ``bucket`` column;
every other column is dropped (``Release.dropped``).

References
----------
Xiao & Tao (2006). Anatomy: simple and effective privacy preservation. VLDB.
Li & Li (2009). On the tradeoff between privacy and utility in data publishing. KDD.
"""
from __future__ import annotations

import warnings

import numpy as np

from sdceval import privacy
from sdceval.core.errors import SdcevalError
from sdceval.core.registry import Param, register_method
from sdceval.core.release import BUCKET_COLUMN, Release, publishable_columns
from sdceval.methods.mondrian import MODELS_PARAM, achieved, partition


def permute_within(classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Source record of each record's released sensitive value: a uniformly random
    permutation inside every class (one sort, no per-bucket loop)."""
    n = len(classes)
    by_class = np.argsort(classes, kind="stable")
    shuffled = np.lexsort((rng.random(n), classes))
    src = np.empty(n, dtype=np.intp)
    src[by_class] = shuffled
    return src


def bucketized_release(dataset, classes: np.ndarray, rng: np.random.Generator,
                       method: str, info: dict) -> Release:
    """Release of ``dataset`` bucketized by ``classes`` (contract in the module doc)."""
    schema = dataset.schema
    sens = schema.sensitive
    frame = dataset.frame
    if BUCKET_COLUMN in publishable_columns(dataset, "bucketized"):
        raise SdcevalError(f"{method}: column {BUCKET_COLUMN!r} would be overwritten by the "
                           "bucket ids; rename it first")
    src = permute_within(classes, rng)
    data = {c: frame[c].to_numpy(copy=True) for c in schema.qis}
    data[sens] = frame[sens].to_numpy()[src]
    data[BUCKET_COLUMN] = classes.copy()
    import pandas as pd  # here, not at the top: `sdceval list methods` loads no pandas
    return Release.bucketized(
        dataset, pd.DataFrame(data), method=method, classes=classes,
        sensitive_codes=np.asarray(dataset.codes(sens), dtype=np.int64)[src], info=info)


def _need_sensitive(dataset, who):
    if dataset.schema.sensitive is None:
        raise SdcevalError(f"{who} permutes the sensitive attribute, but data set "
                           f"{dataset.name!r} has none; give one (e.g. --sensitive occupation)")


@register_method(
    "bucketization", family="bucketization", random=True, params=[MODELS_PARAM],
    label="bucketization",
    description="Mondrian buckets (same privacy models as 'mondrian'), QIs published "
                "exactly, sensitive values permuted within each bucket (Li & Li)")
def bucketization(dataset, *, seed, models) -> Release:
    """Bucketization over Mondrian's partition (see the module docstring).

    The buckets are exactly `mondrian`'s equivalence classes for the same parameters;
    only the publication differs.
    """
    _need_sensitive(dataset, "bucketization")
    models = privacy.bind_models(dataset, models, "bucketization")
    part = partition(dataset, models, who="bucketization")
    for w in part.warnings:
        warnings.warn(w, stacklevel=3)
    info = {"n_classes": part.n_classes, "models": [m.describe() for m in models],
            "achieved": achieved(dataset, models, part.classes),
            "warnings": list(part.warnings)}
    return bucketized_release(dataset, part.classes, seed, "bucketization", info)


def anatomy_groups(codes: np.ndarray, l: int, n_values: int,  # noqa: E741
                   rng: np.random.Generator) -> np.ndarray:
    """Anatomy's group-creation and residue-assignment steps: bucket id per record.

    The greedy step only depends on the counts per value, so it runs on the counts:
    while the ℓ largest counts stay ahead of the (ℓ+1)-th, the same ℓ values are picked,
    so ``gap + 1`` buckets are formed at once (one step per gap, not per record).
    """
    codes = np.asarray(codes, dtype=np.int64)
    counts = np.bincount(codes, minlength=n_values).astype(np.int64)
    group_parts, value_parts = [], []
    g = 0
    while True:
        nz = np.flatnonzero(counts)
        if len(nz) < l:
            break
        # descending count, ties by smaller code (stable on the code order)
        order = nz[np.argsort(-counts[nz], kind="stable")]
        top = order[:l]
        floor = counts[order[l]] if len(order) > l else 0
        steps = max(int(counts[top[-1]] - floor), 1)
        group_parts.append(np.repeat(np.arange(g, g + steps), l))
        value_parts.append(np.tile(top, steps))
        counts[top] -= steps
        g += steps
    n_groups = g
    groups = np.concatenate(group_parts) if group_parts else np.empty(0, np.int64)
    values = np.concatenate(value_parts) if value_parts else np.empty(0, np.int64)
    # for each value, the buckets that take one of its records, in creation order
    o = np.lexsort((groups, values))
    groups, values = groups[o], values[o]
    taken = np.bincount(values, minlength=n_values)
    # records of each value in random order; the first `taken[v]` go to those buckets
    rec = np.lexsort((rng.random(len(codes)), codes))
    total = np.bincount(codes, minlength=n_values)
    start = np.r_[0, np.cumsum(total)[:-1]]
    rank = np.arange(len(codes)) - start[codes[rec]]
    out = np.full(len(codes), -1, dtype=np.int64)
    placed = rank < taken[codes[rec]]
    gstart = np.r_[0, np.cumsum(taken)[:-1]]
    out[rec[placed]] = groups[gstart[codes[rec[placed]]] + rank[placed]]
    residual = rec[~placed]
    if len(residual):
        holds = np.zeros((n_groups, n_values), dtype=bool)
        holds[groups, values] = True
        for r in residual:  # at most ℓ-1 records (Xiao & Tao, Property 1)
            free = np.flatnonzero(~holds[:, codes[r]])
            if not len(free):  # cannot happen for ℓ-eligible data
                raise SdcevalError("anatomy: no bucket can take a residual record; "
                                   "the data is not ℓ-eligible")
            b = free[rng.integers(len(free))]
            out[r] = b
            holds[b, codes[r]] = True
    return out


@register_method(
    "anatomy", family="bucketization", random=True,
    label="Anatomy",
    params=[Param("l", int, 4, low=2, protection="increasing", grid=(2, 3, 4, 5, 6, 7),
                  description="every bucket holds ℓ (or ℓ+1) records with distinct "
                              "sensitive values; requires that no value has share > 1/ℓ")],
    description="Anatomy (Xiao & Tao): ℓ-diverse buckets of distinct sensitive values, "
                "QIs published exactly, sensitive values permuted within each bucket")
def anatomy(dataset, *, seed, l) -> Release:  # noqa: E741
    """Anatomy bucketization (see the module docstring)."""
    _need_sensitive(dataset, "anatomy")
    sens = dataset.schema.sensitive
    codes = dataset.codes(sens)
    n_values = dataset.hierarchy(sens).n_leaves
    counts = np.bincount(codes, minlength=n_values)
    top = int(np.argmax(counts))
    if counts[top] == dataset.n:
        raise SdcevalError(
            f"anatomy: l={l} is impossible: the sensitive attribute {sens!r} has a single "
            f"value, {str(dataset.domain(sens)[top])!r}, so no ℓ >= 2 can be met (anatomy "
            "needs at least 2 distinct sensitive values)")
    if counts[top] * l > dataset.n:
        raise SdcevalError(
            f"anatomy: l={l} is impossible: sensitive value "
            f"{str(dataset.domain(sens)[top])!r} of {sens!r} has share "
            f"{counts[top] / dataset.n:.4f} > 1/l = {1 / l:.4f} (the data is not "
            f"ℓ-eligible); choose l <= {dataset.n // counts[top]}")
    classes = anatomy_groups(codes, l, n_values, seed)
    sizes = np.bincount(classes)
    info = {"n_classes": int(len(sizes)), "bucket_sizes": {int(s): int(c) for s, c in
                                                           zip(*np.unique(sizes, return_counts=True))},
            "warnings": []}
    return bucketized_release(dataset, classes, seed, "anatomy", info)
