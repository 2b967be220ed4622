"""What the app's pages before a run compute (issue 31), without any web code: the
preview of a data file (`preview`), the roles inferred with the reason for each
(`role_rows`), the roles a user edited written as a schema file and checked by opening
the data with it (`apply_roles`), and the goal's defaults and checks (`goal_defaults`,
`goal_config`).  Every check is the engine's own (`sdceval.core.loaders.open_dataset`,
`sdceval.experiments.comparison_job.comparison_plan`): an `SdcevalError` it raises is
given back with the form field it concerns (`FieldErrors`)."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.app.fields import FieldErrors
from sdceval.core.schema import KINDS, MISSING_POLICIES, ROLES, SINGLE_ROLES

#: rows of the data shown in the preview
PREVIEW_ROWS = 8




def source_label(source: dict) -> str:
    return source.get("name") or source.get("filename") or source.get("path", "")


def read_frame(source: dict) -> pd.DataFrame:
    """The data of ``source`` (``{"kind": "bundled", "name"}`` or ``{"kind": "upload",
    "path"}``) as read by the engine."""
    if source.get("kind") == "bundled":
        from sdceval.core.loaders import load_dataset
        return load_dataset(source["name"]).frame
    from sdceval.core.tables import load_table
    return load_table(source["path"])


def preview(source: dict) -> dict:
    """Counts and missing values of the data: records, columns, and for each column its
    type, distinct values, missing values and a few examples; the first rows."""
    frame = read_frame(source)
    columns = []
    for c in frame.columns:
        col = frame[c]
        examples = [str(v) for v in col.dropna().unique()[:4]]
        columns.append({"name": str(c), "dtype": str(col.dtype),
                        "distinct": int(col.nunique(dropna=True)),
                        "missing": int(col.isna().sum()), "examples": ", ".join(examples)})
    head = frame.head(PREVIEW_ROWS)
    return {"label": source_label(source), "records": len(frame),
            "n_columns": int(frame.shape[1]), "columns": columns,
            "missing_cells": int(frame.isna().sum().sum()),
            "records_with_missing": int(frame.isna().any(axis=1).sum()),
            "head_columns": [str(c) for c in head.columns],
            "head": [["" if pd.isna(v) else str(v) for v in row]
                     for row in head.itertuples(index=False)]}


def role_rows(source: dict, saved: dict | None = None) -> dict:
    """The roles table: for each column its role, kind and household-key flag, with
    the reason for the role (inferred from the data by
    `sdceval.core.inference.assign_roles`, the bundled data set's schema, or chosen on
    this page), and the missing-value policy."""
    frame = read_frame(source)
    if saved:
        roles = {c: r for r, names in saved.get("roles", {}).items() for c in names}
        reasons = {c: "chosen on this page" for c in roles}
        kinds = dict(saved.get("kinds", {}))
        keys = set(saved.get("household_keys", []))
        missing = saved.get("missing", "refuse")
        notes: list = []
    elif source.get("kind") == "bundled":
        from sdceval.core.loaders import load_dataset
        schema = load_dataset(source["name"]).schema
        roles = {c.name: c.role for c in schema.columns}
        reasons = {c: f"the schema of bundled data set {source['name']!r}" for c in roles}
        kinds = {c.name: c.kind for c in schema.columns if c.role == "qi"}
        keys = set(schema.household_keys)
        missing, notes = schema.missing, []
    else:
        from sdceval.core.inference import assign_roles, identifier_columns
        ids = identifier_columns(frame)
        spec, notes = assign_roles(frame, {}, ids)
        roles = {c: r for r in ROLES for c in (spec.get(r) or [])}
        reasons = {}
        for c in frame.columns:
            c = str(c)
            if c in ids:
                reasons[c] = f"identifies the records: {ids[c]}"
            elif roles.get(c) == "numeric":
                reasons[c] = "numbers: inferred as a numeric attribute"
            elif not frame[c].notna().any():
                reasons[c] = "empty: no value in any record"
            else:
                reasons[c] = "not numeric: ignored unless you give it a role (qi, ...)"
        kinds, keys, missing = {}, set(), "refuse"
    rows = [{"name": str(c), "role": roles.get(str(c), "ignore"),
             "reason": reasons.get(str(c), "not named: ignored"),
             "kind": kinds.get(str(c), ""), "household_key": str(c) in keys}
            for c in frame.columns]
    return {"rows": rows, "missing": missing, "notes": notes, "roles": ROLES,
            "kinds": KINDS, "policies": MISSING_POLICIES}


def _quoted(message: str) -> list[str]:
    return re.findall(r"'([^']*)'", message) + re.findall(r'"([^"]*)"', message)


def column_field(message: str, columns, default: str = "roles") -> str:
    """The form field an error about the roles concerns: ``role_<column>`` for the first
    column it names (quoted), else ``default``."""
    names = set(columns)
    for q in _quoted(message):
        if q in names:
            return f"role_{q}"
    for c in sorted(names, key=len, reverse=True):
        if re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", message):
            return f"role_{c}"
    return default


def roles_from_form(form: dict, columns) -> dict:
    """The roles, kinds, household keys and missing policy of the Roles form."""
    roles: dict = {r: [] for r in ROLES}
    kinds, keys = {}, []
    errors = {}
    for c in columns:
        role = form.get(f"role_{c}", "ignore")
        if role not in ROLES:
            errors[f"role_{c}"] = (f"column {c!r}: role {role!r} is not a role; choose one "
                                   f"of {', '.join(ROLES)}")
            continue
        roles[role].append(c)
        kind = form.get(f"kind_{c}", "")
        if kind:
            if kind not in KINDS:
                errors[f"role_{c}"] = f"column {c!r}: kind {kind!r} is not numeric or categorical"
            else:
                kinds[c] = kind
        if form.get(f"hhkey_{c}"):
            keys.append(c)
    missing = form.get("missing", "refuse")
    if missing not in MISSING_POLICIES:
        errors["missing"] = f"missing = {missing!r}: choose {', '.join(MISSING_POLICIES)}"
    if errors:
        raise FieldErrors(errors)
    return {"roles": {r: v for r, v in roles.items() if v}, "kinds": kinds,
            "household_keys": keys, "missing": missing}


def schema_text(saved: dict) -> str:
    """The roles of the Roles form as a schema file (the ``--schema`` TOML)."""
    from sdceval.core.schema_toml import _toml_key, _toml_list, _toml_str
    lines = [("# roles chosen in the app (sdceval serve); give it to any command with "
              "--schema")]
    for role, names in saved["roles"].items():
        if role in SINGLE_ROLES:
            # more than one is refused by the schema, naming them
            lines.append(f"{role} = {_toml_list(names) if len(names) > 1 else _toml_str(names[0])}")
        else:
            lines.append(f"{role} = {_toml_list(names)}")
    lines.append(f"household_keys = {_toml_list(saved['household_keys'])}")
    lines.append(f"missing = {_toml_str(saved['missing'])}")
    if saved["kinds"]:
        lines.append("")
        lines.append("[kinds]")
        lines += [f"{_toml_key(c)} = {_toml_str(k)}" for c, k in saved["kinds"].items()]
    if saved.get("hierarchies"):
        lines += ["", "[hierarchies]  # built on the Roles page (ARX layout)"]
        lines += [f"{_toml_key(c)} = {{ file = {_toml_str(e['file'])}, numeric = "
                  f"{'true' if e['numeric'] else 'false'} }}"
                  for c, e in saved["hierarchies"].items()]
    return "\n".join(lines) + "\n"


def data_argument(source: dict) -> str:
    """The ``data`` of a run's configuration: a bundled data set's name or the path."""
    return source["name"] if source.get("kind") == "bundled" else str(source["path"])


def apply_roles(source: dict, saved: dict, schema_path: Path):
    """Write the roles as the schema file ``schema_path`` and open the data with it (the
    engine's checks); an `SdcevalError` is given back beside the column it names
    (`FieldErrors`).  The hierarchies chosen for the QIs (``saved["hierarchy_choices"]``,
    `sdceval.app.hierarchies`) are built and written beside it first, and named in it
    (``saved["hierarchies"]``, set here).  Returns the `Dataset`."""
    from sdceval.app.hierarchies import build_files
    from sdceval.app.workspace import write_private
    from sdceval.core.loaders import open_dataset
    qis = set(saved["roles"].get("qi", []))
    choices = {c: e for c, e in (saved.get("hierarchy_choices") or {}).items() if c in qis}
    saved["hierarchy_choices"] = choices
    saved["hierarchies"] = (build_files(read_frame(source), choices, saved["kinds"],
                                        schema_path.parent / "hierarchies")
                            if choices else {})
    write_private(schema_path, schema_text(saved))
    columns = [c for names in saved["roles"].values() for c in names]
    try:
        return open_dataset(data_argument(source), schema_file=str(schema_path))
    except FieldErrors:
        raise
    except SdcevalError as exc:
        raise FieldErrors({column_field(str(exc), columns): str(exc)}) from None


# -- the goal ----------------------------------------------------------------------------
def goal_defaults(ds) -> dict:
    """The comparison's defaults on ``ds`` (`sdceval.compare.families.
    comparison_defaults`: candidates, risk, target, utilities) and the guideline
    profiles (``sdceval check --list``)."""
    from sdceval.compare.families import comparison_defaults
    from sdceval.guidelines.profiles import list_profiles
    try:
        defaults = comparison_defaults(ds)
    except SdcevalError as exc:
        defaults = {"methods": [], "risk": "", "target": "", "utilities": "",
                    "problem": str(exc)}
    if not isinstance(defaults["utilities"], str):   # a declared tuple of names
        defaults["utilities"] = ",".join(defaults["utilities"])
    defaults["profiles"] = [(p.name, p.title) for p in list_profiles()]
    defaults["columns"] = list(ds.schema.qis) + list(ds.schema.numeric)
    return defaults


#: the goal form's fields an error's words point to, the first match wins
_GOAL_FIELDS = (("guideline", "guideline"), ("profile", "guideline"),
                ("intruder", "intruder"), ("utility", "utilities"),
                ("utilities", "utilities"), ("target", "target"),
                ("repeats", "repeats"), ("method", "methods"), ("strateg", "methods"))


def goal_field(message: str) -> str:
    low = message.lower()
    return next((f for word, f in _GOAL_FIELDS if word in low), "methods")


def goal_config(form: dict, dataset=None) -> dict:
    """The goal form as the options of a ``[[comparison]]`` table, checked with the
    engine's one parse (`comparison_plan`) and, given the ``dataset``, against its roles
    as a comparison checks them before its first evaluation (`ComparisonPlan.on`,
    `check_needs`: a utility that needs a label the data lack is refused here, not
    after the run started); errors beside their fields."""
    from sdceval.compare.ranking import check_needs
    from sdceval.experiments.comparison_job import comparison_plan
    errors = {}
    methods = [m.strip() for m in re.split(r"[\n,]+", form.get("methods", "")) if m.strip()]
    goal: dict = {"methods": methods} if methods else {}
    how = form.get("target_kind", "default")
    if how == "number":
        try:
            goal["target"] = str(float(form.get("target_number", "")))
        except ValueError:
            errors["target"] = (f"target {form.get('target_number', '')!r}: give a number "
                                "on the risk measure's scale, e.g. 0.05")
    elif how == "reference":
        ref = form.get("target_reference", "").strip()
        if ref:
            goal["target"] = ref
        else:
            errors["target"] = "target: give a reference strategy, e.g. mdav:k=5"
    elif how == "guideline":
        if form.get("guideline", "").strip():
            goal["guideline"] = form["guideline"].strip()
        else:
            errors["guideline"] = "guideline: choose a profile"
    for key in ("utilities", "intruder"):
        if form.get(key, "").strip():
            goal[key] = form[key].strip()
    try:
        repeats = int(form.get("repeats", "1") or 1)
        if repeats < 1:
            raise ValueError
        goal["repeats"] = repeats
    except ValueError:
        errors["repeats"] = f"repeats {form.get('repeats')!r}: give a whole number >= 1"
    if errors:
        raise FieldErrors(errors)
    try:
        plan = comparison_plan(goal)
        if dataset is not None:
            check_needs(dataset, plan.on(dataset))
    except SdcevalError as exc:
        raise FieldErrors({goal_field(str(exc)): str(exc)}) from None
    return goal


# -- the results ---------------------------------------------------------------------------
def _number(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def ranking_view(res: dict) -> dict:
    """The ranking of a run's results (`sdceval.app.runs.RunManager.results`) as the
    page shows it: headers by the comparison's labels; each cell ``{"text", "title",
    "why"}``.  A candidate left unranked has the rank "–" with its note (``title``, and
    ``why``: the id of the note on the page); ``matched`` reads "yes", or "no — nearest
    reachable <risk> at <setting>" (the point the search stopped at)."""
    display = res.get("display") or {}
    columns = list(display.get("columns") or [])
    labels = display.get("labels") or {}
    methods = [r.get("method") for r in res.get("ranking") or []]
    unranked = res.get("unranked") or {}
    run = str(res.get("run_id", ""))
    rows = []
    for i, row in enumerate(display.get("rows") or []):
        method = methods[i] if i < len(methods) else None
        cells = []
        for c in columns:
            v = row.get(c)
            cell = {"text": "" if v is None else _number(v), "title": "", "why": ""}
            if c.startswith("rank_") and v is None:
                cell["text"] = "–"
                if method in unranked:
                    cell["title"], cell["why"] = unranked[method], note_id(run, method)
            elif c.startswith("rank_") and isinstance(v, float) and v.is_integer():
                cell["text"] = str(int(v))  # a rank read back from JSON beside a None
            elif c == "matched" and isinstance(v, bool):
                where = f" at {row['setting']}" if row.get("setting") else ""
                cell["text"] = "yes" if v else (
                    f"no — nearest reachable {_number(row.get('risk'))}{where}")
            cells.append(cell)
        rows.append(cells)
    by_note = {n: m for m, n in unranked.items()}
    from sdceval.core.glossary import and_list, display_name
    ties = [f"on {labels.get(u, u)}: {and_list([display_name(m) for m in g])} share a rank"
            for u, groups in (res.get("ties") or {}).items() for g in groups]
    return {"columns": [(c, labels.get(c, c)) for c in columns], "rows": rows, "ties": ties,
            "notes": [(note_id(run, by_note[n]) if n in by_note else "", n)
                      for n in res.get("notes") or []]}


def note_id(run_id: str, method: str) -> str:
    """The page id of the note saying why ``method`` is unranked in run ``run_id`` (two
    runs are shown side by side on one page)."""
    return "why-" + re.sub(r"[^A-Za-z0-9_-]", "-", f"{run_id}-{method}".strip("-"))
