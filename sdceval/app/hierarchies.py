"""The hierarchies of the quasi-identifiers on the app's Roles page (issue 31): each one
shown (its builder, levels, nodes per level and a preview of its rows) and changed
through the builders of `sdceval.core.hierarchy_builders` (intervals with a chosen
number of levels, masking, grouping, flat), without any web code.

A changed hierarchy is written as a hierarchy file in ARX's layout (`Hierarchy.to_csv`,
what ``sdceval hierarchy export`` writes), named by its content's SHA-256 so that it
never changes once a run names it, with owner-only permissions in the app's folder; the
schema file the Roles page writes names it under ``[hierarchies]``
(`sdceval.app.steps.schema_text`), so the run, ``sdceval run`` on the run's experiment
file and the API all read the same tree.  "auto" leaves the column to the builder the
engine chooses (`choose_builder`)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from sdceval.app.fields import FieldErrors
from sdceval.core.errors import SdcevalError
from sdceval.core.hierarchy_builders import BUILDERS, DESCRIPTIONS, INTERVAL_LEVELS

#: the builders a user can choose ("auto": the one the engine picks)
CHOICES = ("auto",) + tuple(BUILDERS)
#: rows of a hierarchy shown in its preview (spread over its leaves)
PREVIEW_ROWS = 6
#: the most interval levels offered (each doubles the width of the one below)
MAX_LEVELS = 8


def _preview(h) -> dict:
    frame = h.to_frame()
    m = len(frame)
    rows = sorted({int(i) for i in np.linspace(0, m - 1, min(PREVIEW_ROWS, m)).round()})
    return {"headers": [f"level {j}" for j in range(h.height + 1)],
            "nodes": [int(frame[c].nunique()) for c in frame.columns],
            "rows": [[str(v) for v in frame.iloc[i]] for i in rows]}


def hierarchy_rows(ds, chosen: dict | None = None) -> list[dict]:
    """For each quasi-identifier of ``ds``: its hierarchy's origin (a builder or a
    file), height, nodes per level and preview rows, and the choice of the form
    (``chosen``: ``{column: {"builder", "levels"}}``)."""
    chosen = chosen or {}
    out = []
    for c in ds.schema.qis:
        h = ds.hierarchy(c)
        choice = chosen.get(c, {})
        if choice:
            origin = (f"chosen here: {choice['builder']} "
                      f"({DESCRIPTIONS.get(choice['builder'], '')}), written to "
                      f"{Path(h.source).name if h.source else 'a hierarchy file'}")
        elif h.builder is not None:
            origin = f"built from the data: {h.builder} ({DESCRIPTIONS.get(h.builder, '')})"
        elif h.source is not None:
            origin = f"read from {Path(h.source).name}"
        else:
            origin = "given with the data set"
        out.append({"name": c, "origin": origin, "height": h.height,
                    "numeric": bool(h.numeric),
                    "builder": choice.get("builder", "auto"),
                    "levels": int(choice.get("levels", INTERVAL_LEVELS)),
                    **_preview(h)})
    return out


def hierarchies_from_form(form: dict, qis) -> dict:
    """The builder chosen for each QI on the form (``hier_<column>``, with
    ``levels_<column>`` for intervals); "auto" choices are left out."""
    chosen, errors = {}, {}
    for c in qis:
        builder = form.get(f"hier_{c}", "auto") or "auto"
        if builder not in CHOICES:
            errors[f"hier_{c}"] = (f"column {c!r}: builder {builder!r} is not one of "
                                   f"{', '.join(CHOICES)}")
            continue
        if builder == "auto":
            continue
        entry = {"builder": builder}
        if builder == "intervals":
            text = form.get(f"levels_{c}", str(INTERVAL_LEVELS)) or str(INTERVAL_LEVELS)
            try:
                levels = int(text)
                if not 1 <= levels <= MAX_LEVELS:
                    raise ValueError
                entry["levels"] = levels
            except ValueError:
                errors[f"hier_{c}"] = (f"column {c!r}: interval levels {text!r}: give a "
                                       f"whole number from 1 to {MAX_LEVELS}")
                continue
        chosen[c] = entry
    if errors:
        raise FieldErrors(errors)
    return chosen


def build_files(frame, chosen: dict, kinds: dict, folder: Path) -> dict:
    """Build each chosen hierarchy from the column's values in ``frame`` and write it
    (ARX layout, content-addressed, owner-only) under ``folder``; returns the schema's
    ``[hierarchies]`` entries ``{column: {"file", "numeric"}}``.  A builder that does
    not fit the column (masking on codes of different lengths, intervals on text) is
    refused beside its field."""
    from sdceval.app.workspace import private_dir, write_private
    entries, errors = {}, {}
    for c, entry in chosen.items():
        builder = entry["builder"]
        values = frame[c].dropna()   # a kept missing value gets its leaf from the engine
        if builder == "intervals" and kinds.get(c) == "categorical":
            errors[f"hier_{c}"] = (f"column {c!r} is declared categorical: intervals need "
                                   "numbers; choose grouping or masking, or the kind numeric")
            continue
        try:
            h = (BUILDERS[builder](values, name=c, levels=entry["levels"])
                 if builder == "intervals" else BUILDERS[builder](values, name=c))
        except SdcevalError as exc:
            errors[f"hier_{c}"] = f"column {c!r}, {builder}: {exc}"
            continue
        text = h.csv_text()
        digest = hashlib.sha256(f"{h.numeric}\n{text}".encode()).hexdigest()[:16]
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in c)[:40]
        path = private_dir(folder) / f"{safe}-{digest}.csv"
        if not path.exists():
            write_private(path, text)
        entries[c] = {"file": str(path), "numeric": bool(h.numeric)}
    if errors:
        raise FieldErrors(errors)
    return entries
