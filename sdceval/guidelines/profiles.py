"""Guideline profiles (issue 30 item 2): what a regulator's or a precedent's rule asks of
a release, as data.

Each profile is a TOML file shipped in this package (``sdceval/guidelines/*.toml``, one
per guideline, editable) and registered in `GUIDELINES` when the package is imported;
a user's own profile is a TOML file of the same keys, read with `load_profile`.  The
keys (anything else is an error naming the key):

``name``, ``title``
    The profile's name (the file's stem for a shipped one) and what it is.
``kind``
    ``threshold`` (a risk measure's value against a threshold) or ``rules`` (rule
    checks on the published columns: `sdceval.guidelines.hipaa`).
``measure``, ``[params]``
    The metric: a registered measure (`sdceval.catalog.get_measure`, looked up when the
    profile is evaluated, so a measure registered later — a plugin's — may be named;
    one that is not registered is an error, never a pass) and its parameters.
``attacker``
    ``prosecutor`` (knows the person is in the file), ``journalist`` (links to a
    population register; the file is a sample), ``marketer`` (re-identifies as many
    as possible).  Passed to the measure as its ``attacker`` parameter when it has one.
``threshold``, ``comparison``
    The bound on the measure's value: ``at_most`` (value <= threshold: a risk) or
    ``at_least`` (value >= threshold; read literally).
``rounding``
    How the threshold is read against a risk that takes the values ``1/k``
    (`sdceval.guidelines.rounding`: ``arx``, ``cell-size``, ``literal``).
``citation``, ``url``, ``note``
    The source and why the profile reads it as it does.
``[roles]``, ``zip_population_min``, ``rules``
    ``rules`` profiles only: the column roles (``age``, ``dates``, ``zip``,
    ``zip_population``), which the user may give instead (profile or command line), the
    population bound of three-digit ZIP areas, the rules checked.
``needs``
    What the user must give (``custom``: ``measure``, ``threshold``, ``attacker``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.registry import Param, Registry
from sdceval.guidelines.hipaa import RULES
from sdceval.guidelines.rounding import ROUNDINGS

KINDS = ("threshold", "rules")
ATTACKERS = ("prosecutor", "journalist", "marketer")
COMPARISONS = ("at_most", "at_least")
#: the rule checks of a ``rules`` profile and the roles naming their columns
RULE_NAMES = tuple(RULES)
ROLE_KEYS = (*dict.fromkeys(role for role, _ in RULES.values()), "zip_population")
#: every key a profile file may hold, with its type
KEYS = {"name": str, "title": str, "kind": str, "measure": str, "params": dict,
        "attacker": str, "threshold": (int, float), "comparison": str, "rounding": str,
        "citation": str, "url": str, "note": str, "roles": dict,
        "zip_population_min": int, "rules": list, "needs": list}
NEEDS = ("measure", "threshold", "attacker")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Profile:
    """A guideline profile (module notes); validated at construction."""

    name: str
    title: str
    kind: str = "threshold"
    measure: str = ""
    metric_params: dict = field(default_factory=dict)
    attacker: str = ""
    threshold: float | None = None
    comparison: str = "at_most"
    rounding: str = "literal"
    citation: str = ""
    url: str = ""
    note: str = ""
    roles: dict = field(default_factory=dict)
    zip_population_min: int = 20000
    rules: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    #: the file it was read from
    path: str = ""
    #: the registry contract's field (a profile has no parameters of its own)
    params: tuple[Param, ...] = ()

    def __post_init__(self):
        where = f"guideline {self.name!r}" + (f" ({self.path})" if self.path else "")

        def bad(msg):
            raise SdcevalError(f"{where}: {msg}")
        if not self.name:
            bad("give it a name")
        if self.kind not in KINDS:
            bad(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.citation or not self.url:
            bad("state its source: citation = \"...\" and url = \"...\"")
        stray = [n for n in self.needs if n not in NEEDS]
        if stray:
            bad(f"needs: unknown {stray[0]!r}; one of {', '.join(NEEDS)}")
        if self.kind == "rules":
            unknown = [r for r in self.rules if r not in RULE_NAMES]
            if not self.rules or unknown:
                bad(f"rules must list rule checks of {', '.join(RULE_NAMES)}, got "
                    f"{list(self.rules)!r}")
            stray = [k for k in self.roles if k not in ROLE_KEYS]
            if stray:
                bad(f"[roles]: unknown role {stray[0]!r}.{suggest(stray[0], ROLE_KEYS)} "
                    f"Roles: {', '.join(ROLE_KEYS)}")
            if self.zip_population_min < 0:
                bad("zip_population_min must be >= 0")
            return
        if self.comparison not in COMPARISONS:
            bad(f"comparison must be one of {', '.join(COMPARISONS)}, got "
                f"{self.comparison!r}")
        if self.rounding not in ROUNDINGS:
            bad(f"rounding must be one of {', '.join(ROUNDINGS)}, got {self.rounding!r}"
                f"{suggest(self.rounding, ROUNDINGS)}")
        if self.comparison == "at_least" and self.rounding != "literal":
            bad("a rounding reading turns a risk threshold into a class size: it applies "
                "to comparison = \"at_most\" only; use rounding = \"literal\"")
        if self.attacker and self.attacker not in ATTACKERS:
            bad(f"attacker must be one of {', '.join(ATTACKERS)}, got {self.attacker!r}")
        for key in ("measure", "threshold", "attacker"):
            if key not in self.needs and getattr(self, key) in ("", None):
                bad(f"state its {key} (or list it in needs = [...] for the user to give)")
        if self.threshold is not None:
            t = self.threshold
            if isinstance(t, bool) or not math.isfinite(t) or (
                    self.comparison == "at_most" and not 0 <= t <= 1):
                bad(f"threshold must be a finite number (a probability in [0, 1] for "
                    f"an at_most risk), got {t!r}")
        if self.rules or self.roles:
            bad("rules and [roles] belong to kind = \"rules\" profiles")

    def with_overrides(self, **changes) -> Profile:
        """The profile with the user's ``measure``, ``threshold``, ``attacker``,
        ``rounding``, ``comparison``, ``params`` or ``roles`` (validated again)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if "params" in changes:
            changes["metric_params"] = {**self.metric_params, **changes.pop("params")}
        if "roles" in changes:
            changes["roles"] = {**self.roles, **changes.pop("roles")}
        if "threshold" in changes:
            changes["threshold"] = _number(changes["threshold"], "threshold")
        given = [k for k in NEEDS if k in changes]
        return replace(self, needs=tuple(n for n in self.needs if n not in given),
                       **changes)

    def describe(self) -> str:
        """One line: what the profile asks."""
        if self.kind == "rules":
            return f"{self.title}: rule checks {', '.join(self.rules)}"
        if self.needs:
            return f"{self.title}: you give {', '.join(self.needs)}"
        sign = "<=" if self.comparison == "at_most" else ">="
        return (f"{self.title}: {self.measure} ({self.attacker}) {sign} {self.threshold:g}, "
                f"read {self.rounding}")

    def to_dict(self) -> dict:
        out = {"name": self.name, "title": self.title, "kind": self.kind,
               "citation": self.citation, "url": self.url}
        if self.kind == "rules":
            out.update(rules=list(self.rules), roles=dict(self.roles),
                       zip_population_min=self.zip_population_min)
        else:
            out.update(measure=self.measure, params=dict(self.metric_params),
                       attacker=self.attacker, threshold=self.threshold,
                       comparison=self.comparison, rounding=self.rounding)
        return out


def _number(v, what: str) -> float:
    try:
        if isinstance(v, bool):
            raise ValueError
        return float(v)
    except (TypeError, ValueError):
        raise SdcevalError(f"guideline {what} must be a number, got {v!r}") from None


def profile_from_dict(data: dict, name: str = "", path: str = "") -> Profile:
    """A `Profile` from a profile file's table (module notes for the keys)."""
    where = f"guideline file {path!r}" if path else f"guideline {name!r}"
    for key, value in data.items():
        if key not in KEYS:
            raise SdcevalError(f"{where}: unknown key {key!r}.{suggest(key, KEYS)} "
                               f"Keys: {', '.join(KEYS)}")
        if isinstance(value, bool) or not isinstance(value, KEYS[key]):
            raise SdcevalError(f"{where}: {key} has the wrong type ({value!r})")
    d = dict(data)
    d.setdefault("name", name)
    d["metric_params"] = d.pop("params", {})
    for key in ("rules", "needs"):
        d[key] = tuple(d.get(key, ()))
    if "threshold" in d:
        d["threshold"] = float(d["threshold"])
    d.setdefault("title", d["name"])
    return Profile(path=path, **d)


def load_profile(path) -> Profile:
    """A profile from a TOML file (a user's own, or a shipped one)."""
    from sdceval.core.fileio import read_toml
    path = Path(path)
    return profile_from_dict(read_toml(path, "guideline"), name=path.stem, path=str(path))


GUIDELINES = Registry("guideline")
for _file in sorted(HERE.glob("*.toml")):
    _p = load_profile(_file)
    if _p.name != _file.stem:
        raise SdcevalError(f"guideline file {_file.name}: name {_p.name!r} must be the "
                           "file's stem")
    GUIDELINES.add(_p.name, _p)


def get_profile(name_or_profile) -> Profile:
    """A registered profile by name, a profile file (``*.toml``), or a `Profile`."""
    if isinstance(name_or_profile, Profile):
        return name_or_profile
    text = str(name_or_profile)
    if text.endswith(".toml"):
        return load_profile(text)
    return GUIDELINES.get_spec(text)


def list_profiles() -> list[Profile]:
    return [GUIDELINES[n] for n in sorted(GUIDELINES)]


__all__ = ["ATTACKERS", "GUIDELINES", "Profile", "get_profile", "list_profiles",
           "load_profile", "profile_from_dict"]
