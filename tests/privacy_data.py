"""Small synthetic data sets and independent checkers for the privacy-model tests.

The checkers recompute every privacy level with pandas / scipy / POT from the published
table, never through `sdceval.privacy`, so a wrong model cannot vouch for itself.
"""
from __future__ import annotations

import numpy as np
import ot
import pandas as pd
from scipy.spatial.distance import jensenshannon

import sdceval
from sdceval import Dataset, Hierarchy, Schema

QIS = ["age", "workclass", "education", "sex"]
SENS = "occupation"

WORKCLASS = Hierarchy([["Private", "Private", "Non-gov", "*"],
                       ["Self-inc", "Self", "Non-gov", "*"],
                       ["Self-not-inc", "Self", "Non-gov", "*"],
                       ["Federal", "Gov", "Gov", "*"],
                       ["Local", "Gov", "Gov", "*"],
                       ["State", "Gov", "Gov", "*"]], name="workclass")
EDUCATION = Hierarchy([[f"e{i}", f"g{i // 4}", f"b{i // 8}", "*"] for i in range(16)],
                      name="education")
OCCUPATION = Hierarchy([[f"o{i}", f"c{i // 4}", "*"] for i in range(10)], name="occupation")


def synthetic(n: int = 3000, seed: int = 0, occupation_hierarchy: bool = True) -> Dataset:
    """Adult-like: numeric age with an interval hierarchy, three categorical QIs, a
    10-valued sensitive attribute that depends on education (so classes differ)."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(40, 13, n).round(), 17, 90).astype(int)
    wc = rng.choice(WORKCLASS.leaves, n, p=[.6, .08, .1, .07, .1, .05])
    edu_i = rng.integers(0, 16, n)
    sex = rng.choice(["F", "M"], n, p=[.35, .65])
    occ_i = (edu_i // 2 + rng.integers(0, 4, n)) % 10
    frame = pd.DataFrame({"age": age, "workclass": wc,
                          "education": [f"e{i}" for i in edu_i], "sex": sex,
                          "occupation": [f"o{i}" for i in occ_i],
                          "income": rng.choice(["<=50K", ">50K"], n)})
    hier = {"age": Hierarchy.intervals(range(17, 91), [5, 10, 20, 40, 80], name="age"),
            "workclass": WORKCLASS, "education": EDUCATION}
    if occupation_hierarchy:
        hier["occupation"] = OCCUPATION
    schema = Schema.from_roles(frame, qi=QIS, sensitive=SENS, label="income",
                               hierarchies=hier)
    return Dataset(frame, schema, name="synthetic")


# -- independent recomputation ---------------------------------------------------
def groups(release, qis=QIS) -> pd.core.groupby.DataFrameGroupBy:
    """Equivalence classes as the published table shows them (same QI labels)."""
    return release.data.groupby(list(qis), sort=False)


def class_distributions(ds, sens_values: pd.Series, keys: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(P per group, Q) over the sensitive domain of ``ds`` (pandas crosstab)."""
    domain = list(ds.hierarchy(SENS).leaves)
    tab = pd.crosstab(keys, sens_values).reindex(columns=domain, fill_value=0)
    P = tab.to_numpy(float)
    P = P / P.sum(axis=1, keepdims=True)
    Q = ds.frame[SENS].value_counts().reindex(domain, fill_value=0).to_numpy(float)
    return P, Q / Q.sum()


def ground_matrix(h: Hierarchy, kind: str) -> np.ndarray:
    """Ground distance between sensitive leaves: equal, ordered or hierarchical
    (level of the lowest common ancestor / height), from the hierarchy's table."""
    m = h.n_leaves
    if kind == "equal":
        return 1.0 - np.eye(m)
    if kind == "ordered":
        i = np.arange(m)
        return np.abs(i[:, None] - i[None, :]) / (m - 1)
    table = h.to_frame().to_numpy()
    pos = {leaf: r for r, leaf in enumerate(table[:, 0])}
    rows = table[[pos[leaf] for leaf in h.leaves]]
    D = np.zeros((m, m))
    for a in range(m):
        for b in range(m):
            D[a, b] = next(j for j in range(h.height + 1) if rows[a, j] == rows[b, j]) / h.height
    return D


def emd(p, q, D) -> float:
    return float(ot.emd2(np.ascontiguousarray(p, float), np.ascontiguousarray(q, float),
                         np.ascontiguousarray(D, float)))


def js(p, q) -> float:
    return float(jensenshannon(p, q) ** 2)  # scipy returns the square root, base e


def delta_of(p, q) -> float:
    occurs = q > 0
    with np.errstate(divide="ignore"):
        return float(np.abs(np.log(p[occurs] / q[occurs])).max())


def covers(h: Hierarchy, label: str, value) -> bool:
    """Does the published ``label`` cover the original ``value``?"""
    table = h.to_frame()
    row = table[table["level0"] == str(value)]
    if str(label) in set(row.iloc[0]):
        return True
    if h.numeric and str(label).startswith("["):
        a, b = str(label)[1:-1].split("-")
        return float(a) <= float(value) <= float(b)
    return False


__all__ = ["sdceval", "synthetic", "groups", "class_distributions", "ground_matrix",
           "emd", "js", "delta_of", "covers", "QIS", "SENS", "OCCUPATION"]
