"""Sequential CART synthesis, as synthpop's ``syn()`` does it with method ``"cart"``
(Reiter 2005; Nowok, Raab & Dibben 2016), on scikit-learn's trees (issue 32 item 2).

The columns a synthetic release publishes (`sdceval.methods._synthesis`) are
synthesized one after another in a *visit order* (``visit``: the columns named first,
then the others in the data set's order; synthpop's ``visit.sequence``, whose default is
the data's column order too):

1. the first column is a random sample, with replacement, of its observed values
   (synthpop's method ``"sample"``, which ``syn()`` gives the first variable);
2. every next column ``y_j`` gets a tree fitted on the *original* records with the
   columns visited before it as predictors — a regression tree (squared error, rpart's
   ``"anova"``) for a numeric-kind column, a classification tree (Gini, rpart's
   ``"class"``) for a categorical one, each leaf holding at least ``minbucket`` records
   (rpart's ``minbucket``, synthpop's default 5), a node split only if it holds at least
   ``3 * minbucket`` (rpart's ``minsplit`` when only ``minbucket`` is given), at most
   ``max_depth`` levels deep;
3. each synthetic record is dropped down that tree (``apply``) with its synthetic values
   of the earlier columns, and takes ``y_j`` from a *donor*: an original record drawn
   uniformly from the records of the leaf it lands in (synthpop's ``syn.cart``: the
   donors' values, never the leaf mean).  For a categorical column synthpop samples
   from the leaf's predicted class probabilities, which are the class frequencies of
   the leaf's records: the same distribution as a donor's value.

A leaf reached by a synthetic record always holds original records: the predictors'
synthetic values are original values (codes of them), so every comparison on the way
down is one the original records were split on.  The donor draw is vectorized: the
original records are grouped by leaf once (a stable sort), and each synthetic record
takes the record at a uniform random position in its leaf's group.

Predictors are ordered integer codes (`column_codes`): a numeric column's rank among its
distinct values (a tree's splits depend on the order of values only; ranks are exact in
the float32 scikit-learn computes in, for up to 2**24 distinct values, which raw values
near 1e300 would not be), a categorical column's code in its hierarchy's leaf order, so
one threshold splits the categories along the hierarchy (a user hierarchy puts related
categories side by side; a flat one sorts the labels).  rpart instead splits a factor
on any subset of its levels; here a subset takes several splits, so a tree may need
more depth to isolate the same categories.  One-hot coding was not chosen: it splits one
category from the rest per node and multiplies the predictors (slower fits, no gain in
what a deep tree can separate).

Randomness, all from the ``seed`` generator, column by column in visit order: the first
column's sample (``integers(0, n, n_records)``), then per tree the integer
``random_state`` of scikit-learn's tree (it breaks ties between equally good splits)
and one uniform per synthetic record for the donor's position.  The same seed gives the
same release, exactly.

Protection knob: ``minbucket`` (larger leaves: each synthetic value is drawn from more
donors, the synthetic records follow the original ones less closely; ``minbucket = n``
leaves every tree a single leaf, so each column is drawn from its marginal, independently
of the others).  ``max_depth`` caps the trees too (None: no cap; rpart's default is 30).

Where this reading differs from synthpop 1.8 (``syn.cart``): scikit-learn's CART has no
cost-complexity pruning (synthpop passes ``cp = 1e-8``, which prunes only splits that
improve the fit by less than 1e-8 of the root's error); factor predictors as ordered
codes (above); no ``smoothing`` of numeric donor values (synthpop's optional
``smoothing = "density"``, off by default there too); no ``proper`` (bootstrap) synthesis,
no missing-value or ``cont.na`` handling (a kept missing key value is a category of its
own), no rules and no strata.

References
----------
Reiter, J. P. (2005). Using CART to generate partially synthetic public use microdata.
Journal of Official Statistics 21(3), 441-462.
Nowok, B., Raab, G. M., Dibben, C. (2016). synthpop: Bespoke creation of synthetic data
in R. Journal of Statistical Software 74(11) (``syn``, ``syn.cart``, ``syn.sample``).
Therneau, T., Atkinson, B. rpart: Recursive Partitioning and Regression Trees
(``rpart.control``: ``minbucket``, ``minsplit``, ``cp``, ``maxdepth``).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError, plain
from sdceval.core.params import ColumnNames
from sdceval.core.registry import Param, register_method
from sdceval.core.scaling import column_exponents, to_unit
from sdceval.methods._synthesis import (N_RECORDS, column_codes, record_count,
                                        synthesized_columns, synthetic_release)

__all__ = ["cart_synthesis", "donor_draw"]

#: the most (nodes x classes) cells a classification tree may hold (8 bytes each: 200 MB)
MAX_TREE_CELLS = 25_000_000

MINBUCKET = Param("minbucket", int, 5, low=1, high="n", protection="increasing",
                  unit="records per leaf", grid=(1, 3, 5, 10, 25, 50, 100, 250, 1000),
                  description="minimum number of original records in a tree leaf, the "
                              "donors of a synthetic value (rpart's minbucket; n: every "
                              "column drawn from its marginal)")


def donor_draw(train_leaf: np.ndarray, new_leaf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The original record each new record takes its value from: for new record ``i``
    in leaf ``new_leaf[i]``, the record at position ``floor(u[i] * size)`` of the
    records with ``train_leaf == new_leaf[i]`` (``u`` uniform in [0, 1)), i.e. a donor
    drawn uniformly from its leaf.  Every leaf in ``new_leaf`` must hold a record."""
    order = np.argsort(train_leaf, kind="stable")
    size = np.bincount(train_leaf, minlength=int(new_leaf.max(initial=0)) + 1)
    start = np.cumsum(size) - size
    pos = start[new_leaf] + np.floor(u * size[new_leaf]).astype(np.int64)
    return order[pos]


def _check_width(dataset, column: str, classes: int, minbucket: int, max_depth) -> None:
    """A classification tree stores one probability per node and class: refuse a
    column whose tree would exceed `MAX_TREE_CELLS` before fitting it."""
    nodes = 2 * -(-dataset.n // minbucket) - 1
    if max_depth is not None and max_depth < 40:
        nodes = min(nodes, 2 ** (max_depth + 1) - 1)
    if nodes * classes > MAX_TREE_CELLS:
        raise SdcevalError(
            f"cart_synthesis: column {column!r} has {classes} categories; its "
            f"classification tree (up to {nodes} nodes at minbucket {minbucket}) would "
            f"need {nodes * classes * 8 / 1e9:.1f} GB; raise minbucket or set max_depth, "
            f"recode the column into fewer categories, or give it role 'ignore'")


def _root_split(dataset, tree, predictors: list, reps: list):
    """``(predictor, last value on the left)`` of a tree's root split (the threshold is
    on codes: code ``k`` and below go left), or None for a single leaf."""
    t = tree.tree_
    if t.node_count == 1:
        return None
    f = int(t.feature[0])
    code = int(np.floor(t.threshold[0]))
    return (predictors[f], plain(dataset.frame[predictors[f]].iloc[int(reps[f][code])]))


@register_method(
    "cart_synthesis", family="synthetic", random=True, label="CART synthesis",
    params=[MINBUCKET,
            Param("max_depth", int, None, low=1, high=1000, unit="levels",
                  description="maximum depth of each tree (default: no limit)"),
            Param("visit", ColumnNames(), (),
                  description="visit order: the columns synthesized first ('age,sex'; "
                              "the others follow in the data set's order); the first is "
                              "sampled from its marginal"),
            N_RECORDS],
    description="sequential CART synthesis (synthpop's syn, method cart): each column "
                "from a tree on the columns before it, values drawn from donors in the "
                "synthetic record's leaf; new records, no record correspondence")
def cart_synthesis(dataset, *, seed, minbucket, max_depth, visit, n_records):
    """Sequential CART synthesis (module docstring).

    Parameters
    ----------
    dataset : Dataset
    minbucket : int
        Minimum number of original records in a leaf (1..n).
    max_depth : int or None
    visit : tuple of str
        Columns synthesized first, in this order.
    n_records : int or None
        Number of synthetic records (default: ``dataset.n``).
    seed : numpy.random.Generator

    Returns
    -------
    Release
        kind ``"synthetic"``; ``info``: ``visit`` (the order used), ``leaves`` (leaves
        of each column's tree; 1 for the first), ``first_split`` (each tree's root
        split as ``(predictor, last value on the left)``, None for a single leaf).
    """
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
    order = synthesized_columns(dataset, visit)
    n, m = dataset.n, record_count(dataset, n_records)
    encoded = [column_codes(dataset, c) for c in order]
    x = np.empty((n, len(order)), dtype=np.float32)   # the original's predictor codes
    xs = np.empty((m, len(order)), dtype=np.float32)  # the synthetic records' codes
    for j, (codes, _) in enumerate(encoded):
        x[:, j] = codes
    rows, leaves, splits = {}, {}, {}
    for j, c in enumerate(order):
        codes, _ = encoded[j]
        if j == 0:
            donor = seed.integers(0, n, m)
            leaves[c], splits[c] = 1, None
        else:
            categorical = dataset.schema[c].kind == "categorical"
            settings = dict(min_samples_leaf=minbucket,
                            min_samples_split=max(2, 3 * minbucket), max_depth=max_depth,
                            random_state=int(seed.integers(np.iinfo(np.int32).max)))
            if categorical:
                _check_width(dataset, c, int(codes.max()) + 1, minbucket, max_depth)
                tree = DecisionTreeClassifier(**settings)
                target = codes
            else:
                # squared errors of values near 1e300 overflow: the tree is fitted on
                # the values divided by a power of two (exact; the same splits)
                v = dataset.frame[c].to_numpy(np.float64)[:, None]
                tree = DecisionTreeRegressor(**settings)
                target = to_unit(v, column_exponents(v))[:, 0]
            tree.fit(x[:, :j], target)
            donor = donor_draw(tree.apply(x[:, :j]), tree.apply(xs[:, :j]), seed.random(m))
            leaves[c] = int(tree.get_n_leaves())
            splits[c] = _root_split(dataset, tree, order[:j],
                                    [e[1] for e in encoded[:j]])
        xs[:, j] = x[donor, j]
        rows[c] = donor
    return synthetic_release(dataset, rows, method="cart_synthesis",
                             info={"visit": list(order), "leaves": leaves,
                                   "first_split": splits})
