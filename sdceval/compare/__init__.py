"""Comparison: bisection to a common risk, ranking, frontiers."""
from .bisection import BisectionResult, bisect_risk
from .frontier import efficient_frontier
from .ranking import Comparison, compare

__all__ = ["bisect_risk", "BisectionResult", "compare", "Comparison", "efficient_frontier"]
