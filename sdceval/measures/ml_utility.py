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
   original test records.

Features (decision)
-------------------
The candidate features are the linkage attributes: the QIs and the ``numeric``-role
attributes (passthrough columns are left out, as in `query_error`; the target is never a
feature).  The original-trained classifier uses all of them, exactly.  The release is
read as `sdceval.measures.utility_loss.published` reads it (the one reading shared with
`query_error`):

* a published number (perturbative releases) is used as it is;
* a generalized cell of a numeric attribute (an interval) is its midpoint, the mean of
  the cell's first and last leaf values (`Hierarchy.leaf_values`);
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
0); the rest are standardized with the training matrix's mean and standard deviation.

Target of the release-trained classifier: the value the release publishes — the released
sensitive values of a generalized release (unchanged) or a bucketized one (permuted
within the buckets: `Release.sensitive`), or an external table's sensitive column.  A
target the release does not publish (the label, which no method protects; the sensitive
attribute, which perturbative releases drop) is the original's, row by row, as ``cm``
reads labels: the method did not protect it, and there is no classifier without a
target; the measure then judges how well the released features keep their relation to
the target.

Classifier: `sklearn.linear_model.LogisticRegression` (L2, ``C = 1``, lbfgs; multinomial
for more than two classes): fast and deterministic.  A training set with a single class
gives a classifier predicting that class.

``per_record`` is None (decision): a score is a property of the test set, not of a
record (AUC is not even a sum over records), and the training records, 70 % by default,
would have no value.  ``details`` hold both accuracies, both AUCs and both losses, the
target, the number of features of each classifier and the split.
"""
from __future__ import annotations

import warnings

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release, require
from sdceval.measures.utility_loss import published, published_sensitive

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


def _one_hot(lo: np.ndarray, hi: np.ndarray, m: int) -> np.ndarray:
    """``(n, m)``: weight ``1/(hi - lo + 1)`` on leaves ``lo..hi`` of each row."""
    n = len(lo)
    out = np.zeros((n, m + 1))
    w = 1.0 / (hi - lo + 1)
    np.add.at(out, (np.arange(n), lo), w)        # a difference array: +w at lo,
    np.add.at(out, (np.arange(n), hi + 1), -w)   # -w after hi, then a running sum
    return np.cumsum(out, axis=1)[:, :m]


def encode(dataset, columns, release: Release | None = None) -> np.ndarray:
    """Feature matrix of every record: the original values (``release=None``) or what
    ``release`` publishes (module notes), column blocks in ``columns`` order."""
    blocks = []
    for c in columns:
        h = dataset.hierarchy(c)
        if release is None:
            code = dataset.codes(c)
            how = ("value", dataset.frame[c].to_numpy(np.float64)) if h.numeric and \
                c in dataset.schema.numeric else ("cell", code, code)
        else:
            how = published(dataset, release, c)
        if how[0] == "value":
            if not h.numeric:
                raise SdcevalError(
                    f"ml_utility: column {c!r} is published as numbers but its hierarchy "
                    "is not numeric; give it a numeric (interval) hierarchy")
            blocks.append(np.asarray(how[1], dtype=np.float64)[:, None])
        elif h.numeric:
            v = h.leaf_values
            blocks.append(((v[how[1]] + v[how[2]]) / 2.0)[:, None])
        else:
            blocks.append(_one_hot(np.asarray(how[1]), np.asarray(how[2]), h.n_leaves))
    if not blocks:
        return np.zeros((dataset.n, 0))
    return np.hstack(blocks)


def release_target(dataset, release: Release, role: str, column: str) -> np.ndarray:
    """Target code of every release row (module notes): the released sensitive value
    where the release publishes it, else the original's."""
    original = np.asarray(dataset.codes(column), dtype=np.int64)
    if role != "sensitive":
        return original
    released = published_sensitive(dataset, release)
    return np.where(released >= 0, released, original)


def fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, m: int
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Fit the classifier on ``(x_train, y_train)`` (codes ``0..m-1``) and predict the
    test records: predicted codes, probabilities ``(n_test, m)`` (0 for a class absent
    from the training rows) and the number of feature columns used (those not constant
    in training).  One class in training, or no feature left: the majority class, with
    the training class frequencies as probabilities (a constant score)."""
    from sklearn.linear_model import LogisticRegression  # ~0.5 s to import: lazily

    keep = np.ptp(x_train, axis=0) > 0            # constant columns carry nothing
    xt, xs = x_train[:, keep], x_test[:, keep]
    classes = np.unique(y_train)
    proba = np.zeros((len(xs), m))
    if len(classes) < 2 or xt.shape[1] == 0:
        freq = np.bincount(y_train, minlength=m) / len(y_train)
        proba[:] = freq
        return np.full(len(xs), int(np.argmax(freq))), proba, int(xt.shape[1])
    mu, sd = xt.mean(axis=0), xt.std(axis=0)
    sd[sd == 0] = 1.0
    fit = LogisticRegression(C=1.0, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes on separable data
        fit.fit((xt - mu) / sd, y_train)
        p = fit.predict_proba((xs - mu) / sd)
    proba[:, fit.classes_] = p
    return fit.classes_[np.argmax(p, axis=1)], proba, int(xt.shape[1])


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
        Any kind.
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
        the release's training rows), ``n_train``, ``n_test``, ``stratified``,
        ``features`` (the attributes).
    """
    if release.kind == "perturbative" and not dataset.schema.numeric:
        raise SdcevalError(
            f"measure 'ml_utility' does not apply to a perturbative release (of "
            f"{release.method!r}) of data set {dataset.name!r}, which has no numeric "
            "attributes: a perturbative release publishes only masked numeric attributes")
    if release.kind in ("generalized", "bucketized"):
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
    x_orig = encode(dataset, features)
    x_rel = encode(dataset, features, release)
    y_rel = release_target(dataset, release, role, column)
    details = {"score": score}
    for who, x, t in (("original", x_orig, y), ("release", x_rel, y_rel)):
        pred, proba, used = fit_predict(x[train], t[train], x_orig[test], m)
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
                   n_train=int(len(train)), n_test=int(len(test)), stratified=stratified,
                   features=features)
    return Measurement("ml_utility", float(details[f"{score}_loss"]), None, details=details)
