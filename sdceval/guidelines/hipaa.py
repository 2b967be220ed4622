"""HIPAA Safe Harbor's rules that can be checked on a published file (issue 30 item 2).

45 CFR 164.514(b)(2)(i) lists eighteen kinds of identifiers to remove; three are about
values a de-identified file still publishes, and can be checked on its columns, each
column named by the user (profile ``[roles]``, ``sdceval check --age/--dates/--zip``):

* ``ages_over_89`` (§(C)): ages over 89 may be published only aggregated into one
  category of 90 or older.  A published value (a generalized cell, or a value
  published as is) that holds an age over 89 must hold *every* age over 89 of the
  column's domain: no published value tells two ages over 89 apart, nor an age over 89
  from the others of its category.
* ``dates_to_year`` (§(C)): all elements of dates except the year are removed.  A
  published value must be a union of whole years: when it holds a date of year ``y``
  it holds every date of year ``y`` of the domain.  A column of years (four digits)
  passes.  Values that read as neither dates nor years leave the rule not checked.
* ``zip3`` (§(B)): of a ZIP code only the initial three digits may be published, and
  only where the area they form has more than 20 000 people (``zip_population_min``),
  else ``000``.  A published value must be a union of whole three-digit areas (it
  holds every ZIP of the domain that shares a prefix with one it holds); with a
  population table (CSV: three-digit prefix, population), each published value other
  than the whole domain (``000``, suppressed) must cover more than 20 000 people — the
  sum over its areas; an area missing from the table counts as too small.  Without a
  table the population condition is not checked.

The published values of a column: the release's cells (``[lo, hi]`` of leaf codes of
the column's hierarchy) when it has them, else its values as published; a column the
release does not publish passes.  A rule whose column is not named is *not checked*,
and so are the fifteen other identifier kinds and the actual-knowledge condition
(§(ii)): the verdict passes only when every rule of the profile was checked and
passed, and lists what it could not check.
"""
from __future__ import annotations

import re

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.guidelines.outcome import Verdict, classes_of

#: what Safe Harbor asks that no file check can show
NOT_CHECKABLE = (
    ("the other identifiers of (i): (A) names, (B) geographic units smaller than a state "
     "other than ZIP codes, (D) telephone and (E) fax numbers, (F) e-mail addresses, "
     "(G) social security, (H) medical record, (I) health plan, (J) account and "
     "(K) certificate/licence numbers, (L) vehicle and (M) device identifiers, (N) URLs, "
     "(O) IP addresses, (P) biometric identifiers, (Q) photographs, (R) any other unique "
     "code: review the columns published"),
    ("(C) date elements, years included, indicative of an age over 89 (a year of birth "
     "in a date column: the date role checks only that dates are published as years)"),
    "(ii) no actual knowledge that the information could identify an individual",
)


class _Published:
    """A column's distinct published values: ``sets[j]`` the leaf indices value ``j``
    holds, ``inverse`` each record's value, ``leaves`` the domain's values (text),
    ``whole[j]`` whether value ``j`` is the whole domain."""

    def __init__(self, dataset, release, column: str):
        if column not in dataset.frame.columns:
            raise SdcevalError(f"guideline role column {column!r} is not a column of data "
                               f"set {dataset.name!r}; name one of its columns")
        self.published = True
        if release.cells and column in release.cells:
            lo, hi = (np.asarray(a, dtype=np.int64) for a in release.cells[column])
            self.leaves = np.asarray(dataset.hierarchy(column).leaves).astype(str)
            pairs, self.inverse = np.unique(np.stack([lo, hi], axis=1), axis=0,
                                            return_inverse=True)
            self.inverse = self.inverse.ravel()
            self.sets = [np.arange(a, b + 1) for a, b in pairs]
            m = len(self.leaves)
            self.whole = [(a == 0 and b == m - 1) for a, b in pairs]
        elif column in release.data.columns:
            values = release.data[column].astype(str).to_numpy()
            domain = dataset.frame[column].dropna().astype(str).unique()
            self.leaves = np.unique(np.concatenate([domain, values]))
            uniq, self.inverse = np.unique(values, return_inverse=True)
            index = np.searchsorted(self.leaves, uniq)
            self.sets = [np.array([i]) for i in index]
            self.whole = [len(self.leaves) == 1] * len(uniq)
        else:
            self.published = False

    def records(self, bad_values: np.ndarray) -> np.ndarray:
        """Per record: its published value is one of ``bad_values`` (a mask over the
        values)."""
        return bad_values[self.inverse]


def _numbers(leaves: np.ndarray):
    import pandas as pd
    return pd.to_numeric(pd.Series(leaves), errors="coerce").to_numpy(dtype=np.float64)


def _closed(sets, group: np.ndarray) -> np.ndarray:
    """Per published value: it holds every leaf of each group it touches (``group[i]``
    the group of leaf ``i``, -1 none)."""
    bad = np.zeros(len(sets), dtype=bool)
    for j, s in enumerate(sets):
        g = np.unique(group[s])
        g = g[g >= 0]
        if len(g):
            bad[j] = np.isin(group, g).sum() > np.isin(group[s], g).sum()
    return bad


def check_ages(p: _Published):
    ages = _numbers(p.leaves)
    if np.isnan(ages).any():
        example = p.leaves[np.isnan(ages)][0]
        return None, f"not checked: the column holds values that are no ages ({example!r})"
    group = np.where(ages > 89, 0, -1)   # the one category ages over 89 may form
    bad = _closed(p.sets, group)
    over = int((ages > 89).sum())
    return bad, (f"{int(bad.sum())} published values tell apart ages over 89 "
                 f"({over} distinct ages over 89 in the domain)" if bad.any() else
                 "no published value tells apart ages over 89" if over else
                 "no age over 89 in the domain")


YEAR = re.compile(r"^\s*\d{4}(\.0+)?\s*$")


def check_dates(p: _Published):
    import pandas as pd
    if all(YEAR.match(v) for v in p.leaves):
        return np.zeros(len(p.sets), dtype=bool), "the column publishes years only"
    dates = pd.to_datetime(pd.Series(p.leaves), errors="coerce", format="mixed")
    if dates.isna().any():
        example = p.leaves[dates.isna().to_numpy()][0]
        return None, f"not checked: the column holds values that are no dates ({example!r})"
    bad = _closed(p.sets, dates.dt.year.to_numpy())
    return bad, (f"{int(bad.sum())} published values are finer than a year"
                 if bad.any() else "every published value is a union of whole years")


def _zip3(leaves: np.ndarray):
    out = []
    for v in leaves:
        v = v.strip().split("-")[0].split(".")[0]
        if not v.isdigit() or len(v) > 5:
            return None, v
        out.append(v.zfill(5)[:3])
    return np.array(out), None


def read_population(table) -> dict[str, float]:
    """A three-digit-ZIP population table: a CSV file (first column the prefix, second
    the population, a header row), a DataFrame of those columns, or a mapping."""
    import pandas as pd
    if isinstance(table, dict):
        items = table.items()
    else:
        if not isinstance(table, pd.DataFrame):
            from pathlib import Path
            if not Path(table).is_file():
                raise SdcevalError(f"ZIP population table {str(table)!r} does not exist; "
                                   "give a CSV of three-digit ZIP prefix, population")
            table = pd.read_csv(table, dtype=str)
        if table.shape[1] < 2:
            raise SdcevalError("ZIP population table: give two columns, the three-digit "
                               "prefix and its population")
        items = zip(table.iloc[:, 0], table.iloc[:, 1])
    out = {}
    for k, v in items:
        try:
            out[str(k).strip().zfill(3)[:3]] = float(v)
        except (TypeError, ValueError):
            raise SdcevalError(f"ZIP population table: population of {k!r} is not a "
                               f"number ({v!r})") from None
    return out


def check_zip(p: _Published, population, minimum: int):
    z3, wrong = _zip3(p.leaves)
    if z3 is None:
        return None, f"not checked: the column holds values that are no ZIP codes ({wrong!r})"
    _, group = np.unique(z3, return_inverse=True)
    fine = _closed(p.sets, group)
    words = [(f"{int(fine.sum())} published values hold ZIP digits beyond the third"
              if fine.any() else "every published value is a union of three-digit areas")]
    if population is None:
        return (fine if fine.any() else None), "; ".join(
            words + ["not checked: the 20 000-people condition needs a population table "
                     "(--zip-population FILE, [roles] zip_population)"])
    pops = read_population(population)
    small = np.zeros(len(p.sets), dtype=bool)
    for j, s in enumerate(p.sets):
        if not p.whole[j]:
            areas = np.unique(z3[s])
            small[j] = any(a not in pops for a in areas) or \
                sum(pops[a] for a in areas) <= minimum
    words.append(f"{int(small.sum())} published areas have {minimum} people or fewer "
                 "(or are not in the table)" if small.any() else
                 f"every published area has more than {minimum} people")
    return fine | small, "; ".join(words)


#: rule -> (the role naming its columns, its check of one column's published values ->
#: (per published value: violates, or None when not checked; what was found))
RULES = {
    "ages_over_89": ("age", lambda p, profile: check_ages(p)),
    "dates_to_year": ("dates", lambda p, profile: check_dates(p)),
    "zip3": ("zip", lambda p, profile: check_zip(p, profile.roles.get("zip_population"),
                                                profile.zip_population_min)),
}


def rule_verdict(profile, dataset, release):
    """The `Verdict` of a ``rules`` profile (module notes)."""
    roles = dict(profile.roles)
    n = int(release.n)
    union = np.zeros(n, dtype=bool)
    checks, not_checked = [], []
    for rule in profile.rules:
        role = RULES[rule][0]
        cols = roles.get(role)
        cols = [c.strip() for c in cols.split(",")] if isinstance(cols, str) else \
            list(cols or [])
        cols = [c for c in cols if c]
        if not cols:
            checks.append({"name": rule, "status": "not checked", "records": None,
                           "classes": None,
                           "detail": f"no {role} column named (--{role} COL or [roles] "
                                     f"{role})"})
            not_checked.append(f"{rule}: no {role} column named")
            continue
        status, records, classes, details = "passed", 0, 0, []
        bad_rows = np.zeros(n, dtype=bool)
        for col in cols:
            p = _Published(dataset, release, col)
            if not p.published:
                details.append(f"{col}: not published")
                continue
            bad, text = RULES[rule][1](p, profile)
            details.append(f"{col}: {text}")
            if bad is not None and bad.any():
                status = "failed"
                rows = p.records(bad)
                bad_rows |= rows
                classes += int(bad.sum())
            elif "not checked" in text and status == "passed":
                status = "not checked"
        if status == "not checked":
            not_checked.append(f"{rule}: " + "; ".join(details))
        records = int(bad_rows.sum())
        union |= bad_rows
        checks.append({"name": rule, "status": status, "records": records,
                       "classes": classes, "detail": "; ".join(details)})
    passed = all(c["status"] == "passed" for c in checks)
    failed = sum(c["status"] == "failed" for c in checks)
    assumptions = {"roles": ", ".join(f"{k}={v}" for k, v in roles.items()
                                      if k != "zip_population") or "none named",
                   "zip population table": str(roles.get("zip_population") or "none"),
                   "attacker": "not modelled (rules)"}
    return Verdict(
        guideline=profile.name, title=profile.title, kind="rules",
        metric="rule checks: " + ", ".join(profile.rules), attacker="",
        value=float(failed), threshold=0.0, rounding="literal", effective_threshold=0.0,
        min_class_size=None, comparison="at_most", passed=bool(passed),
        margin=-float(failed), relative_margin=None, violating_records=int(union.sum()),
        violating_classes=classes_of(release, union), records=n,
        assumptions=assumptions,
        source={"citation": profile.citation, "url": profile.url, "note": profile.note},
        checks=checks, not_checked=[*not_checked, *NOT_CHECKABLE])


__all__ = ["NOT_CHECKABLE", "RULES", "read_population", "rule_verdict"]
