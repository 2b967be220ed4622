"""What a person reads instead of an internal name: display names, one-line glosses and
direction words for every method, measure, model, objective, property and table column
(issue 20 item 2: one mapping, from the registries).

A name is looked up, in order, in

1. `TERMS`, the terms that are not registry entries (the columns of the tables:
   ``reidentification_rate``, ``p_binary``, ``bracketed``, ...), registered next to the
   code that makes them with `register_term`;
2. every registry of `sdceval.core.registry.REGISTRIES` (methods, measures, privacy
   models, lattice objectives, property vectors, ...), whose entries give their own
   ``label`` (a method's or a measure's registration) and ``description``;

and a composite column name is read from its parts: ``propensity(model=linear)`` is the
measure's label with its parameters, ``rank_emd`` the rank on ``emd``, ``risk_lo`` /
``risk_hi`` the ends of a 95 % interval, ``ce_mean`` / ``ce_var`` the mean and variance
over runs, ``p_cov_12`` / ``p_cov_21`` an index of the first release over the second and
the reverse, ``level_age`` a node's level of ``age``.  A name found nowhere is shown as
it is, with no gloss: `unknown_terms` lists such names, and the test suite requires
that every column a report or a console table shows has a term.

Directions in words (`direction_words`), one vocabulary for axis labels, table headers
and the glossary: a risk measure reads "higher = riskier" or "higher = safer", a utility
or information loss "higher = more loss", a privacy check "higher = more protection" or
"higher = less protection", an objective "higher = better" or "lower = better".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from sdceval.core.registry import REGISTRIES, RegistrationError, Registry

#: direction words by (category, direction) of a measure (`MeasureSpec`)
_MEASURE_WORDS = {
    ("risk", "lower_is_better"): "higher = riskier",
    ("risk", "higher_is_better"): "higher = safer",
    ("utility", "lower_is_better"): "higher = more utility lost",
    ("utility", "higher_is_better"): "higher = more utility kept",
    ("information_loss", "lower_is_better"): "higher = more information lost",
    ("information_loss", "higher_is_better"): "higher = less information lost",
    ("privacy", "higher_is_better"): "higher = more protection",
    ("privacy", "lower_is_better"): "higher = less protection",
}
#: the directions a term may declare, and their words
DIRECTION_WORDS = {
    "riskier": "higher = riskier",
    "safer": "higher = safer",
    "loss": "higher = more loss",
    "better": "higher = better",
    "worse": "lower = better",
    "more_protection": "higher = more protection",
    "less_protection": "higher = less protection",
}


#: the words of a direction whose lower values are the better ones
_LOWER_IS_BETTER = frozenset(
    [w for (_, d), w in _MEASURE_WORDS.items() if d == "lower_is_better"]
    + [DIRECTION_WORDS[k] for k in ("riskier", "loss", "worse", "less_protection")])


@dataclass(frozen=True)
class Term:
    """A name as a person reads it: ``label`` (a display name), ``gloss`` (one
    sentence: what it is) and ``words`` (how to read a larger value, or "")."""

    name: str
    label: str
    gloss: str = ""
    words: str = ""
    #: what a value counts, when it is a share: "share of records" (shown as a percent)
    unit: str = ""
    #: a few words for a console legend, for a name that is jargon ("P_cov")
    short: str = ""
    #: terms take no parameters (the typed-parameter slot of every registry entry)
    params: tuple = ()

    @property
    def description(self) -> str:
        return self.gloss

    @property
    def lower_is_better(self) -> bool | None:
        """Whether a lower value is the better one (less risk, less loss, more
        protection), None for a number without a direction."""
        if not self.words:
            return None
        return self.words in _LOWER_IS_BETTER

    @property
    def axis(self) -> str:
        """An axis label or table header with its direction: ``label (words)``."""
        return f"{self.label} ({self.words})" if self.words else self.label


#: terms that are not registry entries, by name (`register_term`)
TERMS: Registry = Registry("term")


def register_term(name: str, label: str, gloss: str, direction: str | None = None,
                  unit: str = "", short: str = "") -> Term:
    """Register ``name`` (a column or figure a table shows) with its display ``label``,
    a one-sentence ``gloss`` and, for a number, its ``direction`` (a key of
    `DIRECTION_WORDS`)."""
    if direction is not None and direction not in DIRECTION_WORDS:
        raise RegistrationError(f"term {name!r}: direction must be one of "
                                f"{', '.join(DIRECTION_WORDS)}, got {direction!r}")
    return TERMS.add(name, Term(name, label, gloss,
                                DIRECTION_WORDS[direction] if direction else "", unit, short))


def _entry_term(name: str, entry) -> Term:
    """The term of a registry entry: its ``label`` (else its name with spaces), its
    ``description`` and the words of its direction (measure, objective, property)."""
    label = (getattr(entry, "label", "") or getattr(entry, "title", "")
             or name.replace("_", " "))
    gloss = getattr(entry, "description", "") or ""
    params = getattr(entry, "params", ())
    if not gloss and params and getattr(params[0], "description", ""):
        gloss = f"{label}: {params[0].name} is the {params[0].description}"
    words = ""
    category, direction = getattr(entry, "category", None), getattr(entry, "direction", None)
    if category is not None and direction is not None:
        words = _MEASURE_WORDS.get((category, direction), "")
    elif getattr(entry, "goal", None) in ("min", "max"):
        words = DIRECTION_WORDS["better" if entry.goal == "max" else "worse"]
    elif isinstance(getattr(entry, "higher_is_better", None), bool):
        words = DIRECTION_WORDS["better" if entry.higher_is_better else "worse"]
    return Term(name, label, gloss, words, getattr(entry, "unit", "") or "")


#: registries searched after `TERMS`, most specific first (job kinds and rules are not
#: columns; they are found too, last)
_ORDER = ("methods", "measures", "privacy models", "lattice objectives", "property vectors")


def _plain(name: str) -> Term | None:
    if name in TERMS:
        return TERMS[name]
    names = list(_ORDER) + [k for k in REGISTRIES if k not in _ORDER and k != "terms"]
    for plural in names:
        reg = REGISTRIES.get(plural)
        if reg is not None and name in reg:
            return _entry_term(name, reg[name])
    return None


_CALL = re.compile(r"^(?P<base>[^()]+)\((?P<args>[^()]*)\)$")
#: suffixes read as "<term>, <what>", longest first
_SUFFIXES = (("_lo", "95 % interval, low end", "the lower end of the 95 % interval over "
              "the seeds"),
             ("_hi", "95 % interval, high end", "the upper end of the 95 % interval over "
              "the seeds"),
             ("_mean", "mean over runs", "the mean over the runs"),
             ("_var", "variance over runs", "the variance over the runs"),
             ("_12", "first over second", "the first release measured against the second"),
             ("_21", "second over first", "the second release measured against the first"))


def term(name: str) -> Term | None:
    """The `Term` of a name or a composite column name (module docstring), or None."""
    name = str(name)
    found = _plain(name)
    if found is not None:
        return found
    call = _CALL.match(name)
    if call and call["base"].strip() == "max":   # a composite risk: the worse of several
        parts = [term(p.strip()) for p in call["args"].split(",") if p.strip()]
        if parts and all(p is not None for p in parts):
            return Term(name, worst_of([p.label for p in parts]),
                        "the largest of these risks on each release: a candidate is "
                        "matched where its worst reaches the target",
                        parts[0].words, parts[0].unit, parts[0].short)
    if call:
        base = term(call["base"])
        if base is not None:
            args = call["args"].replace(",", ", ")
            return Term(name, f"{base.label} ({args})", base.gloss, base.words, base.unit,
                        base.short)
    if name.startswith("rank_"):
        base = term(name[len("rank_"):])
        if base is not None:
            return Term(name, f"rank on {base.label}",
                        f"1 = least loss among the methods that reached the target "
                        f"({base.label}); with repeats, a method shares the best's rank "
                        "when the paired 95 % t-interval of their per-seed differences "
                        "contains 0",
                        DIRECTION_WORDS["worse"])
    if name.startswith("level_"):
        return Term(name, f"level of {name[len('level_'):]}",
                    "the generalization level of this quasi-identifier in the node "
                    "(0 = original values)")
    for suffix, words, gloss in _SUFFIXES:
        if name.endswith(suffix):
            base = term(name[:-len(suffix)])
            if base is not None:
                return Term(name, f"{base.label}, {words}",
                            f"{base.gloss} ({gloss})" if base.gloss else gloss, base.words,
                            base.unit, base.short)
    return None


def and_list(items) -> str:
    """Words joined as a sentence joins them: ``"a, b and c"``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def worst_of(labels) -> str:
    """The name of a composite risk, the largest of several: ``"worse of the a and b"``,
    ``"worst of the a, b and c"``."""
    labels = list(labels)
    return ("worse of the " if len(labels) == 2 else "worst of the ") + and_list(labels)


def display_name(name: str) -> str:
    """The display name of ``name`` (the name itself when no term has it)."""
    t = term(name)
    return t.label if t is not None else str(name)


def direction_words(name: str) -> str:
    """How to read a larger value of ``name`` ("higher = riskier", ...), or ""."""
    t = term(name)
    return t.words if t is not None else ""


def axis_label(name: str) -> str:
    """``display name (direction words)``: the axis label or table header of a number."""
    t = term(name)
    return t.axis if t is not None else str(name)


def release_label(spec: str) -> str:
    """A release spec as a person reads it: ``mdav:k=5`` -> ``MDAV (microaggregation)
    k = 5``; a spec whose method is unknown (a file name) is returned as it is."""
    text = str(spec)
    method, _, params = text.partition(":")
    t = _plain(method)
    if t is None or "methods" not in REGISTRIES or method not in REGISTRIES["methods"]:
        return text
    shown = ", ".join(p.replace("=", " = ") for p in params.split(",") if p)
    return f"{t.label} {shown}".strip()


def glossary(names) -> list[Term]:
    """The terms of ``names`` (columns, measures, methods), each once, in order;
    names without a term are left out (`unknown_terms` lists them)."""
    seen, out = set(), []
    for n in names:
        t = term(n)
        if t is None:
            continue
        # a composite name (propensity(model=linear), rank_emd) is explained by its base
        key = t.gloss + t.label.split(" (")[0]
        if key in seen:
            continue
        seen.add(key)
        out.append(t)
    return out


def unknown_terms(names) -> list[str]:
    """The names no term explains."""
    return [str(n) for n in names if term(n) is None]


__all__ = ["DIRECTION_WORDS", "TERMS", "Term", "and_list", "axis_label", "direction_words",
           "display_name", "glossary", "register_term", "release_label", "term",
           "unknown_terms"]
