"""Column roles of a data set (SPEC §1).

Roles: ``qi`` (quasi-identifier), ``sensitive``, ``numeric`` (attribute masked by the
perturbative methods), ``label`` (class attribute for the classification metric),
``passthrough`` (published unchanged beside what the method protects, only because the
user asked for it) and ``ignore`` (never published).  Kind is ``numeric`` or ``categorical``; a QI may carry a `Hierarchy`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.hierarchy import Hierarchy

ROLES = ("qi", "sensitive", "numeric", "label", "passthrough", "ignore")
KINDS = ("numeric", "categorical")


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    role: str
    kind: str
    hierarchy: Hierarchy | None = field(default=None, compare=False)


class Schema:
    """The roles, kinds and hierarchies of a data set's columns."""

    def __init__(self, columns: Iterable[ColumnSpec]):
        self.columns = tuple(columns)
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
        self._by_name = {c.name: c for c in self.columns}

    def __getitem__(self, name: str) -> ColumnSpec:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def names(self, role: str) -> list[str]:
        return [c.name for c in self.columns if c.role == role]

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
    def sensitive(self) -> str | None:
        s = self.names("sensitive")
        return s[0] if s else None

    @property
    def label(self) -> str | None:
        s = self.names("label")
        return s[0] if s else None

    def with_roles(self, **changes) -> "Schema":
        """A copy with some roles changed, e.g. ``with_roles(qi=[...], sensitive="x")``."""
        mapping = {c.name: c for c in self.columns}
        out = {n: ColumnSpec(n, "ignore", c.kind, c.hierarchy) for n, c in mapping.items()}
        changes = {r: [v] if isinstance(v, str) else list(v or [])
                   for r, v in changes.items() if r in ROLES}
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
        return Schema(out.values())

    @classmethod
    def from_roles(cls, frame: pd.DataFrame, *, qi: Iterable[str] = (),
                   sensitive: str | None = None, numeric: Iterable[str] = (),
                   label: str | None = None, hierarchies: Mapping[str, Hierarchy] | None = None,
                   kinds: Mapping[str, str] | None = None,
                   passthrough: Iterable[str] = ()) -> "Schema":
        """Build a schema from role lists; unnamed columns are ignored.  Kind is inferred
        from the dtype unless given in ``kinds``."""
        hierarchies = dict(hierarchies or {})
        kinds = dict(kinds or {})
        roles: dict[str, str] = {}
        given = [("qi", list(qi)), ("sensitive", [sensitive] if sensitive else []),
                 ("numeric", list(numeric)), ("label", [label] if label else []),
                 ("passthrough", list(passthrough))]
        for role, names in given:
            for n in names:
                if n not in frame.columns:
                    raise SdcevalError(
                        f"column {n!r} (role {role}) is not in the data.{suggest(n, frame.columns)} "
                        f"Columns: {', '.join(map(str, frame.columns))}")
                if n in roles:
                    raise SdcevalError(
                        f"column {n!r} is given as both {roles[n]} and {role}; "
                        "a sensitive attribute cannot also be a quasi-identifier")
                roles[n] = role
        for n in list(hierarchies) + list(kinds):
            if n not in frame.columns:
                raise SdcevalError(f"hierarchy/kind given for unknown column {n!r}."
                                   f"{suggest(n, frame.columns)}")
        cols = []
        for n in frame.columns:
            kind = kinds.get(n) or ("numeric" if pd.api.types.is_numeric_dtype(frame[n])
                                    and not pd.api.types.is_bool_dtype(frame[n]) else "categorical")
            cols.append(ColumnSpec(str(n), roles.get(n, "ignore"), kind, hierarchies.get(n)))
        return cls(cols)

    @classmethod
    def from_mapping(cls, frame: pd.DataFrame, spec: Mapping, base_dir: Path | None = None
                     ) -> "Schema":
        """Schema from a mapping as found in a TOML file::

            qi = ["age", "sex"]
            sensitive = "occupation"
            numeric = []
            label = "income"
            passthrough = ["region"]              # published unchanged, on request
            [hierarchies]
            age = "hierarchies/age.csv"          # or {file = "...", numeric = true}
            [kinds]
            zip = "categorical"
        """
        known = {"qi", "sensitive", "numeric", "label", "passthrough", "hierarchies", "kinds"}
        extra = set(spec) - known
        if extra:
            k = sorted(extra)[0]
            raise SdcevalError(f"schema: unknown key {k!r}.{suggest(k, known)} "
                               f"Keys: {', '.join(sorted(known))}")
        kinds = dict(spec.get("kinds", {}))
        hierarchies = {}
        for col, h in dict(spec.get("hierarchies", {})).items():
            if isinstance(h, Hierarchy):
                hierarchies[col] = h
                continue
            if isinstance(h, str):
                h = {"file": h}
            path = Path(h["file"])
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            numeric = h.get("numeric")
            if numeric is None:
                numeric = col in frame.columns and pd.api.types.is_numeric_dtype(frame[col])
            hierarchies[col] = Hierarchy.from_csv(path, name=col, numeric=bool(numeric))
        return cls.from_roles(frame, qi=spec.get("qi", ()), sensitive=spec.get("sensitive"),
                              numeric=spec.get("numeric", ()), label=spec.get("label"),
                              hierarchies=hierarchies, kinds=kinds,
                              passthrough=spec.get("passthrough", ()))
