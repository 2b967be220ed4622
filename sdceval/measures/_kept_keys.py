"""Columns published as is are part of the risk (issue 28 item 6).

A column kept on request (``--keep``, role ``passthrough``) is published exactly as in
the original, beside what the method protects.  `sdceval.measures.reidentification`
counts every such column in the intruder's knowledge by default (it links by equality:
a record can only be a released row with the same value; a value published unchanged
links perfectly).  A comparison may declare its intruder (``knows``, issue 28 item 2)
without a kept column; the measure honours that, but the figure that could then
overstate protection is not left unsaid: what a user needs is to *see* what the kept
columns cost.  `kept_risk` measures re-identification for the declared intruder (the
default one when none is declared) *plus* every kept column, and for it *less* them
(``kept=False``; one extra evaluation), and `warning` words it when they raise the
share of records re-identified by more than `MARGIN`.

Which kept column is responsible: with one kept column, that column; with several, each
is measured alone beside the release (the others dropped from it, which the measure
reads as unknown: module notes of `sdceval.measures.reidentification`), only when the
warning fires, and those that raise the risk by more than `MARGIN` on their own are
named; when none does alone (a joint effect, e.g. two columns that identify a record
only together) every kept column is named.
"""
from __future__ import annotations

import dataclasses
import warnings

from sdceval.core.errors import SdcevalError
from sdceval.core.glossary import and_list

#: how much the kept columns must raise re-identification (an absolute difference of the
#: share of records re-identified: 1 percentage point) before `warning` speaks
MARGIN = 0.01


@dataclasses.dataclass(frozen=True)
class KeptRisk:
    """Re-identification of a release with its kept columns in the intruder's knowledge
    (``with_kept``) and without (``without``); ``responsible``: the kept columns that
    raise it by more than `MARGIN` (empty when they do not)."""

    columns: tuple
    with_kept: float
    without: float
    responsible: tuple

    @property
    def raised(self) -> bool:
        return self.with_kept - self.without > MARGIN


def kept_columns(dataset, release) -> list:
    """The passthrough columns ``release`` publishes (the kept columns)."""
    return [c for c in dataset.schema.passthrough if c in release.data.columns]


def _reid(dataset, release, **kw) -> float:
    from sdceval.measures.reidentification import reidentification
    return float(reidentification(dataset, release, **kw).value)


def kept_risk(dataset, release, *, seed: int = 0, knows=()) -> KeptRisk | None:
    """`KeptRisk` of ``release``, or None when it publishes no kept column or the
    measure does not read it (an `SdcevalError`: nothing to say, nothing wrong).
    ``knows``: the intruder declared for the comparison (module notes): the figure
    with the kept columns is that of ``knows`` plus every kept column, the one without
    them that of ``knows`` less the kept columns."""
    cols = kept_columns(dataset, release)
    if not cols:
        return None
    knows = tuple(_knows(knows))
    known = (*knows, *(c for c in cols if c not in knows)) if knows else ()
    try:
        with_kept = _reid(dataset, release, seed=seed, knows=known)
        without = _reid(dataset, release, kept=False, seed=seed, knows=knows)
        if with_kept - without <= MARGIN:
            return KeptRisk(tuple(cols), with_kept, without, ())
        if len(cols) == 1:
            return KeptRisk(tuple(cols), with_kept, without, tuple(cols))
        alone = []
        for c in cols:  # each kept column alone: the others dropped from the release
            only = dataclasses.replace(release, data=release.data.drop(
                columns=[o for o in cols if o != c]))
            if _reid(dataset, only, seed=seed, knows=known) - without > MARGIN:
                alone.append(c)
    except SdcevalError:
        return None
    return KeptRisk(tuple(cols), with_kept, without, tuple(alone or cols))


def _knows(raw) -> tuple:
    """A ``knows`` value in any accepted form as a tuple of column names."""
    from sdceval.measures.reidentification import KNOWS
    return KNOWS.parse(raw)


def warning(risk: KeptRisk | None) -> str | None:
    """The sentence `sdceval anonymize` prints when kept columns raise re-identification
    by more than `MARGIN`, naming them and both figures; None otherwise."""
    if risk is None or not risk.raised:
        return None
    names = ", ".join(repr(c) for c in risk.responsible)
    one = len(risk.responsible) == 1
    return (f"kept column{'' if one else 's'} {names} raise{'s' if one else ''} "
            f"re-identification from {risk.without:.1%} to {risk.with_kept:.1%} of records: "
            f"{'it is' if one else 'they are'} published unchanged, so an intruder who "
            f"knows {'it' if one else 'them'} links each record to the released rows with "
            f"the same value{'' if one else 's'}; drop {'it' if one else 'them'} from --keep "
            f"(role passthrough) or protect {'it' if one else 'them'} as a quasi-identifier")


def warn(dataset, release, *, seed: int = 0, stacklevel: int = 2, knows=()) -> None:
    """`warnings.warn` the `warning` of ``release``, if any (what ``sdceval anonymize``
    and `sdceval.anonymize` say after a release with kept columns)."""
    text = warning(kept_risk(dataset, release, seed=seed, knows=knows))
    if text:
        warnings.warn(text, stacklevel=stacklevel + 1)


def reads_kept(name: str) -> bool:
    """Whether measure ``name`` counts the kept columns: its registry entry has the
    ``kept`` parameter (`sdceval.measures.reidentification.KEPT`)."""
    from sdceval.core.registry import MEASURES
    spec = MEASURES.get(name)
    return spec is not None and any(p.name == "kept" for p in spec.params)


def comparison_note(dataset, measures) -> str | None:
    """The comparison's footnote when kept columns are in the intruder's knowledge of a
    risk it matches on or reads (``measures``: ``(name, params)`` pairs; a declared
    ``knows`` counts them when it names one), else None."""
    cols = list(dataset.schema.passthrough)

    def counts(params) -> bool:
        knows = _knows((params or {}).get("knows"))
        return (str((params or {}).get("kept", True)).lower() not in ("false", "0", "no")
                and (not knows or any(c in knows for c in cols)))
    used = [m for m in dict.fromkeys(name for name, params in measures
                                     if reads_kept(name) and counts(params))]
    if not cols or not used:
        return None
    return (f"Columns published unchanged by every method ({', '.join(map(repr, cols))}, "
            "role passthrough) are in the intruder's knowledge: "
            f"{and_list(used)} "
            f"count{'s' if len(used) == 1 else ''} them (kept=false measures without them).")
