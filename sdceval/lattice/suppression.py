"""Suppression rules: which classes of a lattice node are suppressed, and is it feasible.

A rule takes the classes of nodes (a `ClassBatch`) and the privacy models to enforce,
and returns per class whether it is *kept* and per node the suppressed record count,
whether the node is *feasible* (every kept class satisfies every model, within the
limit) and its achieved ``k`` (smallest kept class).  Suppressed records are published
as ``*`` rows (every QI at its hierarchy's root; Dewri et al. 2009 §3), so the
objectives (`sdceval.lattice.objectives`) charge them accordingly.

``dewri`` — Dewri et al. 2010 §6 "Node evaluation" (DEWRI.md §1.8), the default for
    the paper reproductions.  With ``E_i`` the records in classes of size ``i`` and ``η``
    the limit, the classes of ``E_1..E_j`` are suppressed, ``j`` the smallest integer with
    ``Σ_{i=1}^{j+1} |E_i| > η``; the node is then ``(j+1)``-anonymous.  Equivalently
    ``s* = j + 1`` is the smallest class size with ``R(s*) > η``, ``R(s)`` the records in
    classes of size ≤ ``s``; classes smaller than ``s*`` are suppressed.  If ``R`` never
    exceeds ``η`` (``η ≥ N``), only the largest classes are kept (the rule never
    publishes ``*`` rows only).  The rule itself looks at class sizes only; the node is
    feasible when every kept class satisfies every model (k-anonymity: ``s* ≥ k``).
``arx`` — ARX's rule (Prasser & Kohlmayer; ARX's ``HashGroupify``): every class that
    violates some model is suppressed (an *outlier*), and the node is feasible when the
    suppressed records number at most ``⌊s·N⌋``.  Without models nothing is suppressed.

The suppression limit is one concept with one name in every layer, ``max_suppression``
(η or s; the CLI's ``--max-suppression``, experiment files' ``max_suppression``, the
``generalization`` method's parameter, `LatticeProblem`'s argument, a rule's attribute),
declared once in `sdceval.core.suppression` (light, so that the command line reads it
without loading the lattice): `MAX_SUPPRESSION`, of type `SuppressionLimit` — a fraction of the N
records if < 1, else a whole record count (so ``1`` means one record); default
`DEFAULT_MAX_SUPPRESSION` (1 %, Dewri et al.'s η).  ``eta`` names only its value in
records (`limit_records`).  Both rules compare integer record counts with ``⌊η⌋`` (for
Dewri's rule ``R > η`` and ``R > ⌊η⌋`` coincide on integer counts).  The rules are a
registry (`RULES`, `register_rule`); the rule parameter (`SUPPRESSION_RULE`, default
`DEFAULT_RULE`) reads its choices from it.

Monotonicity (what the optimal search may prune with, `sdceval.lattice.search`): under
``arx`` feasibility is monotone under generalization when every model is
``monotone_suppression``; under ``dewri`` only k-anonymity is (``s*`` can only grow
when classes merge, DEWRI.md §1.8); with a zero limit both rules reduce to "every
class satisfies every model", monotone when every model is ``monotone_generalization``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sdceval.core.registry import Param, ParamType, RegistrationError, Registry
from sdceval.core.suppression import (DEFAULT_MAX_SUPPRESSION, DEFAULT_RULE,  # noqa: F401
                                      MAX_SUPPRESSION, limit_records)
from sdceval.lattice.batch import ClassBatch

#: the suppression rules by name (`register_rule`)
RULES: Registry = Registry("suppression rule")
#: largest nodes × (η + 1) histogram of Dewri's rule on a batch (else one sort)
_HISTOGRAM_CELLS = 1 << 24


class RuleName(ParamType):
    """A suppression rule's name, checked against `RULES` when parsed (so a rule
    registered later is accepted)."""

    name = "suppression rule"

    def parse(self, raw, where: str) -> str:
        RULES.get_spec(str(raw))
        return str(raw)


def suppression_options(opts: dict) -> tuple[str, float]:
    """``(rule, max_suppression)`` of an options mapping (an experiment job, the CLI's
    options), checked by their one declaration, with their one default each."""
    rule = SUPPRESSION_RULE.parse(opts.get("rule", DEFAULT_RULE))
    limit = opts.get("max_suppression", DEFAULT_MAX_SUPPRESSION)
    return rule, MAX_SUPPRESSION.type.parse(limit, "max_suppression")


@dataclass(frozen=True)
class Outcome:
    """A rule applied to a batch.

    Attributes
    ----------
    kept : ndarray of bool, shape (C,)
    suppressed : ndarray of int64, shape (m,)
        Suppressed records per node.
    feasible : ndarray of bool, shape (m,)
    k : ndarray of int64, shape (m,)
        Smallest kept class (Dewri: ``s* = j + 1``); ``N`` when every record is
        suppressed (the ``*`` rows form one class).
    satisfied : ndarray of bool, shape (C,)
        Every model holds for the class (all True without models).
    dropped, dropped_node : ndarray of int64
        The suppressed classes (increasing) and their batch nodes.
    """

    kept: np.ndarray
    suppressed: np.ndarray
    feasible: np.ndarray
    k: np.ndarray
    satisfied: np.ndarray
    dropped: np.ndarray
    dropped_node: np.ndarray


def class_satisfied(batch: ClassBatch, models: Sequence, table_dist) -> np.ndarray:
    """Per class: every model holds (models' ``satisfied(counts, Q)`` on the class's
    sensitive counts, or on its size for models without a sensitive attribute)."""
    ok = np.ones(batch.n_classes, dtype=bool)
    dense = None
    for m in models:
        if reads_cells(m):   # k-map with a population table: the classes' nodes
            v = m.value_nodes(batch.sizes[:, None], table_dist,
                              batch.levels[batch.node_of_class], batch.node_ids)
            ok &= np.asarray(m.satisfied_level(v), dtype=bool)
        elif needs_sensitive(m):
            if dense is None:
                dense = batch.sensitive_matrix()
            ok &= np.asarray(m.satisfied(dense, table_dist), dtype=bool)
        else:
            ok &= np.asarray(m.satisfied(batch.sizes[:, None], table_dist), dtype=bool)
    return ok


def needs_sensitive(model) -> bool:
    """Whether a model reads a class's sensitive counts (else its size only)."""
    return bool(getattr(model, "needs_sensitive", True))


def reads_cells(model) -> bool:
    """Whether a model judges a class by its generalized values, not its counts alone
    (`sdceval.privacy.PrivacyModel.reads_cells`)."""
    return bool(getattr(model, "reads_cells", False))


def _size_satisfied(sizes: np.ndarray, models: Sequence) -> np.ndarray:
    ok = np.ones(len(sizes), dtype=bool)
    for m in models:
        ok &= np.asarray(m.satisfied(sizes[:, None], None), dtype=bool)
    return ok


def dewri_threshold(sizes: np.ndarray, eta: float) -> int:
    """``s* = j + 1`` of Dewri's rule for one node's class ``sizes``: the smallest
    class size with ``R(s*) > η`` (``R(s)`` the records in classes of size ≤ ``s``;
    the first position of the sorted sizes whose running total exceeds ``η``), the
    largest size when ``R`` never does (``η ≥ N``)."""
    ss = np.sort(np.asarray(sizes))
    over = np.flatnonzero(np.cumsum(ss) > eta)
    return int(ss[over[0]] if len(over) else ss[-1])


class SuppressionRule:
    """Interface (module docstring).  ``max_suppression`` as in `limit_records`.
    Subclasses declare ``name`` and ``description`` and register with `register_rule`."""

    name = ""
    description = ""
    #: the rule's parameters (the limit; declared once, `MAX_SUPPRESSION`)
    params = (MAX_SUPPRESSION,)

    def __init__(self, max_suppression: float = 0.0):
        limit_records(max_suppression, 1)  # validates
        self.max_suppression = max_suppression

    def records(self, n: int) -> int:
        return limit_records(self.max_suppression, n)

    def apply(self, batch: ClassBatch, models: Sequence, table_dist, n: int) -> Outcome:
        raise NotImplementedError

    def feasible_sizes(self, sizes: np.ndarray, models: Sequence, n: int) -> bool:
        """One node's `Outcome.feasible` from its class sizes alone, for models that
        read only a class's size (`needs_sensitive` false): the searches' check.  This
        default applies the rule to a batch of the one node; the rules here override
        it without the batch or the per-class outcome arrays."""
        sizes = np.asarray(sizes, dtype=np.int64)
        batch = ClassBatch(np.zeros((1, 0), dtype=np.int64),
                           np.array([0, len(sizes)], dtype=np.int64), sizes,
                           np.zeros((0, len(sizes)), dtype=np.int64))
        return bool(self.apply(batch, models, None, n).feasible[0])

    def feasibility_monotone(self, models: Sequence, n: int) -> bool:
        """Whether feasibility can only be gained by generalizing (module docstring)."""
        raise NotImplementedError

    def suppresses(self, n: int) -> bool:
        """Whether a feasible node may have suppressed records."""
        return self.records(n) > 0

    def describe(self) -> str:
        return f"{self.name} (limit {self.max_suppression:g})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_suppression={self.max_suppression!r})"


def _dropped(batch: ClassBatch, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The suppressed classes, their nodes and the suppressed records per node (summed
    over those classes only: under Dewri's rule they are few)."""
    sup = np.flatnonzero(~kept)
    node = batch.node_of(sup)
    records = np.bincount(node, weights=batch.sizes[sup], minlength=batch.n_nodes)
    return sup, node, records.astype(np.int64)


def _kept_min(batch: ClassBatch, kept: np.ndarray, n: int) -> np.ndarray:
    k = batch.node_min(np.where(kept, batch.sizes, np.inf))
    return np.where(np.isfinite(k), k, n).astype(np.int64)


def register_rule(cls):
    """Class decorator: add a `SuppressionRule` subclass to `RULES` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, SuppressionRule)):
        raise RegistrationError(f"register_rule({cls!r}): not a SuppressionRule subclass")
    return RULES.add(cls.__dict__.get("name", ""), cls)


@register_rule
class DewriRule(SuppressionRule):
    """Dewri et al. 2010 §6 (module docstring)."""

    name = "dewri"
    description = ("suppress the classes E_1..E_j for the smallest j with "
                   "|E_1|+...+|E_{j+1}| > η (Dewri et al. 2010 §6)")

    def apply(self, batch, models, table_dist, n):
        eta = self.records(n)
        sizes = batch.sizes
        if batch.n_nodes == 1:  # the search's case: one sort of one node's sizes
            s_star = np.array([dewri_threshold(sizes, eta)], dtype=np.int64)
        elif batch.n_nodes * (eta + 1) <= _HISTOGRAM_CELLS:
            s_star = self._by_histogram(batch, eta)
        else:
            s_star = self._by_sorting(batch, eta)
        kept = sizes >= np.repeat(s_star, np.diff(batch.offsets))
        sat = class_satisfied(batch, models, table_dist)
        sup, node, suppressed = _dropped(batch, kept)
        if models:
            bad = batch.node_sum((kept & ~sat).astype(np.float64)) > 0
        else:
            bad = np.zeros(batch.n_nodes, dtype=bool)
        return Outcome(kept, suppressed, ~bad, s_star, sat, sup, node)

    def feasible_sizes(self, sizes, models, n):
        if not models:
            return True
        kept = sizes >= dewri_threshold(sizes, self.records(n))
        return not bool((kept & ~_size_satisfied(sizes, models)).any())

    @staticmethod
    def _by_histogram(batch, eta: int) -> np.ndarray:
        """``s*`` per node from ``R(s)`` for ``s ≤ η`` (a node × size histogram of the
        records in small classes); past ``η`` it is the smallest larger class, whose
        own records already exceed ``η``; with no larger class, the largest class."""
        sizes, node, m = batch.sizes, batch.node_of_class, batch.n_nodes
        cells = eta + 2  # sizes 0..η, and one bin for every larger class
        count = np.bincount(node * cells + np.minimum(sizes, eta + 1),
                            minlength=m * cells).reshape(m, cells)
        hist = count[:, :eta + 1] * np.arange(eta + 1)  # records in classes of each size
        over = np.cumsum(hist, axis=1) > eta
        first = np.where(over.any(axis=1), over.argmax(axis=1), -1)
        out = first.astype(np.int64)
        rest = np.flatnonzero(first < 0)
        if len(rest):
            big = batch.node_min(np.where(sizes > eta, sizes, np.inf))[rest]
            largest = batch.node_max(sizes)[rest]
            out[rest] = np.where(np.isfinite(big), big, largest)
        return out

    @staticmethod
    def _by_sorting(batch, eta: int) -> np.ndarray:
        """``s*`` per node by sorting each node's class sizes."""
        sizes = batch.sizes
        node = batch.node_of_class
        order = np.lexsort((sizes, node))
        ss = sizes[order]
        starts = batch.offsets[:-1]
        cum = np.cumsum(ss)
        base = np.zeros(batch.n_nodes, dtype=np.int64)
        nonempty = batch.offsets[1:] > starts
        base[nonempty] = (cum[starts[nonempty]] - ss[starts[nonempty]])
        within = cum - base[node[order]]
        # first sorted class whose cumulative count exceeds η; none: keep the largest
        pos = np.where(within > eta, np.arange(len(ss)), len(ss))
        first = np.full(batch.n_nodes, len(ss), dtype=np.int64)
        if len(ss):
            first[nonempty] = np.minimum.reduceat(pos, starts[nonempty])
        last = batch.offsets[1:] - 1
        pick = np.where(first < len(ss), first, last)
        s_star = np.zeros(batch.n_nodes, dtype=np.int64)
        s_star[nonempty] = ss[pick[nonempty]]
        return s_star

    def feasibility_monotone(self, models, n):
        if not self.suppresses(n):
            return all(getattr(m, "monotone_generalization", False) for m in models)
        return all(getattr(m, "name", "") == "k" for m in models)


@register_rule
class ArxRule(SuppressionRule):
    """ARX's rule (module docstring)."""

    name = "arx"
    description = ("suppress every class violating a privacy model, feasible when at "
                   "most the limit (ARX)")

    def apply(self, batch, models, table_dist, n):
        sat = class_satisfied(batch, models, table_dist)
        sup, node, suppressed = _dropped(batch, sat)
        feasible = suppressed <= self.records(n)
        return Outcome(sat, suppressed, feasible, _kept_min(batch, sat, n), sat, sup, node)

    def feasible_sizes(self, sizes, models, n):
        sat = _size_satisfied(sizes, models)
        return int(sizes[~sat].sum()) <= self.records(n)

    def feasibility_monotone(self, models, n):
        flag = "monotone_suppression" if self.suppresses(n) else "monotone_generalization"
        return all(getattr(m, flag, False) for m in models)


def make_rule(name: str, max_suppression: float = 0.0) -> SuppressionRule:
    """A suppression rule of `RULES` by name (``dewri``, ``arx``) with its limit."""
    return RULES.get_spec(name)(max_suppression)


#: the rule parameter (declared after the built-in rules registered, so that its
#: default is checked against them)
SUPPRESSION_RULE = Param(
    "suppression_rule", RuleName(), DEFAULT_RULE,
    description="dewri: suppress the classes E_1..E_j for the smallest j with "
                "|E_1|+...+|E_{j+1}| > limit (Dewri et al. 2010 §6); arx: suppress every "
                "class violating the models, at most the limit")
