"""Machine-learning utility: the classification score a classifier loses when trained on
the release instead of the original (SPEC §4, "Utility on every release"; ARX's
classification utility, SDMetrics' and SDNist's ML efficacy).

    ml_utility = score(trained on the original) − score(trained on the release)

both classifiers scored on the same held-out *original* records; ``score`` is the ROC AUC
(default) or the accuracy.  0: the release trains as good a classifier as the original;
larger: more utility lost; the value lies in [-1, 1] (a release may, by chance, train a
slightly better one).  Both scores and both losses are always in ``details``.

Why AUC by default (decision).  Accuracy rewards the constant classifier: one trained on
a release that carries no information predicts the majority class and scores its share,
which on an imbalanced target is most of the accuracy (Adult's income, every QI
suppressed: 0.75 against the original's 0.82, a loss of 0.069 for a release from which
nothing can be learnt), and on a weakly predictable target beats a fitted classifier, so
that heavy protection can score a smaller loss than none, or a negative one (a random
label, tests/test_contract.py's data: the fully suppressed release loses 0.028
accuracy, the exact QIs 0.042; AUC: 0.064 and -0.002).  A constant
score has an AUC of exactly 0.5, chance, whatever the class shares (Adult suppressed:
AUC loss 0.37; Mondrian k=10: 0.0004).  For more than two classes the AUC is the
one-vs-rest macro average over the classes the test records hold.

Procedure
---------
1. Target: the ``label`` (role ``label``) or the ``sensitive`` attribute; ``target="auto"``
   takes the label when the data set has one, else the sensitive attribute.
2. Split the records once, seeded (``seed``), ``test_size`` of them held out,
   stratified by the original target (unstratified when a class has fewer than two
   records, so that stratifying is impossible; ``details["stratified"]``).
3. Train one classifier on the original training records and one on the release's rows
   of the same records (row ``i`` of a release is record ``i``'s); score both on the
   original test records.  A synthetic release (issue 32: new records, any number, no
   record correspondence) has no rows "of the training records": its classifier is
   trained on all its rows, features and target as it publishes them (a synthetic
   release publishes the label and the sensitive attribute; `release_target`), as
   SDMetrics' ML efficacy does.  The test records are original records the synthesizer
   saw unless the comparison held them out (its control set), so for a synthetic
   release the score measures fidelity to the whole file, not generalization beyond it.

Features (decision)
-------------------
The candidate features are the linkage attributes: the QIs and the ``numeric``-role
attributes (passthrough columns are left out, as in `query_error`; the target is never a
feature).  The original-trained classifier uses all of them, exactly.  The release is
read as `sdceval.measures.utility_loss.published` reads it (the one reading shared with
`query_error`):

* a published number (perturbative releases, the masked numbers of a composite one)
  is used as it is;
* a generalized cell of a numeric attribute (an interval: a numeric QI's, or a
  ``numeric``-role attribute a composite release generalized) is its midpoint in
  original units, the mean of the cell's first and last leaf values
  (`Hierarchy.leaf_values`);
* a categorical attribute is one-hot over its hierarchy's *leaves*: a released cell
  spreads weight ``1/|cell|`` over the leaves it covers (the uniform assumption, as in
  U_loss), an exact value is its leaf's one-hot.  Test records (original values) are
  one-hot of their leaf on the same columns.  This works for any mix of levels in one
  column (Mondrian cells, suppressed rows, full-domain levels) where a one-hot of the
  released node would need one column per node and leave a test record's leaf with no
  column of a coarser node.
* a column the release does not publish is *fully suppressed*: its cell is the whole
  domain, so its features are constant in the training rows and carry no information.

Columns constant in a training matrix are dropped (for either classifier: the same rule,
so a release equal to the original gives exactly the original's classifier and a loss of
0); the rest are standardized with the training matrix's mean and standard deviation:
numeric columns are centred and scaled, leaf columns only scaled.  Centring a column
changes only the intercept of the optimum (which is not penalized), so the fitted
probabilities are those of fully z-scored columns, while a leaf column keeps its zeros.

Design matrix (issue 28).  The features are a `scipy.sparse` CSR matrix built from
integer codes, never a dense n x leaves array (a 1 000-level ZIP code on 100 000 records
was 0.8 GB dense, and the former fit held several copies): a record's cell on a
categorical attribute is a run of consecutive leaves.  Leaves that no training cell
starts or ends inside (an *atom*: the leaves of a generalized node, of a Mondrian cell
never split) have equal columns in the training matrix; the k columns of an atom are
one column times sqrt(k), which under the L2 penalty has the same optimum and the same
predictions (the k coefficients of equal columns are equal at the optimum: k·w·x with
penalty k·w², i.e. v = sqrt(k)·w on sqrt(k)·x) and a better-conditioned fit; a test
record's leaf is its atom's column divided by sqrt(k).  So a row holds one entry per
atom its cell covers (1 for an exact value), and a coarse release is as cheap as a fine
one.  Constant columns are found from the cells before anything is expanded (a leaf
covered by no training cell, or by every one with equal widths), so a column the
release drops costs nothing.  Numeric attributes are one stored entry per row.  The
moments of the numeric columns are `sdceval.measures.propensity`'s (`_Moments`: the same
mean, standard deviation and min = max rule as there); those of the leaf columns are
sums over the cells (difference arrays: one pass over the rows, none over the leaves).
``details["n_features*"]`` count leaf columns, as before (not atoms).

Target of the release-trained classifier: the value the release publishes — the released
sensitive values of a generalized release (unchanged), a bucketized one or a composite
one (as its strategy left them: unchanged, or permuted within the buckets —
`Release.sensitive`, `sdceval.measures.utility_loss.published_sensitive`), or an
external table's sensitive column.  A
target the release does not publish (the label, which no method protects; the sensitive
attribute, which perturbative releases drop) is the original's, row by row, as ``cm``
reads labels: the method did not protect it, and there is no classifier without a
target; the measure then judges how well the released features keep their relation to
the target.

Classifier: `sklearn.linear_model.LogisticRegression` (L2, ``C = 1``) on the sparse
design.  Two classes: Newton's method fitted to convergence (``newton-cholesky``,
``tol = 1e-10``; `CLASSIFIER`), whose steps do not depend on how the design is
parametrized (centred or not, atoms merged or not), so the probabilities are those of
the former dense, fully z-scored design at its optimum, to rounding (3e-16 on small
data).  The former lbfgs at scikit-learn's default ``tol = 1e-4`` stopped far from that
optimum on wide cells (a Mondrian release of 100 000 records with a 1 000-level code:
probabilities up to 0.27 off, AUC 0.5494 against the optimum's 0.5448); the values move
by that stopping error (4e-6 to 5e-3 in AUC in `benchmarks/bench_ml_utility.py`).  The Hessian is (features + 1)² floats: 8 MB for a
1 000-level code.  More than two classes (multinomial): lbfgs at ``tol = 1e-4`` as
before (`CLASSIFIER_MULTI`): a multinomial Newton Hessian has (features x classes)²
entries (1.7 GB for 1 030 features and 14 classes), and lbfgs does not converge to
1e-6 within 1 000 iterations on a 1 000-level code with 15 classes (ten times the time)
— its value is the optimizer's stopping point, which depends on the parametrization:
equal to the dense design's to ~3e-3 in the probabilities on small data, not to
rounding.  Deterministic.  A training set with a single class gives a classifier
predicting that class.

``per_record`` is None (decision): a score is a property of the test set, not of a
record (AUC is not even a sum over records), and the training records, 70 % by default,
would have no value.  ``details`` hold both accuracies, both AUCs and both losses, the
target, the number of features of each classifier and the split.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release, require
from sdceval.measures.propensity import _Moments  # the same moments and rule
from sdceval.measures._plain import cell_midpoints, numbers, target_codes
from sdceval.measures.utility_loss import published, publishes_cells

TARGETS = ("auto", "label", "sensitive")
SCORES = ("auc", "accuracy")


def resolve_target(dataset, target: str) -> tuple[str, str]:
    """``(role, column)`` of the target: ``auto`` is the label if there is one, else the
    sensitive attribute."""
    s = dataset.schema
    if target == "auto":
        if s.label is None and s.sensitive is None:
            raise SdcevalError(
                f"ml_utility needs a target to predict, but data set {dataset.name!r} has "
                "neither a label nor a sensitive attribute; give one column role 'label' "
                "(e.g. --label income) or 'sensitive'")
        target = "label" if s.label is not None else "sensitive"
    require(dataset, (target,), "ml_utility")
    return target, (s.label if target == "label" else s.sensitive)


def feature_columns(dataset, target_column: str) -> list[str]:
    """The candidate features: the QIs and the numeric attributes, but the target."""
    s = dataset.schema
    return [c for c in s.qis + s.numeric if c != target_column]


#: the classifier's settings (module notes, "Classifier"): two classes, more classes
CLASSIFIER = {"C": 1.0, "solver": "newton-cholesky", "tol": 1e-10, "max_iter": 1000}
CLASSIFIER_MULTI = {"C": 1.0, "solver": "lbfgs", "tol": 1e-4, "max_iter": 1000}
#: entries of the design matrix expanded at a time (bounds the temporaries: 2 MB each)
EXPAND = 1 << 18


@dataclass(frozen=True)
class Design:
    """Features of some records (module notes, "Design matrix"), kept as codes: the
    numeric columns ``values`` (rows, k) and, per categorical attribute, each row's cell
    of leaves ``lo..hi`` of its ``n_leaves`` (``cells``); ``order`` says which block each
    feature attribute is, in order (``("value", j)`` or ``("cell", j)``)."""

    values: np.ndarray
    cells: tuple
    order: tuple

    @property
    def n(self) -> int:
        return len(self.values)

    def rows(self, index) -> Design:
        """The design of the records ``index``."""
        return Design(self.values[index], tuple((lo[index], hi[index], m)
                                                for lo, hi, m in self.cells), self.order)


def feature_source(dataset, column: str, release: Release | None = None) -> tuple:
    """How ``column`` enters the features: ``("value", x)`` or ``("cell", lo, hi)`` as
    `sdceval.measures.utility_loss.published` reads ``release``; for the original
    (``release=None``) a numeric attribute's values, any other column's exact cells."""
    if release is not None:
        return published(dataset, release, column)
    if dataset.hierarchy(column).numeric and column in dataset.schema.numeric:
        return "value", dataset.frame[column].to_numpy(np.float64)
    code = dataset.codes(column)
    return "cell", code, code


def design(dataset, columns, release: Release | None = None) -> Design:
    """Features of every record: the original values (``release=None``) or what
    ``release`` publishes (module notes)."""
    values, cells, order = [], [], []
    for c in columns:
        h = dataset.hierarchy(c)
        how = feature_source(dataset, c, release)
        if how[0] == "value":
            order.append(("value", len(values)))
            values.append(numbers(h, how[1], c, "ml_utility"))
        elif h.numeric:
            order.append(("value", len(values)))
            values.append(cell_midpoints(h, how[1], how[2]))
        else:
            order.append(("cell", len(cells)))
            cells.append((np.asarray(how[1], dtype=np.int64),
                          np.asarray(how[2], dtype=np.int64), h.n_leaves))
    n = dataset.n if release is None else release.n   # synthetic: any row count
    stacked = np.column_stack(values) if values else np.zeros((n, 0))
    return Design(stacked, tuple(cells), tuple(order))


def _cell_moments(lo: np.ndarray, hi: np.ndarray, m: int):
    """Standard deviation of each leaf column of the cells ``lo..hi`` (weight
    ``1/|cell|`` on the leaves of a row's cell) and whether the column is constant,
    from running sums over difference arrays: no row is expanded.  A column is
    constant when no cell covers it, or every cell does and all have the same width."""
    n = len(lo)
    w = 1.0 / (hi - lo + 1)

    def covered(weights=None):     # sum of the weights of the cells covering each leaf
        return np.cumsum(np.bincount(lo, weights, m + 1)
                         - np.bincount(hi + 1, weights, m + 1))[:m]

    cover = covered()
    mean = covered(w) / n
    sd = np.sqrt(np.maximum(covered(w * w) / n - mean * mean, 0.0))
    same_width = n == 0 or bool(np.ptp(hi - lo) == 0)
    return sd, (cover == 0) | ((cover == n) & same_width)


class _Standardizer:
    """The columns kept and their scaling, from the training design (module notes)."""

    def __init__(self, train: Design):
        mom = _Moments(train.values.shape[1])
        mom.add(train.values)
        self.keep_v = mom.hi > mom.lo                  # (NaN: not kept)
        self.mu = mom.mean[self.keep_v]
        self.sd = mom.std()[self.keep_v]
        self.atoms = []
        self.p = int(self.keep_v.sum())
        for lo, hi, m in train.cells:
            sd, constant = _cell_moments(lo, hi, m)
            self.p += int((~constant).sum())
            # atoms: runs of leaves no training cell starts or ends inside, whose
            # columns are therefore equal (module notes, "Design matrix")
            edge = np.zeros(m + 1, dtype=bool)
            edge[[0, m]] = True
            edge[lo] = edge[hi + 1] = True
            start = np.flatnonzero(edge)
            size = np.diff(start)
            start = start[:-1]
            keep = ~constant[start]
            self.atoms.append((np.cumsum(edge[:m]) - 1, start[keep], size[keep],
                               np.concatenate(([0], np.cumsum(keep))),
                               sd[start[keep]] * np.sqrt(size[keep])))

    def matrix(self, d: Design):
        """The CSR design of ``d``'s rows: the kept numeric columns z-scored, then the
        kept atoms of each attribute.  A row's cell is a run of consecutive atoms, so
        the matrix is written run by run, with no dense n x leaves array."""
        import scipy.sparse as sp

        n = d.n
        z = (d.values[:, self.keep_v] - self.mu) / self.sd
        # per block: each row's first column, run length, and (cell, atoms) or values
        runs = [(np.full(n, j), np.ones(n, dtype=np.int64), z[:, j])
                for j in range(z.shape[1])]
        offset = z.shape[1]
        for (lo, hi, _), atoms in zip(d.cells, self.atoms):
            atom_of, _, _, before, scale = atoms
            first = before[atom_of[lo]]
            runs.append((offset + first, before[atom_of[hi] + 1] - first,
                         (lo, hi, offset, atoms)))
            offset += len(scale)
        indptr = np.zeros(n + 1, dtype=np.int64)
        for r in runs:
            indptr[1:] += r[1]
        np.cumsum(indptr, out=indptr)
        nnz = int(indptr[-1])
        itype = np.int32 if max(nnz, offset) < 2 ** 31 else np.int64
        indices = np.empty(nnz, dtype=itype)
        data = np.empty(nnz)
        at = indptr[:-1].copy()                 # where each row's next run goes
        for first, length, what in runs:
            if not isinstance(what, tuple):     # a number: one entry per row
                indices[at] = first
                data[at] = what
                at += length
                continue
            lo, hi, off, (_, start, size, _, scale) = what
            ends = np.cumsum(length)
            r0 = 0
            while r0 < n:                       # rows in chunks of ~EXPAND entries
                base = ends[r0 - 1] if r0 else 0
                r1 = max(int(np.searchsorted(ends, base + EXPAND, "right")), r0 + 1)
                k, skip = length[r0:r1], ends[r0:r1] - length[r0:r1] - base
                step = np.arange(int(k.sum()))
                col = np.repeat(first[r0:r1] - skip, k) + step
                step += np.repeat(at[r0:r1] - skip, k)          # now the positions
                indices[step] = col
                col -= off                                      # kept atom
                a, b = np.repeat(lo[r0:r1], k), np.repeat(hi[r0:r1], k)
                # leaves of the cell in the atom / (|cell| sd sqrt|atom|)
                overlap = (np.minimum(b, start[col] + size[col] - 1)
                           - np.maximum(a, start[col]) + 1)
                data[step] = overlap / ((b - a + 1) * scale[col])
                r0 = r1
            at += length
        return sp.csr_matrix((data, indices, indptr.astype(itype, copy=False)),
                             shape=(n, offset))


def encode(dataset, columns, release: Release | None = None) -> np.ndarray:
    """The features of every record as a dense array, blocks in ``columns`` order (the
    numbers; a categorical attribute's leaves, weight ``1/|cell|`` on its cell), before
    standardizing: for inspecting small data.  The measure never builds it (`design`)."""
    d = design(dataset, columns, release)
    blocks = []
    for kind, j in d.order:
        if kind == "value":
            blocks.append(d.values[:, j:j + 1])
        else:
            lo, hi, m = d.cells[j]
            width = hi - lo + 1
            row = np.repeat(np.arange(d.n), width)
            block = np.zeros((d.n, m))
            block[row, lo[row] + np.arange(len(row)) - np.repeat(np.cumsum(width) - width,
                                                                 width)] = 1.0 / width[row]
            blocks.append(block)
    return np.hstack(blocks) if blocks else np.zeros((dataset.n, 0))


def release_target(dataset, release: Release, role: str, column: str) -> np.ndarray:
    """Target code of every release row (module notes): the released sensitive value
    where the release publishes it, else the original's; a synthetic release's own
    values (`sdceval.measures._plain.target_codes`, the one reading)."""
    return target_codes(dataset, release, column)


def fit_predict(train: Design, y_train: np.ndarray, test: Design, m: int
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Fit the classifier on ``(train, y_train)`` (codes ``0..m-1``) and predict the
    ``test`` records: predicted codes, probabilities ``(n_test, m)`` (0 for a class
    absent from the training rows) and the number of feature columns used (those not
    constant in training).  One class in training, or no feature left: the majority
    class, with the training class frequencies as probabilities (a constant score)."""
    from sklearn.linear_model import LogisticRegression  # ~0.5 s to import: lazily

    std = _Standardizer(train)
    classes = np.unique(y_train)
    proba = np.zeros((test.n, m))
    if len(classes) < 2 or std.p == 0:
        freq = np.bincount(y_train, minlength=m) / len(y_train)
        proba[:] = freq
        return np.full(test.n, int(np.argmax(freq))), proba, std.p
    fit = LogisticRegression(**(CLASSIFIER if len(classes) == 2 else CLASSIFIER_MULTI))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes on separable data
        fit.fit(std.matrix(train), y_train)
        p = fit.predict_proba(std.matrix(test))
    proba[:, fit.classes_] = p
    return fit.classes_[np.argmax(p, axis=1)], proba, std.p


def macro_auc(y_test: np.ndarray, proba: np.ndarray) -> float | None:
    """ROC AUC of each class against the rest, averaged over the classes for which the
    test records hold both outcomes (for two classes: the plain AUC); None if none."""
    from sklearn.metrics import roc_auc_score

    aucs = [roc_auc_score(y_test == k, proba[:, k]) for k in np.unique(y_test)
            if 0 < (y_test == k).sum() < len(y_test)]
    return float(np.mean(aucs)) if aucs else None


def split(y: np.ndarray, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Train and test record indices, stratified by ``y`` when every class has at least
    two records (and each part room for every class); the flag says whether it was."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    try:
        train, test = train_test_split(idx, test_size=test_size, random_state=seed,
                                       stratify=y)
        stratified = True
    except ValueError:   # a class with one record, or more classes than test records
        try:
            train, test = train_test_split(idx, test_size=test_size, random_state=seed)
        except ValueError as err:      # too few records for this test_size
            raise SdcevalError(f"ml_utility: cannot split {len(y)} records with "
                               f"test_size={test_size}: {err}") from None
        stratified = False
    return np.sort(train), np.sort(test), stratified


@register_measure(
    "ml_utility", category="utility", direction="lower_is_better", kinds=KINDS,
    label="classifier utility lost",
    data_check=lambda dataset, params: resolve_target(dataset, params["target"]),
    params=[
        Param("target", str, default="auto", choices=TARGETS,
              description="what the classifier predicts: the label, the sensitive "
                          "attribute, or auto (the label if there is one)"),
        Param("score", str, default="auc", choices=SCORES,
              description="the score whose loss is the value: auc (ROC AUC; one-vs-rest "
                          "macro average for more than two classes) or accuracy"),
        Param("test_size", float, default=0.3, low=0, high=1, low_inclusive=False,
              high_inclusive=False, unit="fraction of records",
              description="share of the records held out (original values) for scoring"),
        Param("seed", int, default=0, low=0,
              description="seed of the train/test split (the same split for every "
                          "release)"),
    ],
    description="classification utility lost (ML efficacy): score (AUC or accuracy) of a "
                "logistic regression trained on the original minus that of one trained on "
                "the release, both predicting the label (or the sensitive attribute) of "
                "held-out original records")
def ml_utility(dataset, release: Release, target: str = "auto", score: str = "auc",
               test_size: float = 0.3, seed: int = 0) -> Measurement:
    """Classification score lost by training on the release (module notes).

    Parameters
    ----------
    dataset : Dataset
        Original data with a label or a sensitive attribute (the target) and QIs or
        numeric attributes (the features).
    release : Release
        Any kind (a synthetic release trains on all its rows).
    target : {"auto", "label", "sensitive"}
    score : {"auc", "accuracy"}
        The score whose difference is the value.
    test_size : float
        Fraction of the records held out, with their original values, for scoring.
    seed : int
        Seed of the split.

    Returns
    -------
    Measurement
        ``value`` = score(original-trained) − score(release-trained), in [-1, 1];
        ``per_record`` = None; ``details``: ``score``, ``accuracy_original``,
        ``accuracy_release``, ``accuracy_loss``, ``auc_original``, ``auc_release``,
        ``auc_loss`` (None if the test records hold a single class), ``target``
        (column), ``target_role``, ``n_classes``, ``n_features`` (feature columns of
        the original-trained classifier), ``n_features_release`` (those not constant in
        the release's training rows), ``n_train``, ``n_train_release`` (the release's
        training rows: ``n_train``, or every row of a synthetic release), ``n_test``,
        ``stratified``,
        ``features`` (the attributes).
    """
    if release.kind == "perturbative" and not dataset.schema.numeric:
        raise SdcevalError(
            f"measure 'ml_utility' does not apply to a perturbative release (of "
            f"{release.method!r}) of data set {dataset.name!r}, which has no numeric "
            "attributes: a perturbative release publishes only masked numeric attributes")
    if publishes_cells(dataset, release):
        require(dataset, ("cells",), "ml_utility", release)
    role, column = resolve_target(dataset, target)
    features = feature_columns(dataset, column)
    if not features:
        raise SdcevalError(
            f"ml_utility needs features: data set {dataset.name!r} has no quasi-identifier "
            "or numeric attribute besides the target")
    y = np.asarray(dataset.codes(column), dtype=np.int64)
    m = dataset.hierarchy(column).n_leaves
    train, test, stratified = split(y, test_size, seed)
    x_orig = design(dataset, features)
    x_rel = design(dataset, features, release)
    y_rel = release_target(dataset, release, role, column)
    # a synthetic release trains on all its own records (module notes, step 3)
    train_rel = train if release.aligned else np.arange(release.n)
    details = {"score": score}
    for who, x, t, rows in (("original", x_orig, y, train), ("release", x_rel, y_rel,
                                                            train_rel)):
        pred, proba, used = fit_predict(x.rows(rows), t[rows], x_orig.rows(test), m)
        details[f"accuracy_{who}"] = float((pred == y[test]).mean())
        details[f"auc_{who}"] = macro_auc(y[test], proba)
        details["n_features" if who == "original" else "n_features_release"] = used
    details["accuracy_loss"] = details["accuracy_original"] - details["accuracy_release"]
    auc_ok = details["auc_original"] is not None
    details["auc_loss"] = (details["auc_original"] - details["auc_release"]) if auc_ok else None
    if score == "auc" and not auc_ok:
        raise SdcevalError(
            f"ml_utility: the {len(test)} test records all have the same {column!r}, so "
            "no AUC can be computed; use score=accuracy or a larger test_size")
    details.update(target=column, target_role=role, n_classes=int(len(np.unique(y))),
                   n_train=int(len(train)), n_train_release=int(len(train_rel)),
                   n_test=int(len(test)), stratified=stratified,
                   features=features)
    return Measurement("ml_utility", float(details[f"{score}_loss"]), None, details=details)
