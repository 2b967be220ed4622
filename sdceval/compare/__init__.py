"""Comparison: bisection to a common risk, ranking, frontiers.

The package is callable: ``sdceval.compare(data, methods, **options)`` is
`sdceval.compare.ranking.compare`, which takes a `Dataset` or a pandas DataFrame with
its roles as keywords (``sdceval.compare(df, numeric=["income", "visits"])``); its
options are parsed once into a `ComparisonPlan` (`plan_comparison`), which
`run_comparison` runs, as the ``[[comparison]]`` job does.
"""
import sys
from types import ModuleType

from sdceval.compare.bisection import BisectionResult, bisect_risk
from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.ranking import (Comparison, ComparisonPlan, compare, plan_comparison,
                                     run_comparison)


class _CallablePackage(ModuleType):
    """This package, callable as `compare` (``sdceval.compare(df, ...)``: the package
    and the function share the name ``sdceval.compare``)."""

    def __call__(self, *args, **kwargs) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["bisect_risk", "BisectionResult", "compare", "Comparison", "ComparisonPlan",
           "efficient_frontier", "plan_comparison", "run_comparison"]
