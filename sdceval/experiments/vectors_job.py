"""Comparing releases by property vectors from the command line and in experiment
files (issue 8): ``sdceval vectors`` and ``[[vectors]]`` jobs, one orchestration
(`vectors_result`).

A release is named by a file written by ``sdceval anonymize`` or by a method spec such
as ``mondrian:k=10`` (`resolve_release`).  A ``[[vectors]]`` job compares several
releases of one data set at one setting (e.g. the Adult study at k = 5, 10, 50)::

    [[vectors]]
    title = "k = 10"
    data = "adult-train"
    releases = ["mondrian:k=10", "generalization:k=10", "bucketization:k=10", "mdav:k=10"]
    properties = ["class_size", "sensitive_count"]
    suppressed = "exclude"                      # exclude | own_class | value
    [vectors.roles]                             # roles of the data set for one release
    "mdav:k=10" = { numeric = ["age", "education-num"] }

The decisions of `sdceval.vectors.comparison.compare_releases` are options too (the
``sdceval vectors`` options of the same names): ``directions`` (property ->
``higher_is_better`` | ``lower_is_better``), ``index`` (p_binary | p_cov | p_spr |
p_hv), ``weights`` (WTD), ``significance`` and ``order`` (LEX), ``goal`` (GOAL),
``normalize`` (``"share"``) and ``rank_point`` (property -> D_max of P_rank).

Every release is row-aligned with the same records, so a release made with other roles
(MDAV needs numeric attributes) is compared record by record with the others; the
properties compared (class size, sensitive count) depend on the partition and the
sensitive column only.

Files (``<key>`` the job's key): ``<key>_unary.csv``, ``<key>_pairs.csv``,
``<key>_overall.csv``, ``<key>_<property>.png`` (Dewri et al. 2009 Fig. 1 on real data);
the comparison is under ``"vectors"`` in ``results.json``.  ``sdceval vectors`` writes
the same files without the prefix, and ``vectors.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdceval.catalog import get_method
from sdceval.compare.ranking import parse_reference
from sdceval.core.errors import SdcevalError, plain
from sdceval.core.fileio import write_csv
from sdceval.core.loaders import open_ref
from sdceval.core.glossary import display_name, release_label
from sdceval.core.text_table import console_table, fill
from sdceval.core.registry import Param
from sdceval.experiments.report_html import Section, heading, paragraph
from sdceval.experiments.jobs import names_file, register_job_kind
from sdceval.vectors.comparison import ReleaseComparison, compare_releases
from sdceval.vectors.indices import BINARY_INDICES
from sdceval.vectors.properties import (SUPPRESSED_MODES, common_properties,
                                        get_property, property_vectors)

SUPPRESSED = Param("suppressed", str, default="exclude", choices=SUPPRESSED_MODES,
                   description="suppressed records: left out, one class of their own, or "
                               "the value of a fully generalized record")
INDEX = Param("index", str, default="p_cov", choices=tuple(BINARY_INDICES),
              description="binary index of the WTD / LEX / GOAL decisions")
#: options handed to `compare_releases` (module docstring) and the type each must have
DECISIONS = {"directions": dict, "weights": (list, dict), "significance": list,
             "order": list, "goal": list, "normalize": str, "rank_point": dict}


def _method_of(text: str):
    """The method and parameters of a release spec ``name[:p=v,...]``."""
    name, params = parse_reference(text)
    try:
        return get_method(name), params
    except SdcevalError as exc:
        raise SdcevalError(f"release {text!r} is neither a file nor a method spec such as "
                           f"mondrian:k=10 ({exc})") from None


def resolve_release(dataset, text: str, seed: int = 0):
    """A release named on the command line: an existing file (read back with
    `sdceval.core.release_io.read_release`) or a method spec ``name[:p=v,...]``
    applied to ``dataset`` with ``seed``."""
    path = Path(text)
    if names_file(path):
        from sdceval.core.release_io import read_release
        return read_release(dataset, path)
    spec, params = _method_of(text)
    return spec.apply(dataset, spec.experiment(params), seed=seed)


def describe_release(label: str, release) -> str:
    n_sup = int(release.suppressed.sum()) if release.suppressed is not None else 0
    classes = (f", {len(set(release.classes.tolist()))} classes"
               if release.classes is not None else "")
    return (f"{label}: {release.kind} release of {release.n} records{classes}"
            + (f", {n_sup} suppressed" if n_sup else ""))


def write_comparison(comp: ReleaseComparison, out: Path, prefix: str = "",
                     plot: bool = True) -> list[Path]:
    """The comparison's tables as CSV, its figures as PNG (one per property)."""
    from sdceval.experiments.plots import plot_property_vectors
    out = Path(out)
    files = [write_csv(comp.unary, out / f"{prefix}unary.csv"),
             write_csv(comp.pairs, out / f"{prefix}pairs.csv"),
             write_csv(comp.overall, out / f"{prefix}overall.csv")]
    if plot:
        for prop in comp.settings["properties"]:
            files.append(plot_property_vectors(comp.vectors, prop,
                                               out / f"{prefix}{prop}.png"))
    return files


# -- [[vectors]] jobs -----------------------------------------------------------------
def validate_vectors_options(opts: dict) -> dict:
    """Check a ``[[vectors]]`` job's options before anything runs; returns them with
    the defaults (the decisions are checked against the properties when they run)."""
    releases = opts.get("releases")
    if (not isinstance(releases, list) or len(releases) < 2
            or not all(isinstance(r, str) for r in releases)):
        raise SdcevalError("'releases' must list at least two method specs, e.g. "
                           "[\"mondrian:k=10\", \"generalization:k=10\"]; got "
                           f"{releases!r}")
    for r in releases:
        if releases.count(r) > 1:
            raise SdcevalError(f"release {r!r} is given twice")
        if not names_file(r):
            spec, params = _method_of(r)
            spec.resolve(params)
    props = opts.get("properties")
    if props is not None:
        if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
            raise SdcevalError(f"'properties' must be a list of names, got {props!r}")
        for p in props:
            get_property(p)
    mode = opts.get("suppressed", SUPPRESSED.default)
    if mode not in SUPPRESSED_MODES:
        raise SdcevalError(f"'suppressed' must be one of {', '.join(SUPPRESSED_MODES)}, "
                           f"got {mode!r}")
    roles = opts.get("roles", {})
    if not isinstance(roles, dict):
        raise SdcevalError("[vectors.roles] maps a release to its roles, e.g. "
                           "\"mdav:k=10\" = { numeric = [\"age\"] }")
    for key, r in roles.items():
        if key not in releases:
            raise SdcevalError(f"[vectors.roles] names {key!r}, which is not in 'releases'")
        bad = set(r) - {"qi", "sensitive", "numeric", "label"}
        if bad:
            raise SdcevalError(f"[vectors.roles] {key!r}: unknown role key {sorted(bad)[0]!r} "
                               "(qi, sensitive, numeric, label)")
    decisions = {k: opts.get(k) for k in DECISIONS}
    for k, v in decisions.items():
        if v is not None and not isinstance(v, DECISIONS[k]):
            raise SdcevalError(f"'{k}' must be a {_type_words(DECISIONS[k])}, got {v!r}")
    return {"releases": releases, "properties": props, "suppressed": mode, "roles": roles,
            "index": INDEX.parse(opts.get("index", INDEX.default)), **decisions}


def _type_words(types) -> str:
    words = {dict: "table", list: "list", str: "string"}
    return " or ".join(words[t] for t in (types if isinstance(types, tuple) else (types,)))


def task_vectors(data_ref, releases, properties, suppressed, roles, seed, directions,
                 **decisions) -> dict:
    """Apply each release's method and compare them (a pure task for the executors);
    ``decisions`` go to `compare_releases`."""
    base = open_ref(data_ref)
    made = {}  # label -> (its data set, its release)
    for text in releases:
        ds = open_ref({**data_ref, **roles[text]}) if text in roles else base
        made[text] = (ds, resolve_release(ds, text, seed))
    if properties is None:
        properties = common_properties(made.values())
    frames = {text: property_vectors(ds, rel, properties, suppressed=suppressed,
                                     directions=directions, label=text)
              for text, (ds, rel) in made.items()}
    described = [describe_release(text, rel) for text, (_, rel) in made.items()]
    comp = compare_releases(base, frames, suppressed=suppressed, **decisions)
    return {"comparison": comp, "described": described, "data": base.name}


@dataclass
class VectorsJobResult:
    """The comparison of one job's releases, and one line describing each release."""

    key: str
    title: str
    data: str
    comparison: ReleaseComparison
    described: list[str]
    files: list[Path] = field(default_factory=list)

    @property
    def headline(self) -> str:
        return self.title

    def to_dict(self) -> dict[str, Any]:
        d = {"title": self.title, "data": self.data, **self.comparison.to_dict()}
        d["settings"]["releases_described"] = self.described
        return d

    def __str__(self) -> str:
        c = self.comparison
        return "\n".join([fill(vectors_answer(c)), console_table(shown_summary(c), keep=2),
                          *self.described])


def release_summary(comp: ReleaseComparison) -> pd.DataFrame:
    """The releases best first, one row each: per property ``<property>_worse_off``,
    the share of the release's records that another release serves better (some other
    release gives the same record a strictly better value: D09's record-by-record
    reading, P_binary against the best of the others; records a release leaves out are
    not counted for it); ``mean_worse_off``, the mean of those shares over the
    properties; ``dominated_by``, the releases that serve every record at least as well
    on every property and one better (D09 §3).  Best first: the smallest
    ``mean_worse_off``, ties in the order given."""
    props = list(comp.settings["properties"])
    labels = list(comp.vectors)
    # the directions from the unary table (data, kept by the results store; a frame's
    # attrs are not)
    lower = set(comp.unary.loc[comp.unary["direction"] == "lower_is_better", "property"])
    out = pd.DataFrame({"release": labels})
    for p in props:
        # oriented so that higher is better; NaN: a record the release leaves out
        x = np.vstack([comp.vectors[r][p].to_numpy(dtype=float) for r in labels])
        x = -x if p in lower else x
        shares = []
        for i in range(len(labels)):
            best_other = np.fmax.reduce(np.delete(x, i, axis=0), axis=0)  # NaN-skipping
            compared = np.isfinite(x[i]) & np.isfinite(best_other)
            worse = np.count_nonzero(x[i][compared] < best_other[compared])
            shares.append(worse / compared.sum() if compared.any() else np.nan)
        out[f"{p}_worse_off"] = shares
    out["mean_worse_off"] = out[[f"{p}_worse_off" for p in props]].mean(axis=1)
    beaten = _dominators(comp)
    out["dominated_by"] = [", ".join(release_label(x) for x in beaten[r]) or "–"
                           for r in labels]
    return out.sort_values("mean_worse_off", kind="stable").reset_index(drop=True)


def _dominators(comp: ReleaseComparison) -> dict[str, list[str]]:
    """Release -> the releases that dominate it over all properties (``overall``)."""
    beaten: dict[str, list[str]] = {r: [] for r in comp.vectors}
    over = comp.overall
    for a, b, rel in zip(over["first"], over["second"], over["relation"]):
        if rel == "dominates":
            beaten[b].append(a)
        elif rel == "dominated":
            beaten[a].append(b)
    return beaten


def summary_labels(comp: ReleaseComparison) -> dict[str, str]:
    """Column headers of `release_summary`: the property names as people read them (the
    caption says that each is the share of records worse off)."""
    return {**{f"{p}_worse_off": display_name(p) for p in comp.settings["properties"]},
            "release": "release", "mean_worse_off": "mean over the properties",
            "dominated_by": "dominated by"}


def shown_summary(comp: ReleaseComparison) -> pd.DataFrame:
    """`release_summary` for the console: release labels, shares as percents, the
    headers of `summary_labels` (a column the console drops is named by them too)."""
    out = release_summary(comp)
    out["release"] = [release_label(r) for r in out["release"]]
    for c in out.columns:
        if c.endswith("_worse_off"):
            out[c] = [f"{100 * v:.3g} %" if np.isfinite(v) else "–" for v in out[c]]
    return out.rename(columns=summary_labels(comp))


def vectors_answer(comp: ReleaseComparison) -> str:
    """The comparison in one sentence: the release that leaves the fewest records worse
    off than another release would (`release_summary`'s first row), against the next,
    and what dominance says."""
    summary = release_summary(comp)
    first, second = summary.iloc[0], summary.iloc[1]
    n_props = len(comp.settings["properties"])
    best = release_label(first["release"])
    share = [f"{100 * v:.3g} %" for v in (first["mean_worse_off"], second["mean_worse_off"])]
    text = (f"{best[:1].upper()}{best[1:]} leaves the fewest records worse off than "
            f"another release would leave them ({share[0]} on average over {n_props} "
            f"propert{'y' if n_props == 1 else 'ies'}, against {share[1]} for "
            f"{release_label(second['release'])})")
    beaten = _dominators(comp)
    if all(first["release"] in beaten[r] for r in beaten if r != first["release"]):
        return (text + ", and it serves every record at least as well as every other "
                "release on every property (it dominates them).")
    dominated = [release_label(r) for r in summary["release"] if beaten[r]]
    if dominated:
        verb = "is" if len(dominated) == 1 else "are"
        return (text + f", and {', '.join(dominated)} {verb} dominated (another release "
                "serves each of its records at least as well on every property).")
    return (text + ", and no release dominates another (serves every record at least as "
            "well on every property, and one better).")


def pair_answer(comp: ReleaseComparison, first: str, second: str) -> str:
    """One pair of releases in one sentence: which leaves more records better off on
    which property, and whether one dominates (D09 §3: dominance over all records)."""
    a, b = release_label(first), release_label(second)
    rows = comp.pairs[(comp.pairs["first"] == first) & (comp.pairs["second"] == second)]
    over = comp.overall[(comp.overall["first"] == first) & (comp.overall["second"] == second)]
    relation = over["relation"].iloc[0] if len(over) and "relation" in over else ""
    if relation == "dominates":
        return (f"{a} protects every record at least as well as {b} on every property "
                "(it dominates).")
    if relation == "dominated":
        return (f"{b} protects every record at least as well as {a} on every property "
                "(it dominates).")
    if relation == "equal":
        return f"{a} and {b} give every record the same values."
    wins: dict[str, list[str]] = {a: [], b: []}
    for _, r in rows.iterrows():
        fa, fb = r["share_better_first"], r["share_better_second"]
        if fa == fb:
            continue
        who, share = (a, fa) if fa > fb else (b, fb)
        wins[who].append(f"{display_name(r['property'])} ({share:.0%} of records)")
    parts = [f"{who} leaves more records better off on {', '.join(props)}"
             for who, props in wins.items() if props]
    return ("; ".join(parts) + "; neither release is better for every record "
            "(they are incomparable)." if parts else f"{a} and {b} are incomparable.")


def vectors_section(result) -> Section:
    """The HTML section of a property-vector comparison: the answer (`vectors_answer`)
    and the releases best first (`release_summary`), then the per-release summaries,
    each pair in a sentence and its indices, the figures."""
    comp = result.comparison
    pairs = list(dict.fromkeys(zip(comp.pairs["first"], comp.pairs["second"])))
    s = Section(result.title if result.title != result.key
                else f"{result.data}: who bears the risk under each release (property "
                     "vectors)", answer=vectors_answer(comp))
    summary = release_summary(comp)
    summary["release"] = [release_label(r) for r in summary["release"]]
    s.add_table(summary, caption="Releases best first. Each property's column is the "
                "share of the release's records that another release serves better (a "
                "better value of that property for the same record); the releases are "
                "ordered by the mean of these shares, fewest first. A release is dominated "
                "when another serves every record at least as well on every property.",
                css="ranking", text_columns=("release", "dominated_by"),
                labels=summary_labels(comp),
                percent=[c for c in summary.columns if c.endswith("_worse_off")])
    s.add(heading("Every record's values under each release"),
          paragraph("Every record's value of each property under each release (Dewri et "
                    "al. 2009): the worst-off record, the mean and the sum per release; "
                    "then, per pair, the share of records better off under each."),
          paragraph("; ".join(result.described) + "."))
    unary = comp.unary.copy()
    unary.insert(0, "release", [release_label(r) for r in unary.pop("release")])
    unary = unary.drop(columns=[c for c in ("direction",) if c in unary])
    unary["property"] = [display_name(p) for p in unary["property"]]
    s.add_table(unary, css="ranking", text_columns=("release", "property"))
    s.terms += list(comp.settings.get("properties", []))
    for a, b in pairs:
        rows = comp.pairs[(comp.pairs["first"] == a) & (comp.pairs["second"] == b)]
        show = rows[[c for c in ("property", "relation", "n_compared", "share_better_first",
                                 "share_better_second", "p_cov_12", "p_cov_21", "p_spr_12",
                                 "p_spr_21", "log_p_hv_12", "log_p_hv_21") if c in rows]].copy()
        show["property"] = [display_name(p) for p in show["property"]]
        s.add(heading(f"{release_label(a)} (first) against {release_label(b)} (second)"),
              paragraph(pair_answer(comp, a, b)))
        s.add_table(show, text_columns=("property", "relation"))
    s.add_figures(result.files)
    return s


def vectors_result(job, executor, say, seed: int) -> VectorsJobResult:
    """The releases of one job made (or read) and compared, as one task (no file
    written)."""
    o = validate_vectors_options(job.options)
    say(f"{job.tag}property vectors of {len(o['releases'])} releases")
    (res,) = executor.map(task_vectors, [dict(data_ref=job.data_ref(), seed=seed, **o)])
    return VectorsJobResult(job.key, job.title, res["data"], res["comparison"],
                            res["described"])


def write_vectors_job(result: VectorsJobResult, out, prefix: str) -> list[Path]:
    return write_comparison(result.comparison, out, prefix=prefix)


def vectors_rows(result: VectorsJobResult) -> list[dict]:
    """Per release and property: its worst record, mean and sum (the unary table); per
    pair and property: the shares of records better off under each."""
    comp = result.comparison
    rows = []
    for _, u in comp.unary.iterrows():
        base = {"data": result.data, "release": u["release"], "property": u["property"]}
        rows += [{**base, "measure": f"{u['property']}_{stat}", "value": plain(u[stat])}
                 for stat in ("worst", "mean", "sum") if stat in u]
    for _, p in comp.pairs.iterrows():
        base = {"data": result.data, "first": p["first"], "second": p["second"],
                "property": p["property"]}
        rows += [{**base, "measure": f"{p['property']}_{c}", "value": plain(p[c])}
                 for c in ("share_better_first", "share_better_second") if c in p]
    return rows


@register_job_kind(
    "vectors", section="vectors", report=vectors_section,
    write=write_vectors_job, rows=vectors_rows,
    description="property vectors of releases compared record by record: quality "
                "indices, dominance, decisions (Dewri et al. 2009; sdceval vectors)",
    keys=("releases", "properties", "suppressed", "roles", "index", *DECISIONS),
    example={"releases": ["mondrian:k=10", "generalization:k=10"],
             "properties": ["class_size", "glm"]},
    validate=validate_vectors_options, params=(SUPPRESSED, INDEX))
def run_vectors_job(job, spec, executor, say) -> VectorsJobResult:
    return vectors_result(job, executor, say, job.seed(spec))


__all__ = ["release_summary", "resolve_release", "shown_summary", "vectors_answer",
           "vectors_result", "write_comparison", "run_vectors_job"]
