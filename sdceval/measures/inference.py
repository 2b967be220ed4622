"""Inference (WP29 Opinion 05/2014: "the possibility to deduce, with significant
probability, the value of an attribute from the values of a set of other attributes"),
measured as anonymeter 1.1.0's ``InferenceEvaluator`` does (Giomi et al., PETS 2023,
§4.3), on every kind of release.

The intruder knows a target's ``aux`` columns (default: every other column the release
publishes that an attack reads) and guesses its ``secret`` (default: the sensitive
attribute) as the secret of the nearest released row (anonymeter's mixed distance with
the cell reading of `sdceval.measures._attack`).  What a row publishes of the secret:

* an exact value: the guess; a categorical guess is right when equal, a numeric one when
  ``|guess - secret| <= tol · |guess|`` (anonymeter's relative tolerance, 5 %; anonymeter
  divides by ``guess + 1e-12``, which calls every negative guess right: we take its
  magnitude);
* a cell (a quasi-identifier taken as the secret): the chance that a value drawn from
  the cell's leaves is right (the share of them that are);
* a bucketized release (or a whole-file strategy with a bucketization step) publishes
  the secrets of a bucket, permuted: the guess is the most frequent value of the
  nearest row's bucket (the smallest code among equally frequent ones).

The control run guesses control records' secrets; the baseline guesses each target's
secret as that of a random released row.  A release that does not publish the secret
teaches nothing about it: the risk is 0 (said in the details).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError
from sdceval.core.measurement import Measurement
from sdceval.core.params import ColumnNames
from sdceval.core.registry import Param, register_measure
from sdceval.core.release import KINDS, Release
from sdceval.measures._attack import (ATTACK_ROLES, N_ATTACKS, SEED, Search, check_columns,
                                      read_release, sample_rows, summary)

WHO = "inference"


def _secret_name(dataset, secret: str | None) -> str:
    if secret:
        return secret
    if dataset.schema.sensitive is None:
        raise SdcevalError(f"{WHO}: data set {dataset.name!r} has no sensitive attribute; "
                           "name the column to infer with secret=COLUMN (or give one "
                           "column role 'sensitive')")
    return dataset.schema.sensitive


def _data_check(dataset, params) -> None:
    name = _secret_name(dataset, params.get("secret"))
    if name not in dataset.schema:
        raise SdcevalError(f"{WHO}: secret names column {name!r}, which data set "
                           f"{dataset.name!r} does not have")


def _bucket_modes(release: Release, values: np.ndarray) -> np.ndarray:
    """Per released row, the most frequent ``values`` of its bucket (ties: smallest)."""
    inv, c = release.class_index()
    codes, uniq = np.unique(values, return_inverse=True)
    uniq = uniq.ravel()
    counts = np.zeros((c, len(codes)), dtype=np.int64)
    np.add.at(counts, (inv, uniq), 1)
    return codes[counts.argmax(axis=1)][inv]


def _hits(dataset, release: Release, r, j: int, rows: np.ndarray, truth: np.ndarray,
          tol: float, guess_lo: np.ndarray, guess_hi: np.ndarray) -> np.ndarray:
    """The chance that each guess (the published set ``[guess_lo, guess_hi]`` of the
    chosen reading rows) is right about ``truth`` (module notes)."""
    exact = guess_lo == guess_hi
    if not r.numeric[j]:
        inside = (guess_lo <= truth) & (truth <= guess_hi)
        if exact.all():
            return inside.astype(np.float64)
        h = dataset.hierarchy(r.columns[j])
        width = np.where(np.isinf(guess_lo), h.n_leaves, guess_hi - guess_lo + 1)
        return inside / width
    # |g - s| <= tol |g|  <=>  g between s / (1 + tol) and s / (1 - tol)
    ends = np.stack([truth / (1 + tol), truth / (1 - tol) if tol < 1 else
                     np.where(truth > 0, np.inf, -np.inf)])
    lo, hi = ends.min(axis=0), ends.max(axis=0)
    right = ((guess_lo >= lo) & (guess_lo <= hi)).astype(np.float64)
    if exact.all():
        return right
    leaves = dataset.hierarchy(r.columns[j]).leaf_values
    glo = np.where(np.isinf(guess_lo), leaves[0], guess_lo)
    ghi = np.where(np.isinf(guess_hi), leaves[-1], guess_hi)
    n_in = np.searchsorted(leaves, ghi, "right") - np.searchsorted(leaves, glo, "left")
    ok = (np.searchsorted(leaves, np.minimum(ghi, hi), "right")
          - np.searchsorted(leaves, np.maximum(glo, lo), "left")).clip(0)
    return np.where(exact, right, ok / np.maximum(n_in, 1))


@register_measure(
    "inference", category="risk", direction="lower_is_better", kinds=KINDS,
    needs=("control",), attack=True, label="inference risk", unit="attack risk",
    data_check=_data_check,
    params=[Param("secret", str, None,
                  description="the column the intruder infers (default: the sensitive "
                              "attribute)"),
            Param("aux", ColumnNames(), (),
                  description="the columns the intruder knows (default: every other "
                              "column the release publishes)"),
            Param("tol", float, 0.05, low=0.0, high=1.0, high_inclusive=False,
                  description="a numeric guess is right within tol x its magnitude "
                              "(anonymeter's 5 %)"),
            N_ATTACKS, SEED],
    description="anonymeter's inference attack (PETS 2023) on any release: share of "
                "records whose secret the nearest released row gives right, in excess "
                "of the control records', (a - c) / (1 - c)")
def inference(dataset, release: Release, *, secret: str | None = None, aux=(),
              tol: float = 0.05, n_attacks: int = 2000, seed: int = 0) -> Measurement:
    """Inference risk ``(a - c) / (1 - c)`` (module notes), ``a``/``c`` the Wilson
    rates of right guesses of training / control records' secrets.

    Returns
    -------
    Measurement
        ``value`` the risk (clipped to [0, 1]); ``details``: the rates and 95 %
        intervals of the attack, the control and the baseline, ``risk_ci``, ``secret``,
        ``aux``, ``guess`` (how the secret is read) and ``baseline_beats_attack``.
    """
    name = _secret_name(dataset, secret)
    r = read_release(dataset, release, WHO, seed)
    if name not in r.columns:
        if name in dataset.schema and dataset.schema[name].role in ATTACK_ROLES \
                and name not in release.data.columns:
            return Measurement(WHO, 0.0, details={
                "secret": name, "secret_published": False, "risk": 0.0,
                "risk_ci": [0.0, 0.0],
                "note": f"the release does not publish {name!r}: the intruder learns "
                        "nothing about it from the release (risk 0)"})
        check_columns(dataset, release, [name], "secret", WHO)
    known = list(aux) if aux else [c for c in r.columns if c != name]
    check_columns(dataset, release, known, "aux", WHO)
    if name in known:
        raise SdcevalError(f"{WHO}: aux names the secret {name!r}; the intruder does not "
                           "know what he infers")
    if not known:
        raise SdcevalError(f"{WHO}: the release publishes no column besides {name!r} to "
                           "infer it from; name them with aux=...")
    j = r.columns.index(name)
    glo, ghi = r.lo[:, j], r.hi[:, j]
    how = "the nearest row's value"
    if release.sensitive_in_buckets and name == dataset.schema.sensitive:
        published = np.empty(len(r.lo))
        published[r.order] = r.lo[:, j]       # back in the release's row order
        glo = ghi = _bucket_modes(release, published)[r.order]
        how = "the most frequent value of the nearest row's bucket"
    rng = np.random.default_rng(seed)
    search = Search(r, r.index(known))

    def attack(records):
        targets = records[sample_rows(len(records), n_attacks, rng)]
        near = search.nearest(targets)[0][:, 0]
        hits = _hits(dataset, release, r, j, near, targets[:, j], tol, glo[near], ghi[near])
        return float(hits.sum()), len(targets)

    main, control = attack(r.train), attack(r.control)
    n_base = min(len(r.lo), main[1])
    targets = r.train[sample_rows(len(r.train), n_base, rng)]
    pick = rng.integers(0, len(r.lo), size=n_base)
    base = _hits(dataset, release, r, j, pick, targets[:, j], tol, glo[pick], ghi[pick])
    details = {"secret": name, "secret_published": True, "aux": known, "guess": how,
               "numeric_secret": bool(r.numeric[j]), "tol": tol,
               **summary(main, control, (float(base.sum()), n_base))}
    return Measurement(WHO, details["risk"], details=details)
