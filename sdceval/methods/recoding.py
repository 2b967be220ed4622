"""Global recoding of the quasi-identifiers along their hierarchies (Hundepool et al.
2012, §3.4.2 "Global recoding"; sdcMicro's ``globalRecode`` for categorical keys).

Every value of QI ``q`` is replaced by its ancestor at level ``min(level, height_q)``
of its hierarchy (level 0: the value itself; a QI whose hierarchy is lower than
``level`` stops at its top level, the root ``*``), the same level for the whole column,
and nothing is suppressed: unlike full-domain generalization under a privacy model
(`sdceval.methods.generalization`), recoding promises no class size; its protection is
the coarseness itself.  ``levels`` gives one level per QI instead (as
``generalization``'s ``levels``: ``"age=2,zip=1"``, the others 0).

This is the protection of the categorical keys in the whole-file strategies of the
perturbative family (`sdceval.methods.strategy`: e.g. MDAV on the numeric attributes
plus the categorical keys recoded), where its ``level`` is the knob searched on a small
grid (SPEC §5); alone it is a generalization-family method with ``level`` as its knob.
"""
from __future__ import annotations

from sdceval.core.registry import Param, register_method
from sdceval.core.release import Release
from sdceval.methods.generalization import (node_release, parse_levels, qi_heights,
                                            rule_node)

LEVEL = Param("level", int, 1, low=0, high=None, protection="increasing",
              grid=(0, 1, 2), unprotected=0,
              description="hierarchy level every QI is recoded to (capped at each QI's "
                          "hierarchy height; 0 publishes the values as they are)")


def recode_levels(dataset, level: int, levels=None) -> tuple[int, ...]:
    """The lattice node of ``recode``: ``levels`` when given (`parse_levels`; it
    overrides ``level``), else
    ``min(level, height_q)`` for every QI ``q`` in schema order."""
    if levels not in (None, ""):
        return parse_levels(dataset, levels)
    return tuple(min(int(level), h) for h in qi_heights(dataset).values())


@register_method(
    "recode", family="generalization", random=False, label="global recoding",
    params=[LEVEL,
            Param("levels", str, None,
                  description="one level per QI instead of level ('age=2,zip=1', the "
                              "others 0; or one per QI in schema order)")],
    description="global recoding: every QI replaced by its hierarchy ancestor at one "
                "level (capped at its height), no suppression (sdcMicro's globalRecode)")
def recode(dataset, *, seed, level, levels) -> Release:
    """Global recoding (module docstring).

    Returns
    -------
    Release
        kind ``"generalized"``: ``classes`` the distinct recoded QI combinations,
        ``cells`` per QI, nothing suppressed, the sensitive values unchanged; ``info``:
        ``levels`` (per QI), ``n_classes``, ``k`` (the smallest class).
    """
    node_levels = recode_levels(dataset, level, levels)
    # a limit of 0 records: Dewri's rule suppresses nothing
    node = rule_node(dataset, node_levels, "dewri", 0)
    release = node_release(dataset, node)
    for k in ("height", "suppressed", "eta", "j"):   # no suppression rule acted
        release.info.pop(k, None)
    return release


__all__ = ["recode", "recode_levels", "LEVEL"]
