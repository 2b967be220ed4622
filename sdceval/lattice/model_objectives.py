"""The privacy models' lattice objectives: their definition (`model_values`) and the
vectorized shortcuts of the built-in models' (issue 7, speed; issue 27 item 21).

A model objective (`privacy.ModelObjective`, derived into the objective registry by
`sdceval.lattice.objectives`) is, per node, the least safe kept class's `value` of the
model: the minimum when larger is safer, else the maximum; the whole table's when every
class is suppressed.  `model_values` computes it from the classes' dense sensitive
counts for any model (a user's).  The built-in models' objectives have shortcuts over
the batch's sensitive pairs (`SHORTCUTS`, by objective name), each tested equal to
`model_values` (tests/test_registry_derived.py) and to the plain per-class formulas
(tests/test_lattice_shortcuts.py):

* ``t`` and ``t_js`` compute the distance only for the kept classes that may hold a
  node's maximum — EMD and JS are convex in the class's distribution, so a class is no
  farther from the table than its farthest value alone, and a class of one value *is*
  that point mass (`_convex_max`);
* the ℓ objectives stop at a kept class of one value (ℓ = 1); δ is ∞ for a node with a
  kept class lacking a value of the table;
* ``cl`` (ℓ = 2) is r_1 / (|E| − r_1) from the classes' largest counts.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sdceval import privacy
from sdceval.lattice import class_stats
from sdceval.lattice.batch import ClassBatch

#: vectorized computations of built-in models' objectives, by objective name; an
#: objective without one is computed by `model_values`
SHORTCUTS: dict[str, Callable] = {}


def shortcut(name: str):
    """Decorator: ``fn(batch, outcome, ctx)`` computes the model objective ``name``."""
    def deco(fn):
        SHORTCUTS[name] = fn
        return fn
    return deco


def model_values(batch, outcome, ctx, model_name: str, decl) -> np.ndarray:
    """A model objective from its definition (`privacy.ModelObjective`): per node the
    least safe kept class's ``value`` (min if larger is safer, else max), the whole
    table's as one class when nothing is kept."""
    cls = privacy.model_class(model_name)
    model = ctx.memo(("model objective", decl.name), lambda: privacy.make_model(
        model_name, hierarchy=ctx.sensitive_hierarchy,
        **{**cls.placeholder_threshold(), **decl.params}))
    if model.needs_sensitive:
        per_class = class_stats.dense_chunks(batch, lambda c: model.value(c, ctx.table_dist))
        whole = model.value(ctx.table_counts[None, :], ctx.table_dist)[0]
    else:   # as the checks: a size column and Q = (1,)
        per_class = np.asarray(model.value(batch.sizes[:, None], np.ones(1)), np.float64)
        whole = model.value(np.array([[ctx.n]]), np.ones(1))[0]
    if model.larger_is_safer:
        worst = batch.node_min(np.where(outcome.kept, per_class, np.inf))
    else:
        worst = batch.node_max(np.where(outcome.kept, per_class, -np.inf))
    return np.where(class_stats.kept_classes(batch, outcome) > 0, worst, whole)


@shortcut("k")
def _k(batch, outcome, ctx):
    return outcome.k.astype(np.float64)


def _l_per_class(batch, variant):
    if variant == "distinct":
        return class_stats.distinct(batch)
    if variant == "probabilistic":
        return batch.sizes / class_stats.largest_count(batch)
    # exp is monotone: only the per-node minimum need be exponentiated, but the
    # classes left here are few
    return np.exp(class_stats.entropy(batch))


def _fewest_values(batch, outcome):
    """Per node: the fewest distinct sensitive values of a kept class (S + 1 when no
    class is kept)."""
    return batch.memo_for(outcome, "fewest", lambda: batch.node_min(
        np.where(outcome.kept, batch.pair_per_class, batch.n_sensitive + 1)))


def _l_objective(variant):
    def fn(batch, outcome, ctx):
        from sdceval.privacy import LDiversity
        whole = float(LDiversity(1.0, variant).value(ctx.table_counts[None, :],
                                                     ctx.table_dist)[0])
        fewest = _fewest_values(batch, outcome)
        if variant == "distinct":
            return np.where(fewest > batch.n_sensitive, whole, fewest.astype(np.float64))
        # a kept class with one sensitive value has ℓ = 1 in every variant, the least
        # possible: only the other nodes need the per-class values
        pure = fewest <= 1
        out = np.ones(batch.n_nodes)
        rest = ~pure
        if not rest.any():
            return out
        # the other nodes' kept classes only (every node stays, most without classes)
        sub = batch.select_classes(np.flatnonzero(outcome.kept & batch.class_mask(rest)))
        v = sub.node_min(_l_per_class(sub, variant))[rest]
        out[rest] = np.where(np.isfinite(v), v, whole)
        return out
    return fn


for _v in ("distinct", "probabilistic", "entropy"):
    shortcut(f"l_{_v}")(_l_objective(_v))


@shortcut("cl")
def _cl(batch, outcome, ctx):
    """Recursive (c,ℓ)'s objective at its ℓ = 2: a class's tail r_2 + … + r_m is its
    size minus r_1, so its achieved c is r_1 / (|E| − r_1) (∞ for one value), from the
    classes' largest counts without a dense matrix."""
    def achieved(top, size):
        return np.divide(top, size - top, out=np.full_like(top, np.inf),
                         where=size > top)
    top = ctx.table_counts.max()
    whole = achieved(np.array([top], float), np.array([ctx.table_counts.sum()], float))
    worst = batch.node_max(np.where(outcome.kept, achieved(
        class_stats.largest_count(batch), batch.sizes.astype(np.float64)), -np.inf))
    return np.where(class_stats.kept_classes(batch, outcome) > 0, worst, whole[0])


def t_per_class(batch, ctx, distance):
    Q = ctx.table_dist
    if distance == "js":
        return class_stats.js(batch, Q)
    model = ctx.t_model("emd")
    if model.ground == "ordered":
        return class_stats.dense_chunks(batch, lambda c: model.value(c, Q))
    if model.ground == "hierarchical":
        return class_stats.emd_hierarchical(batch, Q, ctx.sensitive_hierarchy.node_of)
    # equal ground distance: the one-level hierarchy
    return class_stats.emd_hierarchical(
        batch, Q, [np.arange(len(Q)), np.zeros(len(Q), dtype=np.int64)])


def _delta(batch, outcome, ctx):
    """A kept class lacking a value of the table has δ = ∞, so only nodes whose kept
    classes all have every value need the per-class values."""
    n_values = int((ctx.table_dist > 0).sum())
    fewest = _fewest_values(batch, outcome)
    out = np.where(fewest > batch.n_sensitive, 0.0, np.inf)  # nothing kept: the '*' class
    full = fewest == n_values
    if full.any():
        sub = batch.subset(full)
        kept = outcome.kept[batch.class_mask(full)]
        v = sub.node_max(np.where(kept, class_stats.delta(sub, ctx.table_dist), -np.inf))
        out[full] = v
    return out


def _point_distances(ctx, distance: str) -> tuple:
    """``(S,)``: the distance from the table of a class holding one sensitive value
    only, per value (`t_per_class` of one-record classes; on a larger class of one
    value it gives the same up to rounding, ~1e-16), and its
    `class_stats.set_max_tables`."""
    def compute():
        S = len(ctx.table_dist)
        one = np.arange(S, dtype=np.int64)
        points = ClassBatch(np.zeros((1, ctx.d), dtype=np.int64),
                            np.array([0, S], dtype=np.int64), np.ones(S, dtype=np.int64),
                            np.zeros((ctx.d, S), dtype=np.int64), one, one,
                            np.ones(S, dtype=np.int64), S)
        d = t_per_class(points, ctx, distance)
        return d, class_stats.set_max_tables(d)
    return ctx.memo(("point distances", distance), compute)


def _convex_max(batch, outcome, ctx, distance: str) -> np.ndarray:
    """max over each node's kept classes of a distance (EMD, JS) convex in the class's
    distribution P, without most of the per-class values.

    P is a convex combination of the point masses on the class's values, so its
    distance is at most ``U = max_{s ∈ P} d(point_s)``, and a class of one value *is*
    a point mass.  The largest ``d(point_s)`` among a node's kept one-value classes is
    therefore a lower bound ``L`` of the node's maximum, and only its kept classes of
    several values with ``U > L`` can exceed it: their distances are computed, no
    other (on adult-train's lattice about 5 % of the classes and 13 % of the pairs).
    Equal to the maximum of every kept class's `t_per_class` up to rounding (a class
    of one value gets the exact point distance, where the per-class formula may leave
    ~1e-16)."""
    point, tables = _point_distances(ctx, distance)
    present, multi, multi_node, multi_sets = _convex_parts(batch, outcome)
    best = np.where(present, point[None, :], -np.inf).max(axis=1)
    if len(multi):
        U = (np.maximum.reduceat(point[batch.pair_value], batch.pair_starts)[multi]
             if multi_sets is None else class_stats.set_max(multi_sets, tables))
        need = multi[U > best[multi_node]]
        if len(need):
            sub = batch.select_classes(need)
            best = np.maximum(best, sub.node_max(t_per_class(sub, ctx, distance)))
    return np.where(best == -np.inf, 0.0, best)  # nothing kept: the '*' class, Q itself


def _convex_parts(batch, outcome) -> tuple:
    """What `_convex_max` needs of the classes whatever the distance: per node the
    values of its kept one-value classes (m, S) booleans; its kept classes of several
    values, their nodes and value sets (`class_stats.value_sets`, None past 52 values)."""
    def compute():
        single = batch.pair_per_class == 1
        one = np.flatnonzero(outcome.kept & single)
        cell = batch.node_of_class[one] * batch.n_sensitive + batch.pair_value[
            batch.pair_starts[one]]
        present = np.bincount(cell, minlength=batch.n_nodes * batch.n_sensitive).reshape(
            batch.n_nodes, batch.n_sensitive) > 0
        multi = np.flatnonzero(outcome.kept & ~single)
        sets = class_stats.value_sets(batch)
        return present, multi, batch.node_of_class[multi], (None if sets is None
                                                             else sets[multi])
    return batch.memo_for(outcome, "convex parts", compute)


def _distance_objective(kind):
    def fn(batch, outcome, ctx):
        if kind == "delta":
            return _delta(batch, outcome, ctx)
        if not batch.n_classes:
            return np.zeros(batch.n_nodes)
        return _convex_max(batch, outcome, ctx, "js" if kind == "t_js" else "emd")
    return fn


for _kind in ("t", "t_js", "delta"):
    shortcut(_kind)(_distance_objective(_kind))
