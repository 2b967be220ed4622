"""Comparison: bisection to a common risk, ranking, frontiers."""
from sdceval.compare.bisection import BisectionResult, bisect_risk
from sdceval.compare.frontier import efficient_frontier
from sdceval.compare.ranking import Comparison, compare

__all__ = ["bisect_risk", "BisectionResult", "compare", "Comparison", "efficient_frontier"]
