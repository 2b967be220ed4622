"""The schema a data set was read with, printed as a schema file that ``--schema``
reads (``--print-schema``; issue 19 item 5): roles given and inferred, kinds, hierarchy
files or the builder of each hierarchy made from the data, and the missing-value
policy, with the data set's notes as comments."""
from __future__ import annotations

import json
import re
from pathlib import Path

from sdceval.core.dataset import Dataset
from sdceval.core.schema import ROLES, missing_policy

def _toml_str(text) -> str:
    # a TOML basic string: JSON's escapes are TOML's (non-ASCII written as it is)
    return json.dumps(str(text), ensure_ascii=False)


def _toml_key(name) -> str:
    return str(name) if re.fullmatch(r"[A-Za-z0-9_-]+", str(name)) else _toml_str(name)


def _toml_list(names) -> str:
    return "[" + ", ".join(_toml_str(n) for n in names) + "]"


def schema_toml(ds: Dataset, data: str | None = None, missing: str | None = None) -> str:
    """The schema ``ds`` was read with, as the TOML file ``--schema`` reads (the
    ``--print-schema`` of every command that reads data): every role (inferred ones
    included), the missing-value policy, the hierarchy files (absolute paths) and, in
    comments, the hierarchies built from the data, and the kinds: in effect for the
    numeric columns and those read as text exactly as written (declared categorical,
    or numbers with leading zeros), a comment for the other text columns (declaring them
    categorical would read markers such as ``NA`` as values).  The data set's notes head
    the file as comments.  Given back with ``--schema``, it gives the same roles.
    ``missing`` is the policy to write when ``ds`` was opened with another (the
    ``--print-schema`` of data that ``refuse`` would refuse opens them with ``drop``)."""
    s, frame = ds.schema, ds.frame
    data = data or ds.name
    missing = missing_policy(missing) if missing is not None else s.missing
    out = [f"# schema of {data} ({len(s.columns)} columns) as sdceval reads it; save it to "
           "a file,", "# edit it and give it back with --schema FILE (README, 'Your own data')"]
    for m in dict.fromkeys(ds.messages):
        if missing != "drop" and m.startswith("removed ") and "(missing = drop)" in m:
            m = (m.replace("removed ", "", 1).replace(" (missing = drop)", "")
                  .split("; ")[0] + ": missing = \"refuse\" refuses these data, "
                 "\"drop\" removes those records")
            m = m.replace(" records with missing values", " records have missing values", 1)
        out.append(f"# note: {m}")
    out.append("")
    single = {"sensitive": "the sensitive attribute", "label": "the class label",
              "weight": "a survey's design weight (> 0), for the population risks",
              "household": "household (cluster) id: never published unless kept"}
    what = {"qi": "quasi-identifiers (generalized by mondrian, bucketization, ...)",
            "numeric": "attributes masked by the perturbative methods (mdav, noise, ...)",
            "passthrough": "published unchanged beside what the method protects",
            "identifier": "identify the records: never used, never published",
            "ignore": "never used, never published"}
    for role in ROLES:
        # a kept weight or household column keeps its role and is listed as kept
        names = s.names(role) + (list(s.kept) if role == "passthrough" else [])
        if role in single:
            out.append(f"{role} = {_toml_str(names[0])}  # {single[role]}" if names else
                       f"# {role} = \"COLUMN\"  # {single[role]}: none")
        else:
            out.append(f"{role} = {_toml_list(names)}  # {what[role]}")
    out.append(f"household_keys = {_toml_list(s.household_keys)}  # quasi-identifiers "
               "equal for every member of a household (checked)")
    out.append(f"missing = {_toml_str(missing)}  # records with a missing value in a "
               "used column: \"refuse\", \"drop\" or \"keep\" (categorical QIs)")
    out += ["", "[hierarchies]  # ARX layout: one row per leaf, one label per level up to *"]
    built, other = [], []
    for c in s.columns:
        if c.hierarchy is not None and c.hierarchy.source is not None:
            out.append(f"{_toml_key(c.name)} = {{ file = "
                       f"{_toml_str(Path(c.hierarchy.source).resolve().as_posix())}, "
                       f"numeric = {'true' if c.hierarchy.numeric else 'false'} }}")
        elif c.hierarchy is not None:
            out.append(f"# {c.name}: given in Python, not read from a file")
        elif c.role == "qi":
            built.append(f"{c.name}: {ds.hierarchy(c.name).builder}")
        elif c.role not in ("identifier", "sensitive", "label"):
            from sdceval.core.hierarchy_builders import choose_builder
            values = frame[c.name].dropna()
            if len(values):
                other.append(f"{c.name}: {choose_builder(values, c.kind)}")
    if built:
        out.append(f"# built from the data: {', '.join(built)}; to edit one: sdceval "
                   f"hierarchy export --data {data} COLUMN --out FILE.csv, then COLUMN = "
                   "{ file = \"FILE.csv\" }")
    if other:
        out.append(f"# built for a column made a quasi-identifier: {', '.join(other)}")
    out += ["", "[kinds]  # \"numeric\" or \"categorical\" (read as text exactly as written:"
            " only an empty field is missing)"]
    exact = set(getattr(ds, "read_as_text", ()))
    for c in s.columns:
        line = f"{_toml_key(c.name)} = {_toml_str(c.kind)}"
        if c.name in frame.columns and not frame[c.name].notna().any():
            # nothing to read a kind from (inferred ignored: issue 27 item 6)
            out.append(f"# {_toml_key(c.name)}: empty (no value in any record), no kind")
        elif c.kind == "numeric" or c.name in exact:
            out.append(line)
        else:
            out.append(f"# {line}  (from the data: text, NA and null markers missing)")
    return "\n".join(out) + "\n"
