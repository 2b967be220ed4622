"""Global recoding of the quasi-identifiers along their hierarchies (Hundepool et al.
2012, §3.4.2 "Global recoding"; sdcMicro's ``globalRecode`` for categorical keys).

Every value of QI ``q`` is replaced by its ancestor at level ``min(level, height_q)``
of its hierarchy (level 0: the value itself; a QI whose hierarchy is lower than
``level`` stops at its top level, the root ``*``), the same level for the whole column,
and nothing is suppressed: unlike full-domain generalization under a privacy model
(`sdceval.methods.generalization`), recoding promises no class size; its protection is
the coarseness itself.  ``levels`` gives one level per QI instead (as
``generalization``'s ``levels``: ``"age=2,zip=1"``, the others 0).

User breaks (sdcMicro's ``globalRecode(x, breaks=...)``, issue 29): ``breaks`` cuts a
numeric QI into the intervals between given cut points instead, e.g.
``breaks="age=0;18;30;65;120"`` (several QIs separated by ``|`` or ``,``; from Python
also a mapping ``{"age": [0, 18, 30, 65, 120]}``).  Intervals are right-closed,
``(a, b]``, as R's ``cut`` (sdcMicro's default: ``right = TRUE``, ``include.lowest =
FALSE``), labelled ``"(18,30]"`` (the cut points written exactly, where R rounds them
to 8 significant digits); each is a cell of the leaf codes of the values it holds (a
numeric QI's leaves are its sorted values, `sdceval.core.hierarchy`).  A record outside
``(first, last]`` is refused, naming the value (sdcMicro turns it into a missing value:
a lowest cut point equal to the minimum silently blanks the youngest ages).  Breaks
override ``level``/``levels`` for their QIs; the others recode by level.

This is the protection of the categorical keys in the whole-file strategies of the
perturbative family (`sdceval.methods.strategy`: e.g. MDAV on the numeric attributes
plus the categorical keys recoded), where its ``level`` is the knob searched on a small
grid (SPEC §5); alone it is a generalization-family method with ``level`` as its knob.
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param, ParamType, register_method
from sdceval.core.release import Release
from sdceval.methods.generalization import (node_release, parse_levels, qi_heights,
                                            rule_node)
from sdceval.methods.pram import combination_ids

LEVEL = Param("level", int, 1, low=0, high=None, protection="increasing",
              grid=(0, 1, 2), unprotected=0,
              description="hierarchy level every QI is recoded to (capped at each QI's "
                          "hierarchy height; 0 publishes the values as they are)")


class Breaks(ParamType):
    """Cut points per numeric QI: text ``"age=0;18;30;65|income=0;1000;5000"`` (QIs
    separated by ``|`` or ``,``) or a mapping ``{qi: [cut points]}``; canonical form a
    tuple of ``(qi, (sorted cut points))``, at least two distinct finite numbers each."""

    name = "cut points per QI"

    def parse(self, raw, where: str):
        if raw is None:
            return None
        if isinstance(raw, Mapping):
            items = list(raw.items())
        elif isinstance(raw, tuple) and all(isinstance(i, tuple) and len(i) == 2
                                            for i in raw):
            items = list(raw)   # the canonical form, parsed again (a strategy's step)
        elif isinstance(raw, str):
            items = []
            for t in (t.strip() for t in re.split(r"[|,]", raw)):
                if not t:
                    continue
                q, eq, rest = t.partition("=")
                if not eq:
                    raise SdcevalError(f"{where}: {t!r} must look like qi=cut;cut;... "
                                       "(e.g. breaks='age=0;18;30;65;120')")
                items.append((q.strip(), rest))
        else:
            raise SdcevalError(f"{where} must be text such as 'age=0;18;30;65;120' or a "
                               f"mapping {{qi: [cut points]}}, got {raw!r}")
        out: dict = {}
        for q, cuts in items:
            q = str(q)
            parts = re.split(r"[;\s]+", cuts.strip()) if isinstance(cuts, str) else list(cuts)
            try:
                values = [float(v) for v in parts if not (isinstance(v, str) and not v)]
            except (TypeError, ValueError):
                values = []
            if len(values) < 2 or not all(np.isfinite(values)):
                raise SdcevalError(f"{where}: the breaks of {q!r} must be at least two "
                                   f"finite numbers separated by ';', got {cuts!r}")
            if len(set(values)) < len(values):
                raise SdcevalError(f"{where}: the breaks of {q!r} repeat a cut point "
                                   f"({cuts!r}); each interval needs two distinct ends")
            if q in out:
                raise SdcevalError(f"{where} gives {q!r} twice")
            out[q] = tuple(sorted(values))
        return tuple(out.items()) or None


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
                              "others 0; or one per QI in schema order)"),
            Param("breaks", Breaks(), None,
                  description="cut points of numeric QIs, intervals (a,b] "
                              "('age=0;18;30;65;120', several separated by '|')")],
    description="global recoding: every QI replaced by its hierarchy ancestor at one "
                "level (capped at its height), or numeric QIs cut at user breaks into "
                "intervals (a,b]; no suppression (sdcMicro's globalRecode)")
def recode(dataset, *, seed, level, levels, breaks) -> Release:
    """Global recoding (module docstring).

    Returns
    -------
    Release
        kind ``"generalized"``: ``classes`` the distinct recoded QI combinations,
        ``cells`` per QI, nothing suppressed, the sensitive values unchanged; ``info``:
        ``levels`` (per QI), ``n_classes``, ``k`` (the smallest class), and with
        ``breaks`` the cut points per QI.
    """
    cuts = dict(breaks or ())
    for q in cuts:
        if q not in dataset.schema.qis:
            raise SdcevalError(f"recode: breaks names {q!r}, which is not a quasi-"
                               f"identifier.{suggest(q, dataset.schema.qis)} QIs: "
                               f"{', '.join(dataset.schema.qis)}")
        if not dataset.hierarchy(q).numeric:
            raise SdcevalError(f"recode: breaks cut numbers, but {q!r} is categorical; "
                               f"recode it by level (levels='{q}=1') or give it a numeric "
                               "kind")
    node_levels = recode_levels(dataset, level, levels)
    if cuts:   # the QIs cut by breaks are taken at their leaves, then cut
        node_levels = tuple(0 if q in cuts else lv
                            for q, lv in zip(dataset.schema.qis, node_levels))
    # a limit of 0 records: Dewri's rule suppresses nothing
    node = rule_node(dataset, node_levels, "dewri", 0)
    release = node_release(dataset, node)
    for k in ("height", "suppressed", "eta", "j"):   # no suppression rule acted
        release.info.pop(k, None)
    return _cut(dataset, release, cuts) if cuts else release


def _cut_label(x: float) -> str:
    """A cut point as text: integers without a decimal point, others exactly (``repr``),
    so that a label reads back as the same interval."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def cut_cells(hierarchy, codes: np.ndarray, cuts, qi: str
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, labels)`` per record of the right-closed intervals ``(c_i, c_i+1]`` of
    ``cuts`` (sorted) holding each record's value (`hierarchy`'s leaves are sorted
    values, so an interval is a range of leaf codes); a record outside them is
    refused, naming its value."""
    cuts = np.asarray(cuts, dtype=np.float64)
    v = hierarchy.leaf_values
    leaf_iv = np.searchsorted(cuts, v, side="left") - 1     # (c_i, c_i+1] -> i
    iv = leaf_iv[codes]
    out = (iv < 0) | (iv >= len(cuts) - 1)
    if out.any():
        bad = np.unique(v[codes[out]])
        raise SdcevalError(
            f"recode: {int(out.sum())} value(s) of {qi!r} lie outside the breaks' "
            f"intervals ({_cut_label(cuts[0])},{_cut_label(cuts[-1])}] (e.g. "
            f"{', '.join(_cut_label(b) for b in bad[:5])}); intervals are right-closed "
            f"(a,b], so the first cut point must lie below the smallest value and the last "
            f"at or above the largest")
    lo = np.searchsorted(leaf_iv, leaf_iv, side="left")[codes]
    hi = (np.searchsorted(leaf_iv, leaf_iv, side="right") - 1)[codes]
    names = np.array([f"({_cut_label(a)},{_cut_label(b)}]" for a, b in
                      zip(cuts[:-1], cuts[1:])], dtype=object)
    return lo.astype(np.int64), hi.astype(np.int64), names[iv]


def _cut(dataset, release: Release, cuts: dict) -> Release:
    """``release`` with the QIs of ``cuts`` cut into intervals: cells, labels, classes
    (the distinct combinations of cells) and class sizes redone."""
    qis = dataset.schema.qis
    data = release.data[qis].copy()
    cells = dict(release.cells)
    for q, c in cuts.items():
        lo, hi, labels = cut_cells(dataset.hierarchy(q), np.asarray(dataset.codes(q)), c, q)
        cells[q] = (lo, hi)
        data[q] = labels
    classes = combination_ids([cells[q][0] for q in qis])
    sizes = np.bincount(classes)
    info = {**release.info, "breaks": {q: list(c) for q, c in cuts.items()},
            "n_classes": int(len(sizes)), "k": int(sizes.min())}
    info["levels"] = {q: ("breaks" if q in cuts else lv)
                      for q, lv in release.info.get("levels", {}).items()}
    return Release.generalized(dataset, data, classes=classes, cells=cells,
                               method="recode", info=info)


__all__ = ["recode", "recode_levels", "LEVEL", "Breaks", "cut_cells"]
