"""Comparing releases by their property vectors (Dewri et al. 2009 §3–5).

`compare_releases(dataset, {"mondrian": rel_a, "generalization": rel_b, ...})` computes
the property vectors of every release (`sdceval.vectors.properties`) and reports:

* **unary** — per release and property: the worst record's value (D09's P_k-anon /
  P_ℓ-div, ``min`` for a higher-is-better property, ``max`` for a loss), the sum (D10's
  S_k, S_ℓ), the mean (P_s-avg), and P_rank when a point of interest is given;
* **pairs** — per ordered pair of releases and property, both ways: P_binary (records
  strictly better), P_cov (share no worse), P_spr (total amount better), log P_hv
  (hypervolume in log space), the share of records strictly better under each release
  and the dominance relation (``equal``, ``dominates``, ``dominated``,
  ``incomparable``);
* **overall** — per pair, the set-level relation over all properties (D09 Table 4) and,
  when asked, the WTD / LEX / GOAL decisions (`sdceval.vectors.comparators`).

Records are paired by row (row ``i`` of every release is record ``i``).  With
``suppressed="exclude"`` a record suppressed in either release of a pair has no value
there and is left out of that pair's indices (``n_compared`` says how many were used).

References
----------
Dewri, Ray, Ray, Whitley (2009). On the comparison of microdata disclosure control
algorithms. EDBT, §3–5.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.glossary import register_term
from sdceval.core.release import Release
from sdceval.vectors import comparators, indices
from sdceval.vectors.properties import (SUPPRESSED_MODES, common_properties,
                                        property_vectors)

#: binary indices reported for every pair, both ways
PAIR_INDICES = ("p_binary", "p_cov", "p_spr", "p_hv")

#: a few words for the console legend of the indices' columns
_SHORT = {"p_binary": "records strictly better (a count)",
          "p_cov": "share of records at least as good",
          "p_spr": "sum of the gaps where better",
          "p_hv": "hypervolume dominated alone (log)",
          "log_p_hv": "hypervolume dominated alone (log)",
          "relation": "dominates, dominated, equal or incomparable"}
for _name, _label, _gloss, _dir in (
        ("release", "release", "a release: a method with its parameters, or a file", None),
        ("property", "property", "the per-record property compared (sdceval list "
         "properties)", None),
        ("direction", "direction", "which way the property is better", None),
        ("n", "records", "records with a value (suppressed ones excluded)", None),
        ("worst", "worst record", "the value of the worst-off record", None),
        ("mean", "mean over records", "the property's mean over the records", None),
        ("sum", "sum over records", "the property's sum over the records", None),
        ("first", "first release", "the first release of the pair", None),
        ("second", "second release", "the second release of the pair", None),
        ("relation", "dominance", "whether one release is at least as good for every "
         "record (dominates), or each is better for some records (incomparable)", None),
        ("n_compared", "records compared", "records with a value in both releases", None),
        ("share_better_first", "records better off, first", "share of the compared records "
         "strictly better protected (or served) by the first release", None),
        ("share_better_second", "records better off, second", "share of the compared "
         "records strictly better off under the second release", None),
        ("share_equal", "records equal", "share of the compared records with equal values",
         None),
        ("p_binary", "P_binary", "records strictly better in one release than in the other "
         "(a count; Dewri et al. 2009 §3)", None),
        ("p_cov", "P_cov", "share of records at least as good in one release as in the other "
         "(ties count for both; Dewri et al. 2009 §5.2)", None),
        ("p_spr", "P_spr", "how much better one release is where it is better: the sum of "
         "the positive gaps (Dewri et al. 2009 §5.3)", None),
        ("p_hv", "log P_hv", "hypervolume dominated by one release alone, in log space "
         "(Dewri et al. 2009 §5.4)", None),
        ("log_p_hv", "log P_hv", "hypervolume dominated by one release alone, in log space "
         "(Dewri et al. 2009 §5.4)", None)):
    register_term(_name, _label, _gloss, _dir, short=_SHORT.get(_name, ""))


@dataclass
class ReleaseComparison:
    """The result of `compare_releases` (module docstring).

    Attributes
    ----------
    vectors : dict label -> DataFrame
        Each release's property vectors.
    unary : DataFrame
        One row per (release, property).
    pairs : DataFrame
        One row per (first, second, property): the indices both ways and the relation.
    overall : DataFrame
        One row per pair: the relation over all properties and the decisions asked for.
    decisions : list of dict
        The WTD / LEX / GOAL decisions (`comparators.Decision.as_dict`) with the pair.
    """

    vectors: dict
    unary: pd.DataFrame
    pairs: pd.DataFrame
    overall: pd.DataFrame
    decisions: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def rows(df):
            return [{k: plain(v) for k, v in r.items()} for r in df.to_dict("records")]
        return {"settings": {k: plain(v) for k, v in self.settings.items()},
                "unary": rows(self.unary), "pairs": rows(self.pairs),
                "overall": rows(self.overall), "decisions": self.decisions}


def _frames(dataset, releases, properties, suppressed, suppressed_values, directions):
    if isinstance(releases, Mapping):
        items = list(releases.items())
    else:
        items = []
        for i, r in enumerate(releases):
            base = r.method if isinstance(r, Release) and r.method else f"release{i + 1}"
            items.append((base if all(base != k for k, _ in items) else f"{base}#{i + 1}", r))
    if len(items) < 2:
        raise SdcevalError(f"compare_releases needs at least two releases, got {len(items)}")
    labels = [str(k) for k, _ in items]
    if len(set(labels)) != len(labels):
        raise SdcevalError(f"release labels must be distinct, got {labels}")
    frames = {}
    for label, r in items:
        if isinstance(r, pd.DataFrame):
            frames[label] = r
        elif isinstance(r, Release):
            frames[label] = property_vectors(dataset, r, properties, suppressed=suppressed,
                                             suppressed_values=suppressed_values,
                                             directions=directions, label=label)
        else:
            raise SdcevalError(f"release {label!r}: expected a Release or a property-vector "
                               f"DataFrame, got {type(r).__name__}")
    return frames


def _check_frames(frames: dict) -> list[str]:
    """Same data set, same length, same properties and directions in every frame."""
    first_label, first = next(iter(frames.items()))
    for label, f in frames.items():
        for key in ("data", "n"):
            if key in first.attrs and key in f.attrs and f.attrs[key] != first.attrs[key]:
                raise SdcevalError(
                    f"releases of different data sets: {first_label!r} is of "
                    f"{first.attrs.get('data')!r} ({first.attrs.get('n')} records), "
                    f"{label!r} of {f.attrs.get('data')!r} ({f.attrs.get('n')} records); "
                    "compare releases of one data set")
        if len(f) != len(first):
            raise SdcevalError(f"property vectors of different length: {first_label!r} has "
                               f"{len(first)} records, {label!r} {len(f)}; compare releases "
                               "of one data set")
        if list(f.columns) != list(first.columns):
            raise SdcevalError(f"releases {first_label!r} and {label!r} have different "
                               f"properties ({list(first.columns)} vs {list(f.columns)}); "
                               "ask for properties defined for both")
        if f.attrs.get("higher_is_better") != first.attrs.get("higher_is_better"):
            raise SdcevalError(f"releases {first_label!r} and {label!r} give the properties "
                               "different directions; compute both with the same directions")
    return list(first.columns)


def _unary(frames, props, rank_point, rank_tol):
    rows = []
    for label, f in frames.items():
        hib = f.attrs.get("higher_is_better", {})
        for p in props:
            v = f[p].to_numpy()
            finite = np.isfinite(v)
            if not finite.all():
                v = v[finite]
            up = hib.get(p, True)
            row = {"release": label, "property": p,
                   "direction": "higher_is_better" if up else "lower_is_better",
                   "n": int(len(v)),
                   "worst": float(indices.p_min(v, higher_is_better=up, name=p)),
                   "sum": float(indices.p_sum(v, name=p)),
                   "mean": float(indices.p_mean(v, name=p))}
            if rank_point is not None and p in rank_point:
                row["p_rank"] = float(indices.p_rank(v, rank_point[p], name=p))
            rows.append(row)
    return pd.DataFrame(rows)


def _pair_rows(a, fa, b, fb, props):
    rows, vec_a, vec_b = [], {}, {}
    hib = fa.attrs.get("higher_is_better", {})
    ref = fa.attrs.get("reference", {})
    for p in props:
        x, y = fa[p].to_numpy(), fb[p].to_numpy()
        keep = np.isfinite(x) & np.isfinite(y)
        if not keep.all():  # excluded (suppressed) records: left out of this pair
            x, y = x[keep], y[keep]
        up = hib.get(p, True)
        vec_a[p], vec_b[p] = x, y
        row = {"first": a, "second": b, "property": p,
               "direction": "higher_is_better" if up else "lower_is_better",
               "n_compared": int(len(x))}
        row.update(indices.pair_indices(x, y, up, ref.get(p), name=p))
        n = max(len(x), 1)
        row["share_better_first"] = row["p_binary_12"] / n
        row["share_better_second"] = row["p_binary_21"] / n
        row["share_equal"] = 1.0 - row["share_better_first"] - row["share_better_second"]
        rows.append(row)
    return rows, vec_a, vec_b


def compare_releases(dataset, releases, properties: Sequence[str] | None = None, *,
                     suppressed: str = "exclude",
                     suppressed_values: Mapping[str, float] | None = None,
                     directions: Mapping | None = None, index: str = "p_cov",
                     weights=None, significance=None, order: Sequence[str] | None = None,
                     goal=None, normalize=None, rank_point: Mapping | None = None,
                     rank_tol: float = 0.0) -> ReleaseComparison:
    """Compare releases of one data set by their property vectors (module docstring).

    Parameters
    ----------
    dataset : Dataset
    releases : mapping label -> Release (or a property-vector DataFrame), or a sequence
        At least two.
    properties : sequence of str, optional
        Default: the built-in properties defined for the first release.
    suppressed, suppressed_values, directions
        As in `sdceval.vectors.properties.property_vectors`.
    index : str
        The binary index of the WTD / LEX / GOAL decisions (``p_cov`` by default, as in
        D09 §5.5; also ``p_binary``, ``p_spr``, ``p_hv``).
    weights : sequence or mapping, optional
        WTD weights (one per property, summing to 1): adds the WTD decision.
    significance : sequence, optional; order : sequence of str, optional
        LEX significance ε and property order (either adds the LEX decision).
    goal : sequence, optional
        GOAL vector (one target value of ``index`` per property): adds the GOAL decision.
    normalize : None, "share" or callable
        WTD's normalization of the index values (DEWRI A8).
    rank_point : mapping property -> number, optional
        The point of interest D_max of P_rank per property: every record at that value
        (D09 §5.1: "quite often the property vector that offers the maximum measure of
        the property for every tuple"); a number, because excluded records leave each
        pair with its own records.
    rank_tol : float
        P_rank's tolerance.

    Returns
    -------
    ReleaseComparison
    """
    if suppressed not in SUPPRESSED_MODES:
        raise SdcevalError(f"suppressed must be one of {', '.join(SUPPRESSED_MODES)}, got "
                           f"{suppressed!r}")
    if index not in indices.BINARY_INDICES:
        raise SdcevalError(f"index must be one of {', '.join(indices.BINARY_INDICES)}, got "
                           f"{index!r}")
    if properties is None:
        given = releases.values() if isinstance(releases, Mapping) else releases
        rels = [r for r in given if isinstance(r, Release)]
        if rels:
            properties = common_properties((dataset, r) for r in rels)
    frames = _frames(dataset, releases, properties, suppressed, suppressed_values,
                     directions)
    props = _check_frames(frames)
    for p, v in (rank_point or {}).items():
        if p not in props:
            raise SdcevalError(f"rank_point names {p!r}, which is not compared "
                               f"({', '.join(props)})")
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise SdcevalError(f"rank_point[{p!r}] must be a number (D_max: every record "
                               f"at that value), got {type(v).__name__}")
    unary = _unary(frames, props, rank_point, rank_tol)
    pair_rows, overall_rows, decisions = [], [], []
    labels = list(frames)
    ref = next(iter(frames.values())).attrs.get("reference", {})
    hib = next(iter(frames.values())).attrs.get("higher_is_better", {})
    for a, b in itertools.combinations(labels, 2):
        rows, ya, yb = _pair_rows(a, frames[a], b, frames[b], props)
        pair_rows.extend(rows)
        over = {"first": a, "second": b,
                "relation": indices.set_relation(ya, yb, higher_is_better=hib)}
        common = {"index": index, "higher_is_better": hib, "references": ref}
        asked = []
        if weights is not None:
            asked.append(comparators.wtd(ya, yb, weights, normalize=normalize, **common))
        if significance is not None or order is not None:
            asked.append(comparators.lex(ya, yb, significance=significance, order=order,
                                         **common))
        if goal is not None:
            asked.append(comparators.goal(ya, yb, goal, **common))
        for d in asked:
            over[d.method] = {"first": a, "second": b}.get(d.preferred, "tie")
            decisions.append({"first": a, "second": b, **d.as_dict()})
        if rank_point is not None:
            for p in props:
                if p in rank_point:
                    c = indices.rank_compare(ya[p], yb[p], rank_point[p], rank_tol=rank_tol)
                    over[f"rank_{p}"] = {1: a, -1: b}.get(int(c), "tie")
        overall_rows.append(over)
    settings = {"suppressed": suppressed, "index": index, "properties": props,
                "releases": labels}
    return ReleaseComparison(frames, unary, pd.DataFrame(pair_rows),
                             pd.DataFrame(overall_rows), decisions, settings)
