"""Random small data sets for the lattice search and objective tests (hypothesis).

Each QI gets a random hierarchy: categorical trees cut at random points level by level,
flat domains, or numeric intervals; plus a sensitive column ``s`` (its own two-level
tree, so hierarchical EMD is exercised) and a class label ``y``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from sdceval.core.dataset import Dataset
from sdceval.core.hierarchy import Hierarchy
from sdceval.core.schema import Schema


def random_tree(name: str, n_leaves: int, n_levels: int, rng) -> Hierarchy:
    """Leaves ``name0..``; each inner level merges runs of the level below at random
    cut points (so levels nest), then the root ``*``."""
    cols = [[f"{name}{i}" for i in range(n_leaves)]]
    group = np.arange(n_leaves)
    for j in range(n_levels):
        n_groups = int(group.max()) + 1
        cut = rng.random(max(n_groups - 1, 0)) < 0.5
        new_of_old = np.r_[0, np.cumsum(cut)]
        group = new_of_old[group]
        cols.append([f"{name}L{j + 1}_{g}" for g in group])
    cols.append(["*"] * n_leaves)
    return Hierarchy([list(r) for r in zip(*cols)], name=name)


@st.composite
def lattice_dataset(draw, max_qis: int = 3, max_n: int = 80):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n_qis = draw(st.integers(1, max_qis))
    n = draw(st.integers(2, max_n))
    frame, hier = {}, {}
    for i in range(n_qis):
        name = f"q{i}"
        kind = draw(st.sampled_from(["tree", "flat", "intervals"]))
        if kind == "intervals":
            frame[name] = rng.integers(0, 12, n)
            widths = [2, 4, 8][:draw(st.integers(1, 3))]
            hier[name] = Hierarchy.intervals(np.arange(12), widths, name=name)
        else:
            m = draw(st.integers(1, 6))
            frame[name] = [f"{name}{v}" for v in rng.integers(0, m, n)]
            hier[name] = (Hierarchy.flat([f"{name}{v}" for v in range(m)], name=name)
                          if kind == "flat" else random_tree(name, m, draw(st.integers(0, 2)), rng))
    n_s = draw(st.integers(1, 5))
    frame["s"] = [f"s{v}" for v in rng.integers(0, n_s, n)]
    hier["s"] = random_tree("s", n_s, 1, rng)
    frame["y"] = rng.choice(["a", "b", "c"][:draw(st.integers(1, 3))], n)
    frame = pd.DataFrame(frame)
    qis = [f"q{i}" for i in range(n_qis)]
    schema = Schema.from_roles(frame, qi=qis, sensitive="s", label="y", hierarchies=hier)
    return Dataset(frame, schema, name="rand")
