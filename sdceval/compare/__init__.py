"""Comparison: bisection to a common risk, ranking, frontiers.

The package is callable: ``sdceval.compare(data, methods, **options)`` is
`sdceval.compare.ranking.compare`, which takes a `Dataset` or a pandas DataFrame with
its roles as keywords (``sdceval.compare(df, numeric=["income", "visits"])``).
"""
import sys
from types import ModuleType

from sdceval.compare.bisection import BisectionResult, bisect_risk
from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.ranking import Comparison, compare


class _CallablePackage(ModuleType):
    """This package, callable as `compare` (``sdceval.compare(df, ...)``: the package
    and the function share the name ``sdceval.compare``)."""

    def __call__(self, *args, **kwargs) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["bisect_risk", "BisectionResult", "compare", "Comparison", "efficient_frontier"]
