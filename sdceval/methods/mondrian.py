"""Mondrian: strict multidimensional top-down partitioning (LeFevre et al. 2006), SPEC §3.

Starting from the whole table as one partition, repeatedly:

1. rank the QIs of the partition by normalized range, widest first — numeric:
   (max − min of the values) / (max − min over the table); categorical: leaves under the
   partition's node / all leaves of the hierarchy;
2. on the widest QI, cut: numeric at the median code m (lower median): left = codes ≤ m,
   right = codes > m (strict partitioning: equal values never straddle the cut); when m
   is the maximum the cut moves to the largest value below it; categorical: one part per
   child of the node;
3. the cut is *allowed* only if every part satisfies the privacy model(s) of
   `sdceval.privacy`; otherwise try the next QI; a partition with no allowed cut is an
   equivalence class.

The *node* of a categorical QI in a partition is the smallest hierarchy node covering the
partition's values (the lowest common ancestor of its smallest and largest leaf codes —
leaves under a node are contiguous codes).  This is the node whose children the next
cut uses, and the published cell; descending to it after each cut skips hierarchy levels
that would not separate anything (a node with a single present child) — a decision of
ours, LeFevre et al. only say "children of the current node".

Generalized cells: numeric [min, max] of the partition's codes (labelled as the node if
the range is exactly a node, else ``[a-b]``), categorical the node.

The partitioning is deterministic (no random choice anywhere); `seed` is accepted for the
common method interface.  `partition` is shared with `sdceval.methods.bucketization`.

Privacy models: ``models``, a list of privacy models of the registry
(`sdceval.privacy`: k, l, t, delta, cl and any model registered later), given as text
(``"l=4,variant=distinct"``) or objects (`sdceval.privacy.model_list`); every part of
an allowed cut satisfies all of them.  Default: k-anonymity with k = 10.  The older
spellings ``k=10`` and ``model="l", l=4`` (plus ``k`` as an extra minimum class size)
are shorthands read by `sdceval.privacy.model_list.from_shorthand`.

If no cut of the whole table is allowed, the release is the table as one class, with a
note in ``Release.info["warnings"]`` and a `UserWarning`: this is how infeasible t and δ
end (δ-disclosure needs every sensitive value of the table in every class, so on Adult,
with 14 Armed-Forces records, there are at most 14 classes).  k, ℓ and (c,ℓ) that even the
whole table violates raise `SdcevalError` (`sdceval.privacy.check_feasible`).

Speed: all work is on integer codes; a partition is an index array on an explicit
stack; the parts' sensitive counts are one ``np.bincount(part * S + code)``; a partition
smaller than twice the models' minimum class size (`PrivacyModel.min_class_size`: k;
⌈ℓ⌉; the number of sensitive values for δ; ℓ + ⌊1/c⌋ for (c,ℓ)) is final without evaluating any cut; cells are computed once at the end
with ``reduceat`` over the classes.

References
----------
LeFevre, DeWitt, Ramakrishnan (2006). Mondrian multidimensional k-anonymity. ICDE.
Li & Li (2009). On the tradeoff between privacy and utility in data publishing. KDD, §5.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from sdceval import privacy
from sdceval.core.errors import SdcevalError
from sdceval.core.registry import register_method
from sdceval.core.households import cell_classes, household_hull
from sdceval.core.release import Release

#: the models enforced when none are given (k-anonymity with k = 10)
DEFAULT_MODELS = ("k=10",)
MODELS_PARAM = privacy.models_param(DEFAULT_MODELS)


@dataclass
class Partition:
    """Result of `partition`: class id per record and the generalized cells."""

    classes: np.ndarray
    cells: dict
    n_classes: int
    warnings: list


class _Attr:
    """Per-QI lookup tables for the partitioning loop (built once)."""

    def __init__(self, h, codes):
        self.numeric = bool(h.numeric)
        if self.numeric:
            self.values = h.leaf_values
            span = self.values[codes.max()] - self.values[codes.min()]
            self.span = float(span) if span > 0 else np.inf
        else:
            self.nodes = np.stack(h.node_of)           # (H+1, S): node of each leaf per level
            self.size = [hi - lo + 1 for lo, hi in zip(h.lo, h.hi)]
            self.n_leaves = h.n_leaves
            self.lo, self.hi = h.lo, h.hi

    def lca_level(self, a, b) -> int:
        # the lowest level where the smallest and largest code share their ancestor
        return int(np.argmax(self.nodes[:, a] == self.nodes[:, b]))


def partition(dataset, models, who: str = "mondrian") -> Partition:
    """Mondrian strict partitioning of ``dataset`` under ``models`` (all must hold).

    Parameters
    ----------
    dataset : Dataset
    models : list of `sdceval.privacy.PrivacyModel`
    who : str
        Method name for messages.

    Returns
    -------
    Partition
        ``classes`` (int64, 0..C-1 in the order classes are finalized), ``cells``
        ({qi: (lo, hi)} leaf-code ranges per record), ``warnings``.
    """
    qis = dataset.schema.qis
    if not qis:
        raise SdcevalError(f"{who} needs quasi-identifiers, but data set {dataset.name!r} "
                           "has none; give them (e.g. --qi age,sex)")
    n = dataset.n
    hs = [dataset.hierarchy(c) for c in qis]
    codes = [dataset.codes(c) for c in qis]
    small = max(h.n_leaves for h in hs) < 2 ** 31
    X = np.stack(codes, axis=1).astype(np.int32 if small else np.int64)
    attrs = [_Attr(h, c) for h, c in zip(hs, codes)]
    d = len(qis)

    sens_col = dataset.schema.sensitive
    need_counts = any(m.needs_sensitive for m in models)
    if need_counts:
        S = dataset.hierarchy(sens_col).n_leaves
        s = np.asarray(dataset.codes(sens_col), dtype=np.int64)
        total = np.bincount(s, minlength=S)
        Q = total / n
    else:
        S, s, total, Q = 1, np.zeros(n, dtype=np.int64), np.array([n]), np.ones(1)
    # models judged by the people inside a part's cells (k-map with a population
    # table, `PrivacyModel.reads_cells`) get the parts' boxes; the others their counts
    by_cells = [m for m in models if getattr(m, "reads_cells", False)]
    models = [m for m in models if m not in by_cells]
    for m in models:
        privacy.check_feasible(m, total, Q)
    if by_cells:
        lo, hi = class_ranges(np.zeros(n, dtype=np.int64), 1, X, attrs)
        for m in by_cells:
            v = m.value_cells(total[None, :], Q, lo, hi)
            if not m.satisfied_level(v)[0]:
                raise SdcevalError(m.infeasible_message(float(v[0]), total))
    min_size = max(m.min_class_size(Q) for m in models + by_cells)

    def allowed(sizes, pid, sp, n_parts, Xp):
        if sizes.min() < min_size:
            return False
        if not need_counts:
            cnt = sizes[:, None]
            ok = all(m.satisfied(cnt, Q).all() for m in models)
        else:
            cnt = np.bincount(pid * S + sp, minlength=n_parts * S).reshape(n_parts, S)
            ok = all(m.satisfied(cnt, Q).all() for m in models)
        if ok and by_cells:
            lo, hi = class_ranges(pid, n_parts, Xp, attrs)
            ok = all(m.satisfied_level(m.value_cells(cnt, Q, lo, hi)).all()
                     for m in by_cells)
        return ok

    classes = np.empty(n, dtype=np.int64)
    n_classes = 0
    stack = [np.arange(n, dtype=np.intp)]
    ranges = np.empty(d)
    levels = [0] * d
    while stack:
        idx = stack.pop()
        n_p = len(idx)
        if n_p < 2 * min_size:  # no cut can leave two parts of min_size
            classes[idx] = n_classes
            n_classes += 1
            continue
        Xp = X[idx]
        mins, maxs = Xp.min(axis=0), Xp.max(axis=0)
        for a, at in enumerate(attrs):
            lo, hi = mins[a], maxs[a]
            if lo == hi:
                ranges[a] = 0.0
            elif at.numeric:
                ranges[a] = (at.values[hi] - at.values[lo]) / at.span
            else:
                j = at.lca_level(lo, hi)
                levels[a] = j
                ranges[a] = at.size[j][at.nodes[j, lo]] / at.n_leaves
        sp = s[idx] if need_counts else s[:n_p]
        children = None
        for a in np.argsort(-ranges, kind="stable"):
            if ranges[a] <= 0:
                break
            at, x = attrs[a], Xp[:, a]
            if at.numeric:
                med = np.partition(x, (n_p - 1) // 2)[(n_p - 1) // 2]
                if med == maxs[a]:
                    med = x[x < med].max()
                right = x > med
                n_right = int(np.count_nonzero(right))
                sizes = np.array([n_p - n_right, n_right])
                if sizes.min() < min_size:
                    continue
                if allowed(sizes, right.astype(np.int64), sp, 2, Xp):
                    children = [idx[right], idx[~right]]
            else:
                j = levels[a]
                child = at.nodes[j - 1]
                pid = child[x] - child[mins[a]]
                n_parts = int(pid.max()) + 1
                sizes = np.bincount(pid, minlength=n_parts)
                present = sizes > 0
                if sizes[present].min() < min_size:
                    continue
                if not present.all():  # children of the node absent from the partition
                    remap = np.cumsum(present) - 1
                    pid, sizes, n_parts = remap[pid], sizes[present], int(present.sum())
                if allowed(sizes, pid, sp, n_parts, Xp):
                    order = np.argsort(pid, kind="stable")
                    children = np.split(idx[order], np.cumsum(sizes)[:-1])[::-1]
            if children is not None:
                break
        if children is None:
            classes[idx] = n_classes
            n_classes += 1
        else:
            stack.extend(children)

    cells = _cells(classes, n_classes, X, attrs, qis)
    notes = []
    if n_classes == 1:
        desc = ", ".join(m.describe() for m in models + by_cells)
        notes.append(
            f"{who}: no split satisfies {desc}; the release is the whole table as a "
            "single equivalence class (a single class is at distance 0 from the table, so "
            "it satisfies any t and δ; Li & Li §5.1 observed this for δ < 1 on Adult)")
    return Partition(classes, cells, n_classes, notes)


def class_ranges(classes, n_classes, X, attrs) -> tuple[np.ndarray, np.ndarray]:
    """Per class (``classes`` 0..n_classes-1, each present) its generalized cells as
    leaf-code ranges ``lo``, ``hi`` (n_classes × QIs): a numeric QI's minimum and
    maximum code, a categorical QI's lowest common hierarchy node."""
    order = np.argsort(classes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(classes[order]) != 0])
    Xs = X[order]
    cls_ids = classes[order][starts]
    lo = np.empty((n_classes, X.shape[1]), dtype=np.int64)
    hi = np.empty((n_classes, X.shape[1]), dtype=np.int64)
    lo[cls_ids] = np.minimum.reduceat(Xs, starts, axis=0)
    hi[cls_ids] = np.maximum.reduceat(Xs, starts, axis=0)
    for a, at in enumerate(attrs):
        if not at.numeric:
            # the node: lowest level whose ancestors of min and max coincide
            j = np.argmax(at.nodes[:, lo[:, a]] == at.nodes[:, hi[:, a]], axis=0)
            node = at.nodes[j, lo[:, a]]
            for lev in np.unique(j):
                sel = j == lev
                lo[sel, a], hi[sel, a] = at.lo[lev][node[sel]], at.hi[lev][node[sel]]
    return lo, hi


def _cells(classes, n_classes, X, attrs, qis) -> dict:
    """Per-record generalized cells from the per-class minimum and maximum codes."""
    lo, hi = class_ranges(classes, n_classes, X, attrs)
    return {col: (lo[classes, a], hi[classes, a]) for a, col in enumerate(qis)}


def generalized_frame(dataset, cells: dict, classes: np.ndarray) -> pd.DataFrame:
    """The QI cells as readable labels (computed once per class); `Release.generalized`
    adds the sensitive and passthrough columns unchanged."""
    out = {}
    first = np.unique(classes, return_index=True)[1]
    for c in dataset.schema.qis:
        lo, hi = cells[c]
        labels = dataset.hierarchy(c).labels_of(lo[first], hi[first])
        lut = np.empty(int(classes.max()) + 1, dtype=object)
        lut[classes[first]] = labels
        out[c] = lut[classes]
    import pandas as pd  # here, not at the top: `sdceval list methods` loads no pandas
    return pd.DataFrame(out, columns=list(dataset.schema.qis))


@register_method(
    "mondrian", family="generalization", random=False, params=[MODELS_PARAM],
    label="Mondrian",
    description="Mondrian strict multidimensional partitioning (LeFevre et al.) under "
                "any list of privacy models (k, l, t, delta, cl, ...); generalized cells")
def mondrian(dataset, *, seed, models) -> Release:
    """Mondrian generalization (see the module docstring).

    Parameters
    ----------
    dataset : Dataset
    seed : numpy.random.Generator
        Unused (the partitioning is deterministic).
    models : tuple of str
        The privacy models every class satisfies (`sdceval.privacy.model_list`: text
        such as ``"k=10"``, ``"l=4,variant=distinct"``, or model objects).

    Returns
    -------
    Release
        kind ``"generalized"`` (`Release.generalized`: the generalized QIs, the
        sensitive, label and passthrough columns); ``classes`` 0..C-1, ``cells`` for
        every QI, nothing suppressed, ``sensitive_codes`` unchanged; ``info`` holds
        the number of classes,
        the achieved level of the model (min class size / min ℓ / max t / max δ) and
        ``warnings`` (e.g. a single-class result).
    """
    models = privacy.bind_models(dataset, models, "mondrian")
    part = partition(dataset, models, who="mondrian")
    for w in part.warnings:
        warnings.warn(w, stacklevel=3)
    # a household is never split on a household-level key (issue 29 item 4): its
    # members share the hull of their cells, the classes are the published combinations
    cells, widened = household_hull(dataset, part.cells)
    classes = cell_classes(cells, list(dataset.schema.qis)) if widened else part.classes
    return Release.generalized(
        dataset, generalized_frame(dataset, cells, classes), method="mondrian",
        classes=classes, cells=cells,
        info={"n_classes": part.n_classes, "models": [m.describe() for m in models],
              "achieved": achieved(dataset, models, part.classes),
              "warnings": list(part.warnings)})


def achieved(dataset, models, classes) -> dict:
    """The level each model reaches on the classes: min k / min ℓ / max t / max δ,
    keyed by the model's threshold parameter (``k``, ``l``, ...), or by the model's name
    when two models share that parameter (k-anonymity and k-map: ``k`` and ``kmap``)."""
    sens = dataset.schema.sensitive
    if any(m.needs_sensitive for m in models):
        S = dataset.hierarchy(sens).n_leaves
        codes = dataset.codes(sens)
        counts, _ = privacy.class_counts(classes, codes, S)
        Q = privacy.table_distribution(codes, S)
    else:
        counts = np.bincount(classes)[:, None]
        Q = np.ones(1)
    out = {}
    shared = {m.parameter for m in models
              if sum(o.parameter == m.parameter for o in models) > 1}
    for m in models:
        if getattr(m, "reads_cells", False):
            qis = dataset.schema.qis
            X = np.stack([dataset.codes(q) for q in qis], axis=1)
            attrs = [_Attr(dataset.hierarchy(q), dataset.codes(q)) for q in qis]
            lo, hi = class_ranges(classes, int(classes.max()) + 1, X, attrs)
            v = m.value_cells(counts, Q, lo, hi)
        else:
            v = m.value(counts, Q)
        key = m.name if m.parameter in shared else m.parameter
        out[key] = float(v.min() if m.larger_is_safer else v.max())
    return out
