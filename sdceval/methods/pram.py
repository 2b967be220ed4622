"""Invariant PRAM, the post-randomization method (Gouweleeuw, Kooiman, Willenborg &
de Wolf 1998), as sdcMicro's ``pram`` does it (issue 29 item 3).

Each categorical key ``q`` (by default every categorical QI; ``variables`` names others)
is published after a random draw: a record whose value is category ``i`` publishes
category ``j`` with probability ``R_s[i, j]``, the row ``i`` of a transition matrix
that is *invariant* with respect to the observed distribution ``p`` of ``q``:
``p R_s = p``, so the expected published distribution is the observed one and the
published frequencies stay unbiased without any correction.  The matrix, for ``L``
categories, is built as in sdcMicro's ``pramWORK`` (``calcTransitionMatrix``):

1. ``P``: diagonal ``d_i = pd + (1 - pd) U_i`` (``U_i`` uniform on [0, 1), one draw per
   category, so ``pd`` is the *minimum* probability of keeping a value), off-diagonal
   ``P[i, j] = (1 - d_i) / (L - 1)``;
2. ``Q[k, j] = P[j, k] p_j / Σ_l p_l P[l, k]`` (the backward probabilities, Bayes);
3. ``R = P Q`` (invariant: ``(p R)_j = Σ_k (p P)_k Q[k, j] = p_j``; rows sum to 1);
4. ``R_s = α R + (1 - α) I`` (``alpha``: the amount of perturbation; α = 0 or pd = 1
   publishes the data as they are).

A category absent from the data (a leaf of a user hierarchy nobody has) gets ``p = 0``,
so no record moves into it.  With ``strata`` (sdcMicro's ``strata_variables``) the
matrix is built and applied within each stratum (each distinct combination of the
strata columns' values) on that stratum's distribution.  ``matrix`` gives a user
transition matrix instead for some or all keys (not necessarily invariant; sdcMicro's
``pd`` given as a matrix): a square CSV table (first row: an empty cell then the
categories; every other row: a category then its probabilities, ``,`` or ``;``
separated) or, from Python, a mapping ``{from: {to: probability}}``; categories the
data do not hold may be left out (they stay as they are), rows must sum to 1.

Household-level keys (``schema.household_keys``, issue 29 item 4): one new value is
drawn per household and given to all its members, and the matrix is built on the
distribution over *households* (each counted once), so the invariance holds for the
households (it would not for the persons if a household's size depended on its value).
The strata of such a key must then be household-level too (checked).

Draws (all from the ``seed`` generator, key by key in the order of ``variables``): the
``S × L`` diagonal uniforms of the strata's matrices (stratum by stratum), then one
uniform ``u`` per record (per household for a household-level key); the new category
is the first ``j`` whose cumulative row probability exceeds ``u`` (one vectorized
search over all rows, no loop over records).  R's generator cannot be reproduced, so
a release equals sdcMicro's in distribution, not draw by draw; the matrices equal
sdcMicro's given the same diagonal draws (tests/test_pram.py holds R's values).

Where this reading differs from sdcMicro 5.8.1: sdcMicro normalizes ``p`` by the sum of
the factor's integer codes rather than the count (``table(x)/sum(as.numeric(x))``),
which cancels in step 2, so the matrices agree; it keeps only the last stratum's matrix
of each key in its result, here every stratum's is published; a key of one category
keeps its value (sdcMicro computes ``α d + 1 - α``, not a probability, for it); a user
matrix's rows must sum to 1 within 1e-9 (sdcMicro: within machine epsilon), and its
categories may come in any order.

Missing values (``missing = "keep"``, a survey's item non-response): a record whose key
is missing keeps it missing, as sdcMicro's ``pram`` leaves ``NA``: the missing value
(the last leaf of the key's hierarchy, `sdceval.core.hierarchy.Hierarchy.missing_leaf`)
is no category of the invariant matrix (``L`` counts the observed categories only, the
distribution ``p`` is that of the records with a value, and no record is drawn into
it); the published matrix keeps it as a row and column of the identity, so it says
that a missing value stays missing.  Its records draw no uniform.

The release (kind ``generalized``): each PRAM-ed key as an exact cell ``lo = hi`` =
the code of the *published* category, which need not be the record's own (the risk
measures read it as published); the other QIs exactly as they are; classes = the
distinct published key combinations.  The transition matrices are public in PRAM
(their parameters are published with the data so that analysts can correct for the
perturbation): ``info["pram"]`` holds them per key and stratum; which records changed
is known only through the private key file's link of rows to records (evaluation, in
memory, compares release and original by position).  ``info["perturbed_keys"]`` lists
the keys whose published value may differ from the record's.

References
----------
Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J., de Wolf, P.-P. (1998). Post
randomisation for statistical disclosure control: theory and implementation. Journal
of Official Statistics 14(4), 463-478.
Templ, M., Kowarik, A., Meindl, B. (2015). Statistical disclosure control for
micro-data using the R package sdcMicro. J. Stat. Softw. 67(4) (``pram``).
"""
from __future__ import annotations

import csv
import io
import math
import re
from typing import TYPE_CHECKING, Mapping

import numpy as np

from sdceval.core.errors import SdcevalError, suggest
from sdceval.core.fileio import read_text_file
from sdceval.core.registry import Param, ParamType, register_method
from sdceval.core.release import Release

if TYPE_CHECKING:  # imported where used: `sdceval list methods` loads no pandas
    import pandas

__all__ = ["invariant_matrix", "draw_categories", "combination_ids", "TransitionMatrices",
           "pram"]

#: tolerance on a user matrix's row sums
ROW_SUM_TOL = 1e-9
#: the most transition-matrix entries (strata x categories²) of one key (memory)
MAX_MATRIX_ENTRIES = 20_000_000


# -- the kernel -------------------------------------------------------------------------
def invariant_matrix(counts, diag, alpha: float) -> np.ndarray:
    """The invariant transition matrix ``R_s`` of the module notes (steps 1-4) for the
    category counts ``counts`` and the diagonal ``diag`` of ``P``; both of shape
    ``(L,)``, or ``(S, L)`` for ``S`` strata at once (result ``(S, L, L)``).

    A column ``k`` no observed category reaches (``Σ_l p_l P[l, k] = 0``: only when
    ``d = 1``) gets ``Q[k] = e_k``; it multiplies a zero of ``P`` in every row that is
    used."""
    counts = np.asarray(counts, dtype=np.float64)
    diag = np.asarray(diag, dtype=np.float64)
    single = counts.ndim == 1
    counts, diag = np.atleast_2d(counts), np.atleast_2d(diag)
    s_, L = counts.shape
    eye = np.eye(L)
    if L == 1:
        out = np.ones((s_, 1, 1))
        return out[0] if single else out
    off = (1.0 - diag) / (L - 1)
    P = np.where(eye.astype(bool), diag[:, :, None], off[:, :, None])
    joint = P * counts[:, :, None]                 # p_j P[j, k]
    reach = joint.sum(axis=1)                      # Σ_l p_l P[l, k], (S, L)
    Q = np.divide(joint.transpose(0, 2, 1), reach[:, :, None],
                  out=np.broadcast_to(eye, (s_, L, L)).copy(),
                  where=reach[:, :, None] > 0)
    R = alpha * (P @ Q) + (1.0 - alpha) * eye
    return R[0] if single else R


def draw_categories(matrices: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The category drawn for each unit: ``matrices`` ``(M, L)`` transition rows,
    ``rows`` the row of each unit, ``u`` one uniform in [0, 1) per unit; the result is
    the first ``j`` with ``u < Σ_{k <= j} M[row, k]`` (inverse CDF).

    Vectorized: row ``r``'s cumulative probabilities, shifted by ``r``, make one
    increasing sequence, searched once for ``row + u``.  A category of probability 0
    is never drawn (its cumulative value equals the previous one); rounding of
    ``row + u`` up to ``row + 1`` is caught by capping at the row's last category of
    positive probability."""
    m, L = matrices.shape
    cum = np.cumsum(matrices, axis=1)
    cum[:, -1] = 1.0
    shifted = (cum + np.arange(m, dtype=np.float64)[:, None]).ravel()
    pos = np.searchsorted(shifted, rows + u, side="right") - rows * L
    last = L - 1 - np.argmax(matrices[:, ::-1] > 0, axis=1)
    return np.minimum(pos, last[rows]).astype(np.int64)


def combination_ids(codes) -> np.ndarray:
    """Class id per record: the distinct combinations of the per-column integer codes
    ``codes`` (non-negative), numbered in order of first appearance (hashed with
    `pandas.factorize` after each column, so the combined key never overflows)."""
    import pandas as pd
    out = np.zeros(len(codes[0]), dtype=np.int64)
    for c in codes:
        out = pd.factorize(out * (int(c.max()) + 1) + c)[0].astype(np.int64)
    return out


# -- the user matrix ------------------------------------------------------------------
class TransitionMatrices(ParamType):
    """A user transition matrix per key: text ``path.csv`` (for the one key PRAM-ed) or
    ``region=a.csv|education=b.csv`` (``,`` also separates), or from Python a mapping
    ``{from: {to: probability}}`` (one key) or ``{key: path or mapping}``.  Canonical
    form: a tuple of ``(key or "", path or ((from, ((to, p), ...)), ...))``."""

    name = "transition matrices"

    def parse(self, raw, where: str):
        if raw is None:
            return None
        if isinstance(raw, tuple) and all(isinstance(i, tuple) and len(i) == 2
                                          and isinstance(i[0], str) for i in raw):
            return raw   # the canonical form, parsed again (a strategy's step)
        if isinstance(raw, str):
            items = [t.strip() for t in re.split(r"[|,]", raw) if t.strip()]
            if not items:
                return None
            out = []
            for t in items:
                key, eq, path = t.partition("=")
                out.append((key.strip(), path.strip()) if eq else ("", t))
            return tuple(out)
        if isinstance(raw, Mapping):
            vals = list(raw.values())
            if vals and all(isinstance(v, Mapping) and v and all(
                    not isinstance(x, (Mapping, str)) for x in v.values()) for v in vals):
                return (("", _matrix_tuple(raw, where)),)   # one matrix, key not named
            return tuple((str(k), v if isinstance(v, str) else _matrix_tuple(v, where))
                         for k, v in raw.items())
        raise SdcevalError(f"{where} must be a CSV file (e.g. 'region=pram_region.csv') "
                           f"or a mapping {{from: {{to: probability}}}}, got {raw!r}")


def _matrix_tuple(m, where: str) -> tuple:
    if not isinstance(m, Mapping):
        raise SdcevalError(f"{where}: a transition matrix is a mapping {{from: {{to: "
                           f"probability}}}}, got {m!r}")
    out = []
    for a, row in m.items():
        if not isinstance(row, Mapping):
            raise SdcevalError(f"{where}: row {a!r} of the transition matrix must map each "
                               f"category to a probability, got {row!r}")
        out.append((str(a), tuple((str(b), _prob(p, f"{where}: entry [{a!r}, {b!r}]"))
                                  for b, p in row.items())))
    return tuple(out)


def _prob(p, where: str) -> float:
    try:
        x = float(p)
    except (TypeError, ValueError):
        raise SdcevalError(f"{where} must be a probability, got {p!r}") from None
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise SdcevalError(f"{where} must be a probability in [0, 1], got {p!r}")
    return x


def _read_matrix_csv(path: str, key: str) -> tuple:
    """The square table of a matrix file as ``((from, ((to, p), ...)), ...)``."""
    text = read_text_file(path, f"PRAM transition matrix of {key!r}")
    delim = ";" if text.split("\n", 1)[0].count(";") > text.split("\n", 1)[0].count(",") \
        else ","
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delim) if any(c.strip()
                                                                           for c in r)]
    where = f"PRAM transition matrix file {path!r}"
    if len(rows) < 2:
        raise SdcevalError(f"{where} needs a header row (an empty cell, then the "
                           "categories) and one row per category")
    header = [c.strip() for c in rows[0][1:]]
    out = []
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header) + 1:
            raise SdcevalError(f"{where}: row {i} has {len(r) - 1} probabilities but the "
                               f"header names {len(header)} categories; the matrix must be "
                               "square")
        out.append((r[0].strip(), tuple(
            (b, _prob(p.strip(), f"{where}: row {i} ({r[0].strip()!r}), column {b!r}"))
            for b, p in zip(header, r[1:]))))
    return tuple(out)


def user_matrix(spec, hierarchy, observed: np.ndarray, key: str) -> np.ndarray:
    """The ``L × L`` matrix over the leaves of ``key``'s hierarchy given by ``spec`` (a
    path or the canonical tuple of `TransitionMatrices`), validated: square (rows and
    columns name the same categories, once each), categories leaves of the key, every
    category the data hold (``observed``: codes) listed, probabilities in [0, 1], rows
    summing to 1 within `ROW_SUM_TOL`.  Unlisted categories keep their value."""
    src = f"file {spec!r}" if isinstance(spec, str) else "mapping"
    table = _read_matrix_csv(spec, key) if isinstance(spec, str) else spec
    where = f"pram: the transition matrix of {key!r} ({src})"
    froms = [a for a, _ in table]
    tos = [b for b, _ in table[0][1]] if table else []
    for name, labels in (("rows", froms), ("columns", tos)):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise SdcevalError(f"{where}: {name} name {', '.join(map(repr, dup))} twice")
    if any([b for b, _ in row] != tos for _, row in table) or set(froms) != set(tos):
        raise SdcevalError(f"{where} is not square: its rows ({', '.join(froms)}) and its "
                           f"columns ({', '.join(tos)}) must name the same categories")
    leaves = {str(v): i for i, v in enumerate(hierarchy.leaves)}
    stray = [a for a in froms if a not in leaves]
    if stray:
        raise SdcevalError(f"{where} names {', '.join(map(repr, stray))}, which "
                           f"{'is not a category' if len(stray) == 1 else 'are not categories'}"
                           f" of {key!r}.{suggest(stray[0], list(leaves))}")
    present = set(froms)
    lacking = [str(hierarchy.leaves[c]) for c in np.unique(observed)
               if str(hierarchy.leaves[c]) not in present]
    if lacking:
        raise SdcevalError(f"{where} lacks the categor{'y' if len(lacking) == 1 else 'ies'}"
                           f" {', '.join(map(repr, lacking[:10]))} of the data; give a row "
                           "and a column for every category of the key")
    L = hierarchy.n_leaves
    out = np.eye(L)
    idx = np.array([leaves[a] for a in froms], dtype=np.int64)
    vals = np.array([[p for _, p in row] for _, row in table], dtype=np.float64)
    sums = vals.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if len(bad):
        raise SdcevalError(f"{where}: row {froms[bad[0]]!r} sums to "
                           f"{float(sums[bad[0]]):.12g}; each row is the distribution of "
                           "the published category and must sum to 1")
    out[np.ix_(idx, idx)] = vals
    return out


# -- the method ----------------------------------------------------------------------
PD = Param("pd", float, 0.8, low=0.0, high=1.0, protection="decreasing",
           grid=(0.5, 0.7, 0.9), unprotected=1.0, unit="probability",
           description="minimum probability of keeping a value (each category's diagonal "
                       "is drawn uniformly in [pd, 1]); 1 publishes the keys as they are")
ALPHA = Param("alpha", float, 0.5, low=0.0, high=1.0,
              description="amount of perturbation: R_s = alpha R + (1 - alpha) I (0 "
                          "changes nothing)")


def _names(text, what: str, dataset, allowed) -> list[str]:
    names = [t for t in re.split(r"[,+\s]+", str(text or "")) if t]
    for c in names:
        if c not in allowed:
            raise SdcevalError(f"pram: {what} names {c!r}, which is not "
                               f"{'a quasi-identifier' if what == 'variables' else 'a column'}"
                               f" of {dataset.name!r}.{suggest(c, list(allowed))}")
    return list(dict.fromkeys(names))


def _strata(dataset, strata) -> tuple[np.ndarray, int, list[str], list]:
    """Stratum id per record (distinct combinations of the ``strata`` columns, numbered
    in order of first appearance), their number, the columns and each stratum's values
    (as text, in stratum order)."""
    s = dataset.schema
    usable = [c for c in dataset.frame.columns
              if c not in s or s[c].role not in ("identifier",)]
    cols = _names(strata, "strata", dataset, usable)
    if not cols:
        return np.zeros(dataset.n, dtype=np.int64), 1, [], [[]]
    import pandas as pd
    ids = dataset.frame.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    ids, _ = pd.factorize(ids)
    first = np.unique(ids, return_index=True)[1]
    values = dataset.frame[cols].iloc[first].astype(str).to_numpy().tolist()
    return ids.astype(np.int64), len(first), cols, values


def _matrix_specs(matrix, variables: list[str], qis) -> dict:
    specs = dict(matrix or ())
    if "" in specs:
        if len(variables) != 1 or len(specs) > 1:
            raise SdcevalError(
                f"pram: matrix gives a transition matrix without naming its key, but pram "
                f"acts on {', '.join(map(repr, variables))}; name it (e.g. "
                f"matrix='{variables[0]}=matrix.csv', or variables='{variables[0]}')")
        specs = {variables[0]: specs[""]}
    for k in specs:
        if k not in variables:
            raise SdcevalError(
                f"pram: matrix names {k!r}, which is not among the keys PRAM-ed "
                f"({', '.join(map(repr, variables))}).{suggest(k, list(qis))} Add it to "
                "variables")
    return specs


def _no_categorical_key(dataset) -> str:
    """`MethodSpec.cost_check`: PRAM is no default candidate on a file without a
    categorical key (it redraws categories; coded keys read as numbers are declared
    categorical with ``[kinds]``); named with ``variables``, it runs."""
    if any(dataset.schema[q].kind == "categorical" for q in dataset.schema.qis):
        return ""
    return ("no categorical quasi-identifier to PRAM (keys read as numbers: declare coded "
            "keys categorical under [kinds] in a schema, or name them with variables=)")


@register_method(
    "pram", family="generalization", random=True, label="PRAM",
    cost_check=_no_categorical_key,
    params=[PD, ALPHA,
            Param("variables", str, None,
                  description="the keys to PRAM ('region,education'; default: every "
                              "categorical QI)"),
            Param("strata", str, None,
                  description="columns whose value combinations are strata: PRAM within "
                              "each (sdcMicro's strata_variables)"),
            Param("matrix", TransitionMatrices(), None,
                  description="a user transition matrix instead of pd/alpha: a square CSV "
                              "('region=m.csv|sex=s.csv'; one file for one key) or a "
                              "mapping {from: {to: p}}; rows sum to 1")],
    description="invariant PRAM (Gouweleeuw et al. 1998; sdcMicro's pram): each key's "
                "category redrawn from a transition matrix that keeps its distribution "
                "in expectation; the matrices are published")
def pram(dataset, *, seed, pd, alpha, variables, strata, matrix) -> Release:
    """Invariant PRAM (module docstring).

    Returns
    -------
    Release
        kind ``"generalized"``: PRAM-ed keys as exact cells of the published category,
        other QIs exact, classes the distinct published combinations; ``info``:
        ``pram`` (per key: ``categories``, the ``strata`` columns and each stratum's
        ``strata_values``, ``matrices`` ``S × L × L`` as nested lists (stratum ``s``,
        from category, to category), ``pd``, ``alpha`` or ``"user"``,
        ``household_level``, ``changed`` records),
        ``perturbed_keys``, ``n_classes``.
    """
    s = dataset.schema
    qis = list(s.qis)
    if not qis:
        raise SdcevalError(f"pram needs quasi-identifiers, but data set {dataset.name!r} "
                           "has none; give some columns role 'qi' (e.g. --qi region,sex)")
    keys = _names(variables, "variables", dataset, qis) or \
        [q for q in qis if s[q].kind == "categorical"]
    if not keys:
        raise SdcevalError(f"pram: data set {dataset.name!r} has no categorical "
                           f"quasi-identifier; name the keys to PRAM (variables='...'; "
                           f"QIs: {', '.join(qis)})")
    specs = _matrix_specs(matrix, keys, qis)
    stratum, n_strata, strata_cols, strata_values = _strata(dataset, strata)
    hh = getattr(dataset, "households", None)
    household_keys = set(getattr(s, "household_keys", ()) or ())
    cells, info = {}, {}
    for q in keys:
        h = dataset.hierarchy(q)
        L = h.n_leaves
        codes = np.asarray(dataset.codes(q), dtype=np.int64)
        unit_code, unit_stratum, back = codes, stratum, None
        if hh is not None and q in household_keys:
            # one draw per household, given to all its members (issue 29 item 4)
            first = np.unique(hh, return_index=True)[1]
            unit_code, unit_stratum, back = codes[first], stratum[first], hh
            if (unit_stratum[hh] != stratum).any():
                raise SdcevalError(
                    f"pram: {q!r} is a household-level key, so it is PRAM-ed once per "
                    f"household, but the strata ({', '.join(strata_cols)}) differ within "
                    "some households; stratify it by household-level columns only")
        if n_strata * L * L > MAX_MATRIX_ENTRIES:
            raise SdcevalError(
                f"pram: {n_strata} strata x {L} categories of {q!r} need {n_strata} "
                f"matrices of {L} x {L}, more than {MAX_MATRIX_ENTRIES:.0e} entries; "
                "stratify by fewer columns or recode the key first")
        # a missing value (missing = "keep": the last leaf) stays missing and is no
        # category of the matrix: its row is the identity, no unit is drawn into it,
        # and its units draw nothing (sdcMicro's pram leaves NA as NA)
        ml = h.missing_leaf
        drawn = np.ones(len(unit_code), dtype=bool) if ml is None else unit_code != ml
        Lc = L if ml is None else L - 1
        if q in specs:
            m = user_matrix(specs[q], h, codes[codes != ml] if ml is not None else codes,
                            q)
            if ml is not None and (m[:, ml].sum() != 1.0 or m[ml, ml] != 1.0):
                raise SdcevalError(
                    f"pram: the transition matrix of {q!r} names the missing value; a "
                    "missing value stays missing and is no category of the matrix: "
                    "leave it out")
            mats = np.broadcast_to(m, (n_strata, L, L))
        else:
            counts = np.bincount(unit_stratum[drawn] * L + unit_code[drawn],
                                 minlength=n_strata * L).reshape(n_strata, L)
            diag = pd + (1.0 - pd) * seed.random((n_strata, Lc))
            mats = invariant_matrix(counts[:, :Lc], diag, alpha)
            if ml is not None:
                core, mats = mats, np.zeros((n_strata, L, L))
                mats[:, :Lc, :Lc] = core
                mats[:, ml, ml] = 1.0
        new = unit_code.copy()
        new[drawn] = draw_categories(np.ascontiguousarray(mats).reshape(n_strata * L, L),
                                     (unit_stratum * L + unit_code)[drawn],
                                     seed.random(int(drawn.sum())))
        if back is not None:
            new = new[back]
        cells[q] = (new, new)
        info[q] = {"categories": [str(v) for v in h.leaves],
                   "strata": strata_cols, "strata_values": strata_values,
                   "matrices": np.asarray(mats).tolist(),
                   "pd": "user" if q in specs else pd,
                   "alpha": "user" if q in specs else alpha,
                   "household_level": back is not None,
                   "changed": int((new != codes).sum())}
    for q in qis:
        if q not in cells:
            code = np.asarray(dataset.codes(q), dtype=np.int64)
            cells[q] = (code, code)
    classes = combination_ids([cells[q][0] for q in qis])
    return Release.generalized(
        dataset, _published(dataset, cells, keys), method="pram", classes=classes,
        cells=cells, info={"pram": info, "perturbed_keys": list(keys),
                           "n_classes": int(classes.max()) + 1})


def _published(dataset, cells: dict, keys) -> "pandas.DataFrame":
    """The QI columns as published: a PRAM-ed key as the original values of the drawn
    categories (the leaf label for a category no record holds), the others as they
    are."""
    import pandas as pd
    out = {}
    for q in dataset.schema.qis:
        col = dataset.frame[q]
        if q not in keys:
            out[q] = col
            continue
        codes = np.asarray(dataset.codes(q))
        new = cells[q][0]
        L = dataset.hierarchy(q).n_leaves
        first = np.full(L, -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        if (first[new] >= 0).all():
            out[q] = col.to_numpy()[first[new]]
        else:
            out[q] = dataset.hierarchy(q).leaves.astype(object)[new]
    return pd.DataFrame(out)
