"""Objectives of lattice nodes, computed from their class tables in one pass (issue 7).

Every objective maps a `ClassBatch` (the classes of ``m`` nodes) and a suppression
`Outcome` (which classes are kept) to one value per node.  Suppressed records are
published as ``*`` rows; the objectives treat them as stated below.  The privacy models' objectives (``k`` …
``delta``, ``cl``, a user's model) are derived from the model registry
(`privacy.ModelObjective`); their computations are in `sdceval.lattice.model_objectives`.  Notation: ``E``
ranges over the *kept* classes of a node, ``|E|`` its size, ``c_E(s)`` the records of
``E`` with sensitive value ``s``, ``N`` the records, ``d`` the QIs, ``N_sup`` the
suppressed records.  Over an empty set of kept classes (everything suppressed) the
per-class objectives take the value of the ``*`` rows as one class of ``N`` records.

=====================  =====  ==================================================================
name                   goal   definition
=====================  =====  ==================================================================
``k``                  max    ``min_E |E|`` (Dewri's rule: ``j + 1``)
``suppressed``         min    ``N_sup``
``classes``            —      number of kept classes
``l_distinct``         max    ``min_E #{s : c_E(s) > 0}`` (Dewri et al. 2010 §7)
``l_probabilistic``    max    ``min_E |E| / max_s c_E(s)`` (Li & Li 2009 §2.2)
``l_entropy``          max    ``min_E exp(H(E))``, ``H = −Σ_s p ln p`` (Machanavajjhala et al.)
``t``                  min    ``max_E EMD(P_E, Q)``, ground distance as `TCloseness` "auto"
``delta``              min    ``max_E max_s |ln(P_E(s)/Q(s))|`` (Brickell & Shmatikov)
``s_k``                max    ``S_k = Σ_E |E|²`` = Σ over kept tuples of their class size (D10 §7)
``s_l``                max    ``S_ℓ = Σ_E Σ_s c_E(s)²`` = Σ over kept tuples of the count of
                              their own sensitive value in their class (D10 §7)
``glm``                min    ``Σ_E |E| Σ_q loss_q(E) + d·N_sup`` (Iyengar's loss per cell,
                              `sdceval.core.hierarchy.cell_loss`; un-normalized, DEWRI A15)
``glm_normalized``     min    ``glm / (N·d)`` (in [0, 1])
``cm``                 min    ``Σ_E (|E| − max_y c_E(y)) + N_sup`` records penalized (label y;
                              Iyengar's classification metric as a count, DEWRI A16)
``cm_fraction``        min    ``cm / N``
``discernibility``     min    ``Σ_E |E|² + N·N_sup`` (Bayardo & Agrawal)
``avg_class_size``     min    ``(N − N_sup) / #E`` (LeFevre et al.'s C_avg without /k)
``s_k_all``            —      ``Σ|E|²`` over every class, suppressed ones included
``s_l_all``            —      ``Σ_E Σ_s c_E(s)²`` over every class (these two bound S_k and
                              S_ℓ in the exact PBG search, `sdceval.pbg.exact`)
``nu_entropy``         min    ARX's non-uniform entropy, monotonic variant
                              (``MetricMDNUEntropyPrecomputed``; `sdceval.lattice.entropy`):
                              ``Σ_q Σ_records −log2 P(leaf | its value at the node's
                              level)``, frequencies of the whole input, every record
                              (suppressed ones too) charged, so a function of the levels
``nu_entropy_nm``      min    the non-monotonic variant (``MetricMDNUNMEntropyPrecomputed``):
                              adds, per QI, ``Σ_g c(g) log2(S/c(g))`` over the ``S``
                              suppressed records by their generalized value ``g``
=====================  =====  ==================================================================

Each objective also says whether it is *monotone*: never smaller (in its goal's sense:
never better) at a more general node, under a given rule and models.  The loss metrics
are monotone without suppression (merging classes and coarser cells only add loss); a
suppressed record costs them the most, and generalizing can un-suppress it, so with
suppression they are not — except ``nu_entropy``, a function of the levels alone,
monotone always (ARX declares it so).  Some have a cheap *lower bound* from the levels
alone, a sum of per-QI, per-level terms (``glm``: every record's generalization loss
with nothing suppressed; ``nu_entropy_nm``: the monotonic variant; ``nu_entropy``: its
own exact value, ``bound_exact``), monotone and ≤ the objective, which the optimal
search uses to skip nodes.

Shortcuts, each tested against the plain definition (``tests/test_lattice_shortcuts.py``):
``t`` and ``t_js`` compute the distance only for the kept classes that may hold a node's
maximum — EMD and JS are convex in the class's distribution, so a class is no farther
from the table than its farthest value alone, and a class of one value *is* that point
mass (`sdceval.lattice.model_objectives`); the ℓ objectives stop at a kept class of one value (ℓ = 1); sums
over kept classes are sums over all classes minus the few suppressed ones, S_ℓ's as
segment sums over each node's pairs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Sequence

import numpy as np

from sdceval import privacy
from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.hierarchy import cell_loss
from sdceval.core.registry import RegistrationError, Registry
from sdceval.lattice import class_stats
from sdceval.lattice.batch import ClassBatch, node_segments as _node_segments
from sdceval.lattice.model_objectives import (SHORTCUTS, model_values,  # noqa: F401
                                              t_per_class as _t_per_class)
from sdceval.lattice.suppression import Outcome, SuppressionRule


class LatticeContext:
    """What the objectives need besides the classes: record and QI counts, the table's
    sensitive distribution Q, per-QI per-level cell losses, ARX's entropy tables.

    Built once per engine; everything is a lookup table over hierarchy nodes.
    """

    def __init__(self, engine, dataset):
        self.engine = engine
        self.dataset = dataset
        self.n = int(engine.n)
        self.d = len(engine.qis)
        self.hierarchies = list(engine.hierarchies)
        self.sensitive = engine.sensitive
        self.table_dist = None
        self.table_counts = None
        self.sensitive_hierarchy = None
        self._memo: dict = {}
        if engine.sensitive is not None:
            b = engine.bottom
            counts = np.bincount(b.pair_value, weights=b.pair_count,
                                 minlength=b.n_sensitive)
            self.table_counts = counts.astype(np.int64)
            self.table_dist = counts / counts.sum()
            self.sensitive_hierarchy = dataset.hierarchy(engine.sensitive)

    def memo(self, key, compute):
        """``compute()`` once per context (values that depend on the data alone)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def cell_losses(self) -> list[list[np.ndarray]]:
        """``[q][level][node id]``: Iyengar's loss of that node's cell of QI ``q``."""
        return [[cell_loss(h, h.lo[j], h.hi[j]) for j in range(h.height + 1)]
                for h in self.hierarchies]

    @cached_property
    def flat_cell_losses(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per QI ``(flat, offsets)``: the losses of all its levels back to back, level
        ``j``'s at ``offsets[j]:``."""
        out = []
        for losses in self.cell_losses:
            offs = np.r_[0, np.cumsum([len(a) for a in losses])[:-1]].astype(np.int64)
            out.append((np.concatenate(losses), offs))
        return out

    @cached_property
    def level_losses(self) -> np.ndarray:
        """``(d, max height + 1)``: Σ over the records of QI ``q``'s cell loss at each
        level, nothing suppressed (padded with +inf beyond a QI's height)."""
        out = np.full((self.d, max(h.height for h in self.hierarchies) + 1), np.inf)
        bottom = self.engine.bottom
        for q, (h, losses) in enumerate(zip(self.hierarchies, self.cell_losses)):
            leaf = bottom.node_ids[q]
            for j in range(h.height + 1):
                out[q, j] = float(losses[j][h.node_of[j][leaf]] @ bottom.sizes)
        return out

    @cached_property
    def entropy(self):
        from sdceval.lattice.entropy import EntropyTables  # only the ARX metrics need it
        return EntropyTables(self.dataset, self.engine.qis)

    def t_model(self, distance: str = "emd"):
        from sdceval.privacy import TCloseness
        return TCloseness(1.0, distance, "auto", self.sensitive_hierarchy)


#: an objective is minimized, maximized, or (None) a count reported only
GOALS = ("min", "max", None)


@dataclass(frozen=True)
class Objective:
    """One objective (module docstring table).

    ``compute(batch, outcome, ctx) -> (m,)``; ``goal`` ``min`` or ``max`` (``None``: a
    count reported, not optimized); ``monotone(rule, models, n) -> bool``; ``bound(ctx)
    -> (d, H + 1)`` additive per-QI, per-level terms of a lower bound in the minimized
    sense (a node's bound is ``Σ_q bound[q, level_q]``) that never decreases upward,
    or None.
    """

    name: str
    goal: str | None
    compute: Callable
    description: str
    needs: tuple = ()
    monotone: Callable = field(default=lambda rule, models, n: False)
    bound: Callable | None = None
    #: whole numbers (counts), reported as integers
    integer: bool = False
    #: the bound is the objective's value, to the last bit (an objective of the levels
    #: alone): ``Σ_q bound[q, level_q]`` summed left to right from 0.0 in QI order
    #: (the search then needs no class table for the value)
    bound_exact: bool = False
    #: objectives take no parameters (the typed-parameter slot of every registry entry)
    params: tuple = ()
    #: the display name (`sdceval.core.glossary`)
    label: str = ""
    #: the privacy model the objective is derived from (`privacy.ModelObjective`), or ""
    model: str = ""

    def minimized(self, values: np.ndarray) -> np.ndarray:
        """Values in the minimized sense (negated for ``max`` objectives)."""
        return -values if self.goal == "max" else values


#: the lattice objectives by name (`register_objective`; ``sdceval list objectives``)
OBJECTIVES: Registry = Registry("lattice objective")


def register_objective(name, goal, description, needs=(), monotone=None, bound=None,
                       integer=False, bound_exact=False, label=""):
    """Decorator: register ``fn(batch, outcome, ctx) -> (m,)`` as objective ``name``,
    shown to people as ``label`` (`Objective` says what each argument means); a name
    registered twice is refused."""
    if goal not in GOALS:
        raise RegistrationError(f"objective {name!r}: goal must be one of "
                                f"{', '.join(map(str, GOALS))}, got {goal!r}")

    def deco(fn):
        OBJECTIVES.add(name, Objective(name, goal, fn, description, tuple(needs),
                                       monotone or (lambda rule, models, n: False), bound,
                                       integer, bound_exact, label=label))
        return fn
    return deco


_register = register_objective


def _loss_monotone(rule: SuppressionRule, models, n) -> bool:
    # a feasible node suppresses nothing, so only coarser cells and merged classes count
    return not rule.suppresses(n)


def _kept_sum(batch, outcome, per_class, key=None):
    """Σ over each node's kept classes of an *integer-valued* per-class array (so that
    the sum over every class minus the few suppressed ones is exact); ``key`` shares the
    sum over every class between objectives."""
    total = (batch.node_sum(per_class) if key is None
             else batch.memo(("all", key), lambda: batch.node_sum(per_class)))
    sup = outcome.dropped
    if len(sup):
        total = total - np.bincount(outcome.dropped_node, minlength=batch.n_nodes,
                                    weights=np.asarray(per_class, dtype=np.float64)[sup])
    return total


# -- the privacy models' objectives, derived from the model registry -----------------------
#: the model class each derived objective was derived from
_DERIVED: dict[str, type] = {}


def _derive(model_name: str, cls) -> None:
    """Register the objectives ``cls`` yields (`PrivacyModel.lattice_objectives`): called
    for every model, now and when one is registered later (a user's)."""
    for decl in cls.lattice_objectives():
        stale = OBJECTIVES.get(decl.name)
        if stale is not None and stale.model and \
                privacy.MODELS.get(stale.model) is not _DERIVED.get(decl.name):
            OBJECTIVES.remove(decl.name)   # its model was removed (and registered anew)

        def compute(batch, outcome, ctx, decl=decl):
            fast = SHORTCUTS.get(decl.name)   # a built-in model's vectorized computation
            if fast is not None:
                return fast(batch, outcome, ctx)
            return model_values(batch, outcome, ctx, model_name, decl)
        _DERIVED[decl.name] = cls
        OBJECTIVES.add(decl.name, Objective(
            decl.name, "max" if cls.larger_is_safer else "min", compute,
            decl.description, needs=("sensitive",) if cls.needs_sensitive else (),
            integer=decl.integer, label=decl.label, model=model_name))


def _underive(model_name: str, cls) -> None:
    """Drop the objectives of a model that was removed."""
    for name in [n for n, o in OBJECTIVES.items() if o.model == model_name]:
        OBJECTIVES.remove(name)
        _DERIVED.pop(name, None)


privacy.MODELS.watch(_derive, removed=_underive)


@_register("suppressed", "min", "suppressed records", integer=True,
           label="suppressed records")
def _suppressed(batch, outcome, ctx):
    return outcome.suppressed.astype(np.float64)


@_register("classes", None, "number of kept equivalence classes", integer=True)
def _classes(batch, outcome, ctx):
    return class_stats.kept_classes(batch, outcome)


@_register("s_k", "max", label="S_k (sum of class sizes)",
           description="S_k: sum over kept tuples of their class size (Σ|E|²)",
           integer=True)
def _s_k(batch, outcome, ctx):
    return _kept_sum(batch, outcome, _size_squares(batch), "size_squares")


def _size_squares(batch) -> np.ndarray:
    return batch.memo("size_squares", lambda: batch.sizes.astype(np.float64) ** 2)


def _count_squares(batch) -> np.ndarray:
    """``c²`` of every sensitive pair (int64: exact)."""
    return batch.memo("count_squares", lambda: batch.pair_count * batch.pair_count)


def _count_square_totals(batch) -> np.ndarray:
    """``Σ_E Σ_s c_E(s)²`` over each node's classes: one segment sum over the pairs (a
    node's pairs are contiguous), not a per-class sum first."""
    def compute():
        bounds = np.append(batch.pair_starts, len(batch.pair_class))[batch.offsets]
        return _node_segments(np.add, _count_squares(batch), bounds, 0).astype(np.float64)
    return batch.memo(("all", "count_squares"), compute)


@_register("s_l", "max", label="S_ℓ (sum of sensitive counts)",
           description="S_ℓ: sum over kept tuples of the count of their sensitive value "
           "in their class (Σ_E Σ_s c²)", needs=("sensitive",), integer=True)
def _s_l(batch, outcome, ctx):
    total = _count_square_totals(batch)
    sup = outcome.dropped
    if len(sup):  # minus the suppressed classes' pairs (few)
        pairs, n_pairs = batch.pairs_of(sup)
        total = total - np.bincount(np.repeat(outcome.dropped_node, n_pairs),
                                    weights=_count_squares(batch)[pairs].astype(np.float64),
                                    minlength=batch.n_nodes)
    return total


@_register("s_k_all", None, "Σ|E|² over every class, suppressed ones included (an upper "
           "bound of S_k that never decreases upward: merging classes adds 2|A||B|)",
           integer=True)
def _s_k_all(batch, outcome, ctx):
    return batch.memo(("all", "size_squares"), lambda: batch.node_sum(_size_squares(batch)))


@_register("s_l_all", None, "Σ_E Σ_s c_E(s)² over every class, suppressed ones included (an "
           "upper bound of S_ℓ that never decreases upward)", needs=("sensitive",),
           integer=True)
def _s_l_all(batch, outcome, ctx):
    return _count_square_totals(batch)


def _minority(batch) -> np.ndarray:
    """Per class, the records whose label is not the class's majority label."""
    if batch.label_class is None:
        batch.label_matrix()  # raises the message
    # label pairs are sorted by class and every class has one: the majority count is a
    # maximum over each class's run
    top = np.maximum.reduceat(batch.label_count, batch.label_starts).astype(np.float64)
    return batch.sizes - top


def _class_loss(batch, ctx, which: np.ndarray, node: np.ndarray) -> np.ndarray:
    """Σ_q loss_q of the cells of the classes ``which`` (indices; ``node``: their
    nodes), at their node's levels: one gather per QI from its flat table of all levels'
    losses."""
    lv = batch.levels[node]
    ids = batch.ids_of(which)
    out = np.zeros(len(lv))
    for q, (flat, offs) in enumerate(ctx.flat_cell_losses):
        out += flat[offs[lv[:, q]] + ids[q]]
    return out


def _glm_bound(ctx):
    return ctx.level_losses


@_register("glm", "min", "general loss metric, un-normalized: Σ over records and QIs of "
           "Iyengar's cell loss, suppressed records 1 per QI",
           monotone=_loss_monotone, bound=_glm_bound)
def _glm(batch, outcome, ctx):
    return batch.memo_for(outcome, "glm", lambda: _glm_total(batch, outcome, ctx))


def _glm_total(batch, outcome, ctx):
    # every record's loss at the node's levels is a per-level total; only the
    # suppressed classes (few) need their own losses, replaced by d per record
    total = _glm_bound(ctx)[np.arange(ctx.d), batch.levels].sum(axis=1)
    sup, node = outcome.dropped, outcome.dropped_node
    if len(sup):
        sub = _class_loss(batch, ctx, sup, node) * batch.sizes[sup]
        total = total - np.bincount(node, weights=sub, minlength=batch.n_nodes)
    return total + ctx.d * outcome.suppressed


@_register("glm_normalized", "min", "glm / (N · d), in [0, 1]", label="GLM, normalized", monotone=_loss_monotone,
           bound=lambda ctx: ctx.level_losses / (ctx.n * ctx.d))
def _glm_normalized(batch, outcome, ctx):
    return _glm(batch, outcome, ctx) / (ctx.n * ctx.d)


@_register("cm", "min", "classification metric as a count: kept records whose label is "
           "not their class's majority, plus the suppressed", needs=("label",),
           monotone=_loss_monotone, integer=True)
def _cm(batch, outcome, ctx):
    return batch.memo_for(outcome, "cm", lambda: _cm_count(batch, outcome, ctx))


def _cm_count(batch, outcome, ctx):
    if not batch.n_classes:
        if batch.label_class is None:
            batch.label_matrix()  # raises the message
        return np.zeros(batch.n_nodes)
    return _kept_sum(batch, outcome, _minority(batch)) + outcome.suppressed


@_register("cm_fraction", "min", "cm / N", label="CM, share of records", needs=("label",), monotone=_loss_monotone)
def _cm_fraction(batch, outcome, ctx):
    return _cm(batch, outcome, ctx) / ctx.n


@_register("discernibility", "min", "Σ|E|² over kept classes + N per suppressed record",
           monotone=_loss_monotone, integer=True)
def _discernibility(batch, outcome, ctx):
    return (_kept_sum(batch, outcome, _size_squares(batch), "size_squares")
            + float(ctx.n) * outcome.suppressed)


@_register("avg_class_size", "min", "kept records / kept classes", monotone=_loss_monotone)
def _avg_class_size(batch, outcome, ctx):
    n_cls = class_stats.kept_classes(batch, outcome)
    kept = ctx.n - outcome.suppressed
    return np.where(n_cls > 0, kept / np.maximum(n_cls, 1), float(ctx.n))


def _nu_bound(ctx):
    return ctx.entropy.level_terms()


@_register("nu_entropy", "min", "ARX's non-uniform entropy, monotonic variant (a "
           "function of the levels: every record charged its generalization entropy)",
           monotone=lambda rule, models, n: True, bound=_nu_bound, bound_exact=True)
def _nu_entropy(batch, outcome, ctx):
    return ctx.entropy.evaluate(batch, outcome.kept, monotonic=True)


@_register("nu_entropy_nm", "min", "ARX's non-uniform entropy, non-monotonic variant "
           "(adds the entropy of the suppressed records' generalized values)",
           monotone=_loss_monotone, bound=_nu_bound)
def _nu_entropy_nm(batch, outcome, ctx):
    return ctx.entropy.evaluate(batch, outcome.kept, monotonic=False)


def objective_names() -> list[str]:
    return list(OBJECTIVES)


def get_objective(name: str) -> Objective:
    if name not in OBJECTIVES:
        raise SdcevalError(f"unknown lattice objective (metric) {name!r}."
                           f"{suggest(str(name), list(OBJECTIVES))} "
                           f"Objectives: {', '.join(OBJECTIVES)}")
    return OBJECTIVES[name]


def available(ctx: LatticeContext, batch_has_label: bool) -> list[str]:
    """The objectives this data set supports (sensitive / label present)."""
    out = []
    for name, obj in OBJECTIVES.items():
        if "sensitive" in obj.needs and ctx.sensitive is None:
            continue
        if "label" in obj.needs and not batch_has_label:
            continue
        out.append(name)
    return out


def evaluate(batch: ClassBatch, outcome: Outcome, names: Sequence[str],
             ctx: LatticeContext) -> dict[str, np.ndarray]:
    """``{name: (m,) values}`` of the named objectives."""
    out = {}
    for name in names:
        obj = get_objective(name)
        v = np.asarray(obj.compute(batch, outcome, ctx), dtype=np.float64)
        out[name] = np.rint(v).astype(np.int64) if obj.integer else v
    return out
