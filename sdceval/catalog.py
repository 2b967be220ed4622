"""Every registered method and measure: look-ups by name.

The registries are defined in `sdceval.core.registry`; the method and measure modules
fill them when imported.  This module imports them all, so that `get_method` and
`get_measure` see every plugin; it is the layer above methods and measures that
comparison, experiments and the CLI import from (SPEC §1).
"""
from __future__ import annotations

import sdceval.measures  # noqa: F401  (registers the measures)
import sdceval.methods  # noqa: F401  (registers the methods)
from sdceval.core.registry import MEASURES, METHODS, MeasureSpec, MethodSpec


def get_method(name: str) -> MethodSpec:
    """The registered method ``name`` (unknown names get a suggestion)."""
    return METHODS.get_spec(name)


def get_measure(name: str) -> MeasureSpec:
    """The registered measure ``name`` (unknown names get a suggestion)."""
    return MEASURES.get_spec(name)


__all__ = ["METHODS", "MEASURES", "get_method", "get_measure"]
