"""Comparing releases by property vectors from the command line and in experiment
files (issue 8): ``sdceval vectors`` and ``[[vectors]]`` jobs.

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

Every release is row-aligned with the same records, so a release made with other roles
(MDAV needs numeric attributes) is compared record by record with the others; the
properties compared (class size, sensitive count) depend on the partition and the
sensitive column only.

Files (``<key>`` the job's key): ``<key>_unary.csv``, ``<key>_pairs.csv``,
``<key>_overall.csv``, ``<key>_<property>.png`` (Dewri et al. 2009 Fig. 1 on real data);
the comparison is under ``"vectors"`` in ``results.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdceval.catalog import get_method
from sdceval.compare.ranking import parse_reference
from sdceval.core.errors import SdcevalError
from sdceval.core.fileio import write_csv
from sdceval.core.loaders import open_ref
from sdceval.vectors.comparison import ReleaseComparison, compare_releases
from sdceval.vectors.properties import (SUPPRESSED_MODES, common_properties,
                                        get_property, property_vectors)


def resolve_release(dataset, text: str, seed: int = 0):
    """A release named on the command line: an existing file (read back with
    `sdceval.core.release_io.read_release`) or a method spec ``name[:p=v,...]``
    applied to ``dataset`` with ``seed``."""
    path = Path(text)
    if path.is_file():
        from sdceval.core.release_io import read_release
        return read_release(dataset, path)
    name, params = parse_reference(text)
    try:
        spec = get_method(name)
    except SdcevalError as exc:
        raise SdcevalError(f"release {text!r} is neither a file nor a method spec such as "
                           f"mondrian:k=10 ({exc})") from None
    return spec.apply(dataset, params, seed=seed)


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
    the defaults."""
    releases = opts.get("releases")
    if (not isinstance(releases, list) or len(releases) < 2
            or not all(isinstance(r, str) for r in releases)):
        raise SdcevalError("'releases' must list at least two method specs, e.g. "
                           "[\"mondrian:k=10\", \"generalization:k=10\"]; got "
                           f"{releases!r}")
    for r in releases:
        name, params = parse_reference(r)
        get_method(name).resolve(params)
    props = opts.get("properties")
    if props is not None:
        if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
            raise SdcevalError(f"'properties' must be a list of names, got {props!r}")
        for p in props:
            get_property(p)
    mode = opts.get("suppressed", "exclude")
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
    return {"releases": releases, "properties": props, "suppressed": mode, "roles": roles}


def task_vectors(data_ref, releases, properties, suppressed, roles, seed) -> dict:
    """Apply each release's method and compare them (a pure task for the executors)."""
    base = open_ref(data_ref)
    made = {}  # label -> (its data set, its release)
    for text in releases:
        ds = open_ref({**data_ref, **roles[text]}) if text in roles else base
        made[text] = (ds, resolve_release(ds, text, seed))
    if properties is None:
        properties = common_properties(made.values())
    frames = {text: property_vectors(ds, rel, properties, suppressed=suppressed, label=text)
              for text, (ds, rel) in made.items()}
    described = [describe_release(text, rel) for text, (_, rel) in made.items()]
    comp = compare_releases(base, frames, suppressed=suppressed)
    comp.settings["releases_described"] = described
    return {"comparison": comp, "data": base.name, "n": base.n}


@dataclass
class VectorsJobResult:
    key: str
    title: str
    data: str
    comparison: ReleaseComparison
    files: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "data": self.data, **self.comparison.to_dict()}

    def __str__(self) -> str:
        c = self.comparison
        lines = list(c.settings.get("releases_described", []))
        cols = ["first", "second", "property", "relation", "share_better_first",
                "share_better_second", "p_cov_12", "p_cov_21", "p_spr_12", "p_spr_21"]
        lines.append(c.pairs[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return "\n".join(lines)


def run_vectors_job(job, spec, executor, say, out: Path) -> VectorsJobResult:
    o = validate_vectors_options(job.options)
    say(f"[{job.key}] property vectors of {len(o['releases'])} releases")
    (res,) = executor.map(task_vectors, [dict(data_ref=job.data_ref(), seed=spec.seed, **o)])
    result = VectorsJobResult(job.key, job.options.get("title", job.key), res["data"],
                              res["comparison"])
    result.files.extend(write_comparison(result.comparison, out, prefix=f"{job.key}_"))
    return result


__all__ = ["resolve_release", "write_comparison", "run_vectors_job"]
