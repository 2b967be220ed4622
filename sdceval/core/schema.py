"""Column roles of a data set (SPEC §1).

Roles: ``qi`` (quasi-identifier), ``sensitive``, ``numeric`` (attribute masked by the
perturbative methods), ``label`` (class attribute for the classification metric),
``passthrough`` (published unchanged beside what the method protects, only because the
user asked for it), ``weight`` (a survey's design weight: each record stands for that
many units of the population; > 0; read by the population risk measures), ``household``
(the id of the household, or any cluster, a record belongs to: an identifier, used by
the household risk and by household-aware protection), ``identifier`` (a column that identifies the records: a patient
number, a name; never used, never published, and never kept with ``--keep`` unless
forced: `sdceval.core.loaders`) and ``ignore`` (never used nor published).  Kind is
``numeric`` or ``categorical``; a QI may carry a `Hierarchy`.

Weights and households are never inferred (a column is a weight because the survey's
design says so, not because it holds positive numbers) and never published unless the
user keeps them (``passthrough`` / ``--keep`` naming the weight or household column
keeps its role and publishes it unchanged: `Schema.kept`).  ``household_keys`` names the
QIs that are household-level (equal for every member of a household: the region, the
dwelling type, the household size); the data set checks that they are, and
household-aware methods change them for all members alike (issue 29 item 4).

A schema also says what to do with records holding a missing value in a column it uses
(any role but ``identifier`` and ``ignore``): ``missing = "refuse"`` (the default: the
data set is refused, with the columns and counts named), ``"drop"`` (those records are
removed, and the data set says how many: `Dataset.messages`) or ``"keep"`` (a survey's
item non-response: records with missing values in *categorical* quasi-identifiers are
kept, the missing value a leaf of its own of the QI's hierarchy, matching every category
in the population risks as sdcMicro's ``NA``; a missing value in any other used column
is still refused: `sdceval.core.dataset.Dataset`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError, plain, suggest
from sdceval.core.hierarchy import Hierarchy

ROLES = ("qi", "sensitive", "numeric", "label", "passthrough", "weight", "household",
         "identifier", "ignore")
#: roles whose columns are neither used nor published (nor checked for missing values)
UNUSED_ROLES = ("identifier", "ignore")
#: what to do with records holding a missing value in a used column (``missing = ...``)
MISSING_POLICIES = ("refuse", "drop", "keep")
KINDS = ("numeric", "categorical")
#: roles that hold one column at most (a one-element list is accepted, pycanon's convention)
SINGLE_ROLES = ("sensitive", "label", "weight", "household")
#: roles of a survey's design: published only when kept (`Schema.kept`)
DESIGN_ROLES = ("weight", "household")


def column_names(frame: pd.DataFrame) -> list[str]:
    """The frame's column names as text (``pd.DataFrame(ndarray)`` names them 0, 1, ...:
    a role may then name a column ``0`` or ``"0"``), refusing duplicates and a MultiIndex:
    a role names a column by one name, so two columns cannot share one."""
    if isinstance(frame.columns, pd.MultiIndex):
        shown = ", ".join(map(repr, frame.columns[:4])) + (", ..." if frame.shape[1] > 4
                                                            else "")
        raise SdcevalError(
            f"the columns are a MultiIndex ({shown}): a role names a column by one name; "
            "flatten them first, e.g. df.columns = ['_'.join(map(str, c)) for c in "
            "df.columns]")
    names = [str(c) for c in frame.columns]
    idx = pd.Index(names)
    dup = list(dict.fromkeys(idx[idx.duplicated()]))
    if dup:
        raise SdcevalError(
            f"duplicated column name(s) {', '.join(map(repr, dup))}: every column needs its "
            "own name (integer and text names such as 0 and '0' count as the same); rename "
            "them (df.columns = [...], or the file's header), or keep the first of each "
            "(df = df.loc[:, ~df.columns.duplicated()])")
    return names


def _is_name(v) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, np.integer)) and not isinstance(v, bool))


def role_names(value, role: str) -> list[str]:
    """Column names given for ``role``: ``None`` -> [], a bare name -> [name] (not its
    letters), a list -> its items; integer names become text."""
    if value is None:
        return []
    if _is_name(value):
        return [str(value)] if str(value) else []
    if isinstance(value, (Mapping, set, frozenset)) or not isinstance(value, Iterable):
        raise SdcevalError(f"role {role}: expected a column name or a list of column names, "
                           f"got {plain(value)!r}")
    out = []
    for v in value:
        if not _is_name(v):
            raise SdcevalError(f"role {role}: column names must be text or integers, got "
                               f"{plain(v)!r}")
        out.append(str(v))
    if role in SINGLE_ROLES and len(out) > 1:
        raise SdcevalError(
            f"only one {role} column is supported, got {', '.join(map(repr, out))}; give "
            f"one of them role {role} and the others role qi, passthrough or ignore")
    return out


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    role: str
    kind: str
    hierarchy: Hierarchy | None = field(default=None, compare=False)


def missing_policy(value, where: str = "schema") -> str:
    """``value`` checked as a missing-value policy (`MISSING_POLICIES`); None -> refuse."""
    if value is None:
        return "refuse"
    if value not in MISSING_POLICIES:
        raise SdcevalError(
            f"{where}: missing = {plain(value)!r}: the policy for records with missing "
            "values is \"refuse\" (the default), \"drop\" or \"keep\" (categorical "
            "quasi-identifiers only)."
            + suggest(str(value), MISSING_POLICIES))
    return value


class Schema:
    """The roles, kinds and hierarchies of a data set's columns, and what to do with
    records holding missing values (``missing``: `MISSING_POLICIES`)."""

    def __init__(self, columns: Iterable[ColumnSpec], missing: str = "refuse",
                 household_keys: Iterable[str] = (), kept: Iterable[str] = ()):
        self.missing = missing_policy(missing)
        self.columns = tuple(c if isinstance(c.name, str) else
                             ColumnSpec(str(c.name), c.role, c.kind, c.hierarchy)
                             for c in columns)
        seen = set()
        for c in self.columns:
            if c.role not in ROLES:
                raise SdcevalError(
                    f"column {c.name!r}: unknown role {c.role!r}.{suggest(c.role, ROLES)} "
                    f"Roles: {', '.join(ROLES)}")
            if c.kind not in KINDS:
                raise SdcevalError(f"column {c.name!r}: kind must be numeric or categorical")
            if c.name in seen:
                raise SdcevalError(
                    f"column {c.name!r} is given two roles; a column has exactly one role "
                    "(a sensitive attribute cannot also be a quasi-identifier)")
            seen.add(c.name)
        if len(self.names("sensitive")) > 1:
            raise SdcevalError(
                f"only one sensitive column is supported, got {self.names('sensitive')}")
        if len(self.names("label")) > 1:
            raise SdcevalError(f"only one label column is supported, got {self.names('label')}")
        for role in DESIGN_ROLES:
            if len(self.names(role)) > 1:
                raise SdcevalError(f"only one {role} column is supported, got "
                                   f"{self.names(role)}")
        self._by_name = {c.name: c for c in self.columns}
        self.household_keys = [str(k) for k in role_names(household_keys, "household_keys")]
        for k in self.household_keys:
            if k not in self.qis:
                raise SdcevalError(
                    f"household_keys: {k!r} is not a quasi-identifier; household-level "
                    f"keys are QIs equal for every member of a household (QIs: "
                    f"{', '.join(self.qis) or 'none'}){suggest(k, self.qis)}")
        if self.household_keys and self.household is None:
            raise SdcevalError(
                "household_keys are given but no household column: name the column that "
                "identifies each record's household (--household COL, household = \"COL\")")
        self.kept = tuple(dict.fromkeys(str(k) for k in kept))
        for k in self.kept:
            if k not in self._by_name or self._by_name[k].role not in DESIGN_ROLES:
                raise SdcevalError(f"kept design column {k!r} is not the weight or the "
                                   "household column")

    def __getitem__(self, name: str) -> ColumnSpec:
        return self._by_name[str(name)]

    def __contains__(self, name: str) -> bool:
        return str(name) in self._by_name

    def names(self, role: str) -> list[str]:
        return [c.name for c in self.columns if c.role == role]

    def one(self, role: str) -> str | None:
        """The column of a single-column role (`SINGLE_ROLES`), or None."""
        s = self.names(role)
        return s[0] if s else None

    @property
    def qis(self) -> list[str]:
        return self.names("qi")

    @property
    def numeric(self) -> list[str]:
        return self.names("numeric")

    @property
    def passthrough(self) -> list[str]:
        """Columns the user asked to publish unchanged (they are not protected)."""
        return self.names("passthrough")

    @property
    def identifiers(self) -> list[str]:
        """Columns that identify the records (never used nor published)."""
        return self.names("identifier")

    @property
    def weight(self) -> str | None:
        """The design-weight column, or None (the file is the whole population)."""
        return self.one("weight")

    @property
    def household(self) -> str | None:
        """The household (cluster) id column, or None."""
        return self.one("household")

    @property
    def sensitive(self) -> str | None:
        return self.one("sensitive")

    @property
    def label(self) -> str | None:
        return self.one("label")

    def with_roles(self, **changes) -> "Schema":
        """A copy with some roles changed, e.g. ``with_roles(qi=[...], sensitive="x")``."""
        mapping = {c.name: c for c in self.columns}
        out = {n: ColumnSpec(n, "ignore", c.kind, c.hierarchy) for n, c in mapping.items()}
        unknown_roles = [r for r in changes if r not in ROLES]
        if unknown_roles:
            r = unknown_roles[0]
            raise SdcevalError(f"unknown role {r!r}.{suggest(r, ROLES)} Roles: {', '.join(ROLES)}")
        changes = {r: role_names(v, r) for r, v in changes.items()}
        # a column named in the changes takes that role; the old roles apply to the rest
        # (else adding a column that was 'ignore' to the QIs would be undone)
        named = {n for names in changes.values() for n in names}
        twice = [n for n in named if sum(n in v for v in changes.values()) > 1]
        if twice:
            raise SdcevalError(f"column {twice[0]!r} is given two roles; a column has exactly "
                               "one role")
        for role in ROLES:
            names = changes.get(role, [n for n in self.names(role) if n not in named])
            for n in names:
                if n not in mapping:
                    raise SdcevalError(f"unknown column {n!r}.{suggest(n, mapping)}")
                out[n] = ColumnSpec(n, role, mapping[n].kind, mapping[n].hierarchy)
        hk = [k for k in self.household_keys if out[k].role == "qi"]
        kept = [k for k in self.kept if out[k].role in DESIGN_ROLES]
        return Schema(out.values(), missing=self.missing, household_keys=hk, kept=kept)

    @classmethod
    def from_roles(cls, frame: pd.DataFrame, *, qi: Iterable[str] | str = (),
                   sensitive: str | Iterable[str] | None = None,
                   numeric: Iterable[str] | str = (),
                   label: str | Iterable[str] | None = None,
                   hierarchies: Mapping[str, Hierarchy] | None = None,
                   kinds: Mapping[str, str] | None = None,
                   passthrough: Iterable[str] | str = (),
                   ignore: Iterable[str] | str = (),
                   identifier: Iterable[str] | str = (),
                   missing: str | None = None, weight: str | None = None,
                   household: str | None = None,
                   household_keys: Iterable[str] | str = ()) -> "Schema":
        """Build a schema from role lists; unnamed columns are ignored (``ignore`` names
        some explicitly: checked like the other roles).  ``missing``: the policy for
        records with missing values (`MISSING_POLICIES`, default ``refuse``).

        A role may be given as one name or a list (``qi="age"`` is ``qi=["age"]``;
        ``sensitive=["diag"]`` is ``sensitive="diag"``).  Column names are text: integer
        names (``pd.DataFrame(ndarray)``) are named ``"0"``, ``"1"``, ... and may be given
        either way.  Kind: ``kinds[col]`` if given, else that of the column's hierarchy,
        else inferred from the dtype.  ``weight`` and ``household`` name the survey's
        design columns; naming one of them in ``passthrough`` too keeps its role and
        publishes it (`Schema.kept`).
        """
        names = column_names(frame)
        position = {n: i for i, n in enumerate(names)}
        hierarchies = {str(k): v for k, v in dict(hierarchies or {}).items()}
        kinds = {str(k): v for k, v in dict(kinds or {}).items()}
        roles: dict[str, str] = {}
        design = set(role_names(weight, "weight") + role_names(household, "household"))
        kept = [n for n in role_names(passthrough, "passthrough") if n in design]
        passthrough = [n for n in role_names(passthrough, "passthrough") if n not in design]
        given = [("qi", qi), ("sensitive", sensitive), ("numeric", numeric),
                 ("label", label), ("passthrough", passthrough), ("weight", weight),
                 ("household", household), ("identifier", identifier), ("ignore", ignore)]
        for role, value in given:
            for n in role_names(value, role):
                if n not in position:
                    raise SdcevalError(
                        f"column {n!r} (role {role}) is not in the data.{suggest(n, names)} "
                        f"Columns: {', '.join(names)}")
                if n in roles:
                    pair = {roles[n], role}
                    why = ("a sensitive attribute cannot also be a quasi-identifier"
                           if pair == {"qi", "sensitive"} else "a column has exactly one role")
                    raise SdcevalError(
                        f"column {n!r} is given as both {roles[n]} and {role}; {why}")
                roles[n] = role
        for n in list(hierarchies) + list(kinds):
            if n not in position:
                raise SdcevalError(f"hierarchy/kind given for unknown column {n!r}."
                                   f"{suggest(n, names)}")
        cols = []
        for n in names:
            h = hierarchies.get(n)
            values = frame.iloc[:, position[n]]
            if kinds.get(n):
                kind = kinds[n]
            elif h is not None:
                kind = "numeric" if h.numeric else "categorical"
            else:
                kind = ("numeric" if pd.api.types.is_numeric_dtype(values)
                        and not pd.api.types.is_bool_dtype(values) else "categorical")
            cols.append(ColumnSpec(n, roles.get(n, "ignore"), kind, h))
        return cls(cols, missing=missing_policy(missing), household_keys=household_keys,
                   kept=kept)

    @classmethod
    def from_mapping(cls, frame: pd.DataFrame, spec: Mapping, base_dir: Path | None = None
                     ) -> "Schema":
        """Schema from a mapping as found in a TOML file::

            qi = ["age", "sex"]                   # or one name: qi = "age"
            sensitive = "occupation"              # or ["occupation"]
            numeric = []
            label = "income"
            passthrough = ["region"]              # published unchanged, on request
            weight = "w"                          # a survey's design weight
            household = "hid"                     # household id (never published)
            household_keys = ["region"]           # QIs equal within a household
            identifier = ["patient_id"]           # identifies the records: never published
            ignore = ["notes"]                    # never used nor published (the default)
            missing = "drop"                      # or "refuse" (the default)
            [hierarchies]
            age = "hierarchies/age.csv"           # numeric or not: see load_hierarchies
            zip = {file = "zip.csv", numeric = false}
            [kinds]
            zip = "categorical"
        """
        extra = set(spec) - SCHEMA_KEYS
        if extra:
            k = sorted(extra)[0]
            raise SdcevalError(f"schema: unknown key {k!r}.{suggest(k, SCHEMA_KEYS)} "
                               f"Keys: {', '.join(sorted(SCHEMA_KEYS))}")
        hierarchies = load_hierarchies(spec, base_dir, frame=frame)
        return cls.from_roles(frame, qi=spec.get("qi", ()), sensitive=spec.get("sensitive"),
                              numeric=spec.get("numeric", ()), label=spec.get("label"),
                              hierarchies=hierarchies, kinds=schema_kinds(spec),
                              passthrough=spec.get("passthrough", ()),
                              ignore=spec.get("ignore", ()),
                              identifier=spec.get("identifier", ()),
                              missing=missing_policy(spec.get("missing")),
                              weight=spec.get("weight"), household=spec.get("household"),
                              household_keys=spec.get("household_keys", ()))


SCHEMA_KEYS = {"qi", "sensitive", "numeric", "label", "passthrough", "identifier", "ignore",
               "hierarchies", "kinds", "missing", "weight", "household", "household_keys"}
#: the keys of a schema that give roles (a schema without any lets the loader infer the
#: roles of the columns it does not list under ``ignore`` or ``identifier``)
ROLE_KEYS = ("qi", "sensitive", "numeric", "label", "passthrough")


def schema_kinds(spec: Mapping) -> dict[str, str]:
    """The ``[kinds]`` table, checked: column -> ``numeric`` | ``categorical``."""
    kinds = spec.get("kinds") or {}
    if not isinstance(kinds, Mapping):
        raise SdcevalError("schema: [kinds] must map column names to \"numeric\" or "
                           "\"categorical\"")
    out = {}
    for col, kind in kinds.items():
        if kind not in KINDS:
            raise SdcevalError(f"schema: [kinds] {col} = {kind!r}: a kind is \"numeric\" or "
                               "\"categorical\"")
        out[str(col)] = kind
    return out


def load_hierarchies(spec: Mapping, base_dir: Path | None = None,
                     frame: pd.DataFrame | None = None) -> dict[str, Hierarchy]:
    """The ``[hierarchies]`` of a schema mapping, loaded (paths relative to ``base_dir``).

    Whether a hierarchy is numeric (leaves ordered as numbers, inner nodes intervals) or
    categorical (leaves are codes, matched as text, so ``02310`` stays ``02310``), in this
    order: the entry's ``numeric = true/false``; else the column's ``[kinds]``; else
    categorical when ``frame`` holds the column as text; else decided by the file
    (`Hierarchy.from_csv` with ``numeric=None``: numeric when every leaf is written as a
    plain number and every inner node is an interval of them).  Called before the data
    file is read, so that the loader can read categorical columns as text.
    """
    kinds = schema_kinds(spec)
    entries = spec.get("hierarchies") or {}
    if not isinstance(entries, Mapping):
        raise SdcevalError("schema: [hierarchies] must map column names to files")
    names = set(column_names(frame)) if frame is not None else None
    out: dict[str, Hierarchy] = {}
    for col, h in entries.items():
        col = str(col)
        if isinstance(h, Hierarchy):
            out[col] = h
            continue
        if isinstance(h, (str, Path)):
            h = {"file": h}
        if not isinstance(h, Mapping) or "file" not in h or set(h) - {"file", "numeric"}:
            raise SdcevalError(
                f"schema: hierarchy of {col!r} must be a file name or "
                f"{{ file = \"...\", numeric = true/false }}, got {h!r}")
        numeric = h.get("numeric")
        if numeric is not None and not isinstance(numeric, bool):
            raise SdcevalError(f"schema: hierarchy of {col!r}: numeric must be true or false, "
                               f"got {numeric!r}")
        kind = kinds.get(col)
        if numeric is not None and kind is not None and numeric != (kind == "numeric"):
            raise SdcevalError(
                f"column {col!r} is declared {kind} in [kinds] but its hierarchy entry says "
                f"numeric = {'true' if numeric else 'false'}; keep one of the two")
        if numeric is None and kind is not None:
            numeric = kind == "numeric"
        if numeric is None and names is not None and col in names:
            values = frame.iloc[:, column_names(frame).index(col)]
            if not pd.api.types.is_numeric_dtype(values):
                numeric = False
        path = Path(h["file"])
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        out[col] = Hierarchy.from_csv(path, name=col, numeric=numeric)
    return out


def text_columns(spec: Mapping, hierarchies: Mapping[str, Hierarchy]) -> list[str]:
    """Columns a loader must read as text, exactly as written: those with a categorical
    hierarchy and those declared categorical in ``[kinds]``."""
    cols = [c for c, h in hierarchies.items() if not h.numeric]
    cols += [c for c, k in schema_kinds(spec).items() if k == "categorical" and c not in cols]
    return cols
