"""A lattice search problem: `LatticeProblem`, a data set's `NodeEngine` with the privacy
models to enforce and a suppression rule, and the evaluation of its nodes' classes
(feasibility, objectives) that `sdceval.lattice.search` builds on.  Re-exported by
`sdceval.lattice.search`.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from sdceval.core.errors import SdcevalError, plain
from sdceval.lattice.batch import ClassBatch
from sdceval.lattice.engine import NodeEngine
from sdceval.lattice.objectives import LatticeContext, available, evaluate, get_objective
from sdceval.lattice.suppression import (DEFAULT_MAX_SUPPRESSION, DEFAULT_RULE, SuppressionRule,
                                       make_rule, needs_sensitive, reads_cells)


class LatticeProblem:
    """A data set's lattice with the models to enforce and a suppression rule.

    Parameters
    ----------
    dataset : Dataset
        QIs with hierarchies; a sensitive column if a model or objective needs one;
        a label column for the CM objectives.
    models : sequence of PrivacyModel
        `sdceval.privacy` models (empty: every node is feasible).
    rule : str or SuppressionRule
        A rule of `sdceval.lattice.suppression.RULES` (``"dewri"``, the default, or
        ``"arx"``).
    max_suppression : float
        The rule's suppression limit (`sdceval.lattice.suppression.MAX_SUPPRESSION`): a
        fraction of the records if < 1, else a count.
    engine : NodeEngine, optional
        Reuse an engine (its cached class tables) across problems on the same data.
    """

    def __init__(self, dataset, models: Sequence = (), rule=DEFAULT_RULE,
                 max_suppression: float = DEFAULT_MAX_SUPPRESSION,
                 engine: NodeEngine | None = None):
        self.dataset = dataset
        self.engine = engine if engine is not None else NodeEngine(dataset)
        self.lattice = self.engine.lattice
        self.ctx = LatticeContext(self.engine, dataset)
        self.rule = rule if isinstance(rule, SuppressionRule) else make_rule(
            rule, max_suppression)
        # bound to the data set (`PrivacyModel.bind`: k-map reads its population here)
        self.models = [m.bind(dataset) if hasattr(m, "bind") else m for m in models]
        for m in self.models:
            if needs_sensitive(m) and self.ctx.sensitive is None:
                raise SdcevalError(
                    f"lattice: privacy model {m.describe()} needs a sensitive attribute; "
                    "give one column role 'sensitive'")
        self.n = self.engine.n
        self._sizes_only = not any(needs_sensitive(m) or reads_cells(m)
                                   for m in self.models)
        self.limit_records = self.rule.records(self.n)
        self.feasibility_monotone = self.rule.feasibility_monotone(self.models, self.n)

    def describe(self) -> str:
        models = ", ".join(m.describe() for m in self.models) or "none"
        return (f"models: {models}; suppression: {self.rule.name}, at most "
                f"{self.limit_records} of {self.n} records")

    # -- evaluation ----------------------------------------------------------------
    def outcome(self, batch: ClassBatch):
        return self.rule.apply(batch, self.models, self.ctx.table_dist, self.n)

    def feasible(self, table) -> bool:
        """One node's feasibility from its class table (the searches' check): from the
        class sizes alone when no model reads the sensitive counts."""
        if self._sizes_only:
            return self.rule.feasible_sizes(table.sizes, self.models, self.n)
        return bool(self.outcome(ClassBatch.of_tables([table])).feasible[0])

    def objectives_available(self) -> list[str]:
        return available(self.ctx, getattr(self.engine.bottom, "label_class", None)
                         is not None)

    def check_objectives(self, names: Iterable[str]) -> list[str]:
        names = list(names)
        ok = self.objectives_available()
        for name in names:
            obj = get_objective(name)  # unknown names: suggestion
            if name not in ok:
                what = "sensitive attribute" if "sensitive" in obj.needs else "class label"
                role = "sensitive" if "sensitive" in obj.needs else "label"
                raise SdcevalError(f"lattice objective {name!r} needs a {what}; give one "
                                   f"column role {role!r}")
        return names

    def evaluate_batch(self, batch: ClassBatch, names: Sequence[str]) -> dict:
        """Columns (one value per node of ``batch``): ``suppressed``, ``feasible``,
        ``k`` and the named objectives."""
        out = self.outcome(batch)
        cols = {"suppressed": out.suppressed, "feasible": out.feasible}
        cols.update(evaluate(batch, out, [n for n in names if n not in cols], self.ctx))
        return cols

    def evaluate_node(self, levels, names: Sequence[str] | None = None) -> dict:
        """One node's ``suppressed``, ``feasible`` and objectives (default: all the data
        set supports) as plain Python values."""
        lv = self.lattice.check(levels)
        if lv.ndim != 1:
            raise SdcevalError("lattice: evaluate_node takes one node")
        names = self.check_objectives(names if names is not None
                                      else self.objectives_available())
        batch = ClassBatch.of_tables([self.engine.classes(lv)])
        cols = self.evaluate_batch(batch, names)
        return {k: plain(v[0]) for k, v in cols.items()}
