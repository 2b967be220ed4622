"""Which columns of a user's own file identify its records, and the roles inferred when
none are given (issue 19 item 5).

A column that identifies the records (`identifier_reason`: named like an identifier, or
holding the record numbers, or one distinct code per record) is never inferred as a
quasi-identifier or a numeric attribute: it gets role ``identifier`` (never used nor
published) unless the user names it in a role, which is respected with a note; and
``--keep`` refuses to publish it unless forced (``--keep-identifier``).  Values all
distinct make an identifier only when they are codes (texts, or whole numbers that look
assigned: `unique_reason`), never when they are a measured quantity (an expenditure, a
weight: issue 27 item 11).  `infer_roles` gives a file without any role its roles:
identifiers, the other numeric columns as ``numeric``, the rest ignored (an all-empty
column too, with its reason: issue 27 item 6).  `sdceval.core.loaders.open_dataset` and
`sdceval.core.frames.as_dataset` (DataFrames) both use it.
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np
import pandas as pd

from sdceval.core.dataset import identifier_range
from sdceval.core.errors import SdcevalError
from sdceval.core.schema import ROLE_KEYS, ROLES, role_names

# -- identifiers -------------------------------------------------------------------------
#: words that make a column's name an identifier's when they end it, or come before a word
#: of `NUMBER_WORDS` or `AFTER_WORDS`, or (``id``) begin it: the name is split into words
#: at ``_ - .``, spaces and camelCase, case-insensitive (``patient_id``, ``PatientID``,
#: ``patientId`` -> patient, id; ``phone_number``, ``email_address``, ``id_patient``, but
#: not ``phone_model``); the name written as one word counts too (``e-mail`` -> email)
IDENTIFIER_WORDS = ("id", "ids", "uid", "uuid", "guid", "ssn", "mrn", "email", "phone",
                    "telephone", "fax", "passport", "iban", "address", "surname",
                    "firstname", "lastname", "fullname", "forename", "username", "login")
#: a word of `NUMBER_WORDS` after one of these (``patient_name``, ``first_name``,
#: ``record_no``, ``case_number``, ``nhs_number``), or joined to it (``patientid``,
#: ``recordnumber``), is an identifier's name too
OWNER_WORDS = ("patient", "person", "user", "customer", "client", "member", "employee",
               "subject", "participant", "respondent", "record", "case", "account",
               "household", "student", "contact", "first", "last", "full", "given",
               "middle", "maiden", "family", "social", "security", "insurance", "policy",
               "license", "licence", "tax", "national", "nhs", "card", "mobile")
NUMBER_WORDS = ("id", "name", "number", "no", "nr", "num")
#: words after which a word of `IDENTIFIER_WORDS` still names an identifier
AFTER_WORDS = ("address", "hash", "hashed", "key")
#: a column of at least this many values (missing ones aside) identifies the records when
#: they are distinct codes (`unique_reason`), or text more than `TEXT_DISTINCT` distinct;
#: fewer prove nothing (5 distinct ages are an attribute), but for the record numbers 1..n
UNIQUE_MIN = 20
#: distinct whole numbers all written with this many digits or more, and as many each,
#: are codes (patient numbers 100000..999999), not a measured quantity
CODE_DIGITS = 4
#: the chance below which distinct values are not a coincidence: ``n`` values of any
#: distribution over a range of ``m`` whole numbers are all distinct with probability at
#: most exp(-n(n-1)/2m) (the birthday bound; the uniform distribution maximizes it), so
#: ``n`` distinct values in a range narrower than n(n-1) / (2 ln(1/CHANCE)) were assigned
#: to be distinct (codes), not measured
CHANCE = 1e-3
#: the share of distinct values above which a text column identifies the records (names,
#: e-mail addresses, free text)
TEXT_DISTINCT = 0.95
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", flags=re.ASCII)


def named_like_identifier(name) -> bool:
    """True when the column's name is an identifier's (`IDENTIFIER_WORDS`, `OWNER_WORDS`
    and `NUMBER_WORDS`): ``id``, ``patient_id``, ``PatientID``, ``ssn``, ``name``,
    ``first_name``, ``email``, ``phone_number``; not ``valid``, ``covid``, ``paid``,
    ``drug_name`` or ``phone_model``."""
    name = str(name)
    words = [w.lower() for w in _WORDS.findall(name)]
    joined = re.sub(r"[^0-9a-z]", "", name.lower())
    if words == ["name"] or words[:1] in (["id"], ["ids"]):
        return True
    if any(w in IDENTIFIER_WORDS and (i + 1 == len(words)
                                      or words[i + 1] in NUMBER_WORDS + AFTER_WORDS)
           for i, w in enumerate(words)):
        return True
    if joined in IDENTIFIER_WORDS or any(joined == o + w for o in OWNER_WORDS
                                         for w in NUMBER_WORDS):
        return True
    return any(a in OWNER_WORDS and b in NUMBER_WORDS for a, b in zip(words, words[1:]))


def unique_reason(values) -> str | None:
    """Why the values identify the records (module docstring), or None: the rule that
    fires, named first in the reason, missing values aside, in this order:

    * *record numbers*: the values are 0..n-1 or 1..n (any count);
    * *fixed-width codes*: at least `UNIQUE_MIN` whole numbers, all distinct, not
      negative, every one written with the same number of digits, at least `CODE_DIGITS`
      (patient numbers 100000..999999);
    * *dense codes*: at least `UNIQUE_MIN` whole numbers, all distinct, in a range so
      narrow that values measured rather than assigned would repeat one (`CHANCE`: the
      birthday bound; record numbers with gaps);
    * *distinct texts*: at least `UNIQUE_MIN` texts, more than `TEXT_DISTINCT` of them
      distinct (names, e-mail addresses).

    Whole numbers all distinct otherwise (household expenditure: 4580 distinct amounts
    from 3377 to 99 962 044 in sdcMicro's ``testdata``), numbers with a fractional part
    and booleans are measured quantities: never an identifier (issue 27 item 11)."""
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s):
        rng = identifier_range(s)
        if rng is not None:
            return f"its values are the record numbers {rng[0]}..{rng[1]}"
        x = s.to_numpy(dtype=float, na_value=np.nan)
        x = x[~np.isnan(x)]
        n = len(x)
        if (n < UNIQUE_MIN or not np.all(np.isfinite(x) & (x == np.round(x)) & (x >= 0))
                or len(np.unique(x)) != n):
            return None
        digits = np.unique(_digits(x))
        if len(digits) == 1 and digits[0] >= CODE_DIGITS:
            return (f"fixed-width codes: its {n} values are distinct whole numbers of "
                    f"{digits[0]} digits each")
        span = float(x.max() - x.min() + 1)
        if span < n * (n - 1) / (2 * np.log(1 / CHANCE)):
            return (f"dense codes: its {n} values are distinct whole numbers within a "
                    f"range of {span:.0f}, where measured values would repeat")
        return None
    s = s.dropna()
    if len(s) < UNIQUE_MIN:
        return None
    distinct = s.astype(str).nunique()
    if distinct == len(s):
        return f"distinct texts: its {len(s)} values are all distinct"
    if distinct > TEXT_DISTINCT * len(s):
        return f"distinct texts: {distinct} of its {len(s)} values are distinct"
    return None


def _digits(x: np.ndarray) -> np.ndarray:
    """The number of decimal digits of each whole number >= 0 in ``x`` (floats), without
    a loop over the values: log10, corrected where it rounds across a power of ten."""
    d = np.floor(np.log10(np.maximum(x, 1))).astype(np.int64) + 1
    d = np.where(x >= 10.0 ** d, d + 1, d)
    return np.where((d > 1) & (x < 10.0 ** (d - 1)), d - 1, d)


def identifier_reason(name, values) -> str | None:
    """Why the column identifies the records (`named_like_identifier`,
    `unique_reason`), or None."""
    reasons = (["named like an identifier"] if named_like_identifier(name) else []) + \
        [r for r in [unique_reason(values)] if r]
    return "; ".join(reasons) or None


def identifier_columns(frame: pd.DataFrame) -> dict[str, str]:
    """The columns of ``frame`` that identify the records, with the reason."""
    return {str(c): r for c in frame.columns
            if (r := identifier_reason(c, frame[c])) is not None}


def refuse_kept_identifiers(frame: pd.DataFrame, asked, forced, declared=(),
                             ids: Mapping | None = None) -> None:
    """Refuse ``--keep`` (``asked``) of a column that identifies the records (declared
    ``identifier`` in the schema file, or `identifier_reason`) unless it is ``forced``."""
    for c in asked:
        if c in forced or c not in frame.columns:
            continue  # an unknown column is named by the schema's own check
        if ids is not None:
            why = ids.get(c)
        else:
            why = identifier_reason(c, frame[c])
        if c in declared:
            why = "role identifier in the schema file" + (f"; {why}" if why else "")
        if why:
            raise SdcevalError(
                f"--keep {c}: column {c!r} identifies the records ({why}); it is never "
                "published unchanged unless you force it, since it would single out "
                f"every record: to publish it anyway, give --keep-identifier {c} instead "
                f"of --keep {c} (Python: keep_identifiers=[{c!r}]); else leave it out "
                "(it is dropped from every release)")


def infer_roles(frame: pd.DataFrame, spec: Mapping, ids: Mapping | None = None
                ) -> tuple[dict, str]:
    """Roles for a file given without any (``spec`` may list columns under ``ignore``
    and ``identifier``): the columns that identify the records (``ids``, default
    `identifier_columns`) get role ``identifier``, the other numeric columns
    ``numeric`` but for the empty ones (no value in any record: nothing to use, and
    every record would miss it), the rest stay ignored.  Returns the spec with those
    roles and the note that says so, with each role's reason."""
    ids = identifier_columns(frame) if ids is None else ids
    ignored = role_names(spec.get("ignore"), "ignore")
    declared = role_names(spec.get("identifier"), "identifier")
    # a survey's design columns are named, never inferred (`sdceval.core.schema`)
    design = role_names(spec.get("weight"), "weight") + role_names(spec.get("household"),
                                                                  "household")
    found = [c for c in ids if c not in ignored and c not in declared and c not in design]
    taken = set(ignored) | set(declared) | set(found) | set(design)
    empty = [c for c in frame.columns if c not in taken and not frame[c].notna().any()]
    taken |= set(empty)
    numeric = [c for c in frame.columns if c not in taken
               and pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    other = [c for c in frame.columns if c not in taken and c not in numeric]
    note = ("roles inferred from the data: numeric = " + (", ".join(numeric) or "(none)")
            + (("; identifier (never used nor published) = "
                + ", ".join(f"{c} ({ids[c]})" for c in found)) if found else "")
            + (f"; ignored (not numeric) = {', '.join(other)}" if other else "")
            + (f"; ignored (empty: no value in any record) = {', '.join(empty)}"
               if empty else "")
            + (f"; ignored (schema) = {', '.join(ignored)}" if ignored else "")
            + (f"; identifier (schema) = {', '.join(declared)}" if declared else "")
            + "; give --numeric/--qi or --schema to choose (--print-schema prints these "
              "roles as a schema file to edit)")
    return {**spec, "numeric": numeric, "identifier": declared + found}, note


#: what a role does with a column, for the note on an identifier given that role
_ROLE_EFFECT = {"qi": "it is generalized and published as a quasi-identifier",
                "sensitive": "it is published as the sensitive attribute",
                "numeric": "it is masked and published as an attribute",
                "label": "it is published as the class label",
                "passthrough": "it is published unchanged: it singles out every record"}


def identifiers_beside_roles(frame: pd.DataFrame, spec: Mapping, ids: Mapping,
                              forced=()) -> tuple[dict, list[str]]:
    """Roles given: a column they do not name that identifies the records gets role
    ``identifier`` (it would be dropped anyway: no note); one they name keeps its role,
    with a note (but for the record numbers as a QI or numeric attribute, which
    `Dataset` notes)."""
    named = {n: r for r in ROLES for n in role_names(spec.get(r), r)}
    out = dict(spec)
    out["identifier"] = (role_names(spec.get("identifier"), "identifier")
                         + [c for c in ids if c not in named])
    notes = []
    for c, why in ids.items():
        role = named.get(c)
        if role not in _ROLE_EFFECT:
            continue
        if role in ("qi", "numeric") and identifier_range(frame[c]) is not None:
            continue
        if role == "passthrough" and c in forced:
            notes.append(f"column {c!r} identifies the records ({why}) and is published "
                         "unchanged, as --keep-identifier (keep_identifiers=) forces: it "
                         "singles out every record")
            continue
        notes.append(f"column {c!r} looks like an identifier ({why}) but has role {role}, "
                     f"as asked: {_ROLE_EFFECT[role]}; if it identifies the records, give "
                     "it role identifier (never used nor published)")
    return out, notes


def assign_roles(frame: pd.DataFrame, spec: Mapping, ids: Mapping | None = None,
                 forced=()) -> tuple[dict, list[str]]:
    """The roles a data set read from ``frame`` gets, and the notes that say so: with
    no role given (`ROLE_KEYS`), `infer_roles`; else the given ones, the columns that
    identify the records and are not named becoming ``identifier``
    (`identifiers_beside_roles`).  One rule for files (`sdceval.core.loaders`) and
    DataFrames (`sdceval.core.frames`)."""
    ids = identifier_columns(frame) if ids is None else ids
    if not any(k in spec for k in ROLE_KEYS):
        spec, note = infer_roles(frame, spec, ids)
        return spec, [note]
    return identifiers_beside_roles(frame, spec, ids, forced)
