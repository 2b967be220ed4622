"""A method's public parameters, published beside its release (issue 29 item 3).

Some methods are only half described by the table they publish.  PRAM (Gouweleeuw et
al. 1998; `sdceval.methods.pram`) redraws a key's category from a transition matrix
``R_s``, so a published key need not contain the record's value; the matrix is public
by design (an analyst needs it to correct frequencies, and PRAM's protection does not
rest on its secrecy), and the list of the keys it redrew is what lets evaluation read
such a key as a drawn category instead of refusing it as a cell its record does not fit.
Which *records* were changed is known only through the private key file, which aligns
the published rows with the original (`sdceval.core.release_order`).

`write_release` writes, beside a release that has public parameters
(`public_parameters`; for now those of PRAM, alone or as a strategy's step), the PUBLIC
file ``public_path_for``: ``masked.csv`` -> ``masked.csv.method.json`` (the release's
whole file name, like the key's), created with the mode of any new file (published with
the release, unlike the key), written atomically together with the release and the
key, never over an input file nor over a file that is not the public file of a release
of this name.  A JSON object::

    {"format": "sdceval-release-method 1",
     "note": "PUBLIC: published with 'masked.csv' ...",
     "release": "masked.csv",
     "release_sha256": "<sha256 of the release file's bytes>",
     "method": "pram",
     "perturbed_keys": ["region", "sex"],
     "pram": {"region": {"categories": ["east", "north", ...],
                         "strata": ["sex"], "strata_values": [["F"], ["M"]],
                         "matrices": [[[0.93, 0.03, ...], ...], ...],
                         "pd": 0.8, "alpha": 0.5, "household_level": false}, ...}}

``matrices[s][i][j]``: in stratum ``s`` (the combination ``strata_values[s]`` of the
``strata`` columns' values), the probability that a record of category
``categories[i]`` publishes ``categories[j]``; ``pd`` and ``alpha`` are ``"user"`` for a
user matrix.  Nothing in it is about a record: no row, no record position, no count of
changed records, no seed (the method's seed would let anyone redraw the uniforms).
What it does disclose is aggregate and inherent to publishing invariant PRAM matrices:
``p R_s = p``, so each stratum's distribution of the key is a left eigenvector of its
matrix (a category absent from a stratum has a zero column); strata of one or few
records are therefore as disclosive as a frequency table of them.

A *synthetic* release (`sdceval.core.release.Release.synthetic`: new records, no record
correspondence, issue 32) always gets a public file, as it is what marks the file as
synthetic (`read_public` returns ``kind`` ``"synthetic"`` and
`sdceval.core.release_io.read_release` reads the file as such; without it the file
would be taken for a row-aligned release and refused)::

    {"format": "sdceval-release-method 1", "note": "...", "release": "syn.csv",
     "release_sha256": "...", "method": "dp_histogram", "kind": "synthetic",
     "params": {"epsilon": 1.0, "columns": "sex,region", ...},
     "dp": {"epsilon": 1.0, "epsilon_spent": 1.0, "delta": 0.0, "mechanism": "Laplace ...",
            "scale": 3.0, "sensitivity": 3, "neighbouring": "add/remove one record ...",
            "noise": "opendp", "private": true, "reproducible": false,
            "tables": [["sex", "region"], ["age"], ["income"]], "bins": {...},
            "leaks": ["bounds of 'income' taken from the data ..."]}}

``params``: the method's resolved parameters but its seed (with it anyone could redraw
the records, and, for ``dp_histogram`` with ``noise = "seeded"``, remove the noise);
``dp`` (differential-privacy methods only): the `DP_FIELDS` of the release's
``info["dp"]`` — the budget (ε asked and spent, δ), the mechanism and its scale and
sensitivity, the neighbouring relation, the noise source (``noise``: ``"opendp"``,
OpenDP's secure generator, or ``"seeded"``, reproducible and not private once the seed
is known; ``private``, ``reproducible``, ``warning``), the tables and numeric bins, and
the stated leaks.  Nothing in it is about a record: a synthetic release has none to
link.

`read_public` checks the file against the release (its sha256), the data set (each key
a quasi-identifier, its categories the leaves of the key's hierarchy) and itself (each
matrix ``S x L x L``, rows of non-negative probabilities summing to 1);
`sdceval.core.release_io` then checks a PRAM-ed key to publish a category of its domain
that the matrix of the record's stratum can draw from the record's value
(`draw_probability` > 0; `sdceval.core.release_checks.check_cells`), the counterpart of
a generalized cell containing its record's value, and never uses it to prove record
order (any category with a positive probability may be published for any record).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sdceval.core.errors import SdcevalError

PUBLIC_SUFFIX = ".method.json"
FORMAT = "sdceval-release-method 1"
#: the fields of a PRAM-ed key's ``Release.info["pram"]`` entry that are published
PRAM_FIELDS = ("categories", "strata", "strata_values", "matrices", "pd", "alpha",
               "household_level")
#: a transition matrix's rows sum to 1 within this (as `sdceval.methods.pram` accepts)
_ROW_SUM_TOL = 1e-9
#: the fields of a DP release's ``info["dp"]`` that are published (module docstring):
#: the budget, the mechanism, the noise source and the stated leaks
DP_FIELDS = ("epsilon", "epsilon_spent", "delta", "mechanism", "scale", "sensitivity",
             "neighbouring", "noise", "private", "reproducible", "warning", "tables",
             "bins", "leaks")
#: the ``kind`` of a synthetic release's public file
SYNTHETIC = "synthetic"


def public_path_for(path) -> Path:
    """The public file written beside a release: its whole file name and
    ``.method.json`` (``masked.csv`` -> ``masked.csv.method.json``)."""
    path = Path(path)
    return path.with_name(path.name + PUBLIC_SUFFIX)


def public_parameters(release) -> dict | None:
    """The public parameters of ``release`` (module docstring), or None when it has
    none: the PRAM-ed keys (``info["perturbed_keys"]``) and their matrices
    (``info["pram"]``, the `PRAM_FIELDS` of each), of the release's own method or of
    its strategy's steps (``info["steps"]``, in step order: a later step's key
    replaces an earlier's, as `sdceval.methods.strategy.compose` takes its cells); for
    a synthetic release (not ``aligned``), always: `synthetic_parameters`."""
    if not release.aligned:
        return synthetic_parameters(release)
    infos = [release.info, *dict(release.info.get("steps") or {}).values()]
    keys, pram = [], {}
    for info in infos:
        for q in info.get("perturbed_keys") or ():
            entry = (info.get("pram") or {}).get(q)
            if entry is None:
                continue
            keys.append(q)
            pram[q] = {f: entry[f] for f in PRAM_FIELDS if f in entry}
    if not keys:
        return None
    # the method's name, its steps' without their fixed parameters: a strategy's text
    # may name a local file (a user matrix, pram:matrix=/home/...), which is no one's
    # business; the parameters that matter are in "pram"
    method = "+".join(step.split(":", 1)[0] for step in str(release.method).split("+"))
    return {"method": method, "perturbed_keys": list(dict.fromkeys(keys)), "pram": pram}


def synthetic_parameters(release) -> dict:
    """The public parameters of a synthetic release (module docstring): its method,
    ``kind``, parameters without the seed and, for a DP release, the `DP_FIELDS` of its
    ``info["dp"]``, as plain JSON values."""
    from sdceval.core.fingerprint import _plain
    out = {"method": str(release.method), "kind": SYNTHETIC,
           "params": _plain({k: v for k, v in release.params.items() if k != "seed"})}
    dp = release.info.get("dp")
    if dp:
        out["dp"] = _plain({f: dp[f] for f in DP_FIELDS if f in dp})
    return out


def public_text(params: dict, release_name: str, release_sha256: str) -> str:
    """The public file's text for ``params`` (`public_parameters`) of the release file
    ``release_name`` whose bytes have ``release_sha256``."""
    doc = {"format": FORMAT,
           "note": (f"PUBLIC: published with {release_name!r}: the public parameters of "
                    "the method that made it (no record-level information)"),
           "release": release_name, "release_sha256": release_sha256, **params}
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def public_release(path) -> str | None:
    """The release file name a public file names (``"release"``), or None for a file
    that is not an sdceval public file or cannot be read."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None
    name = doc.get("release")
    return name if isinstance(name, str) else None


def read_public(path, dataset, release_sha256: str) -> dict:
    """The checked public parameters of the public file ``path`` (module docstring)
    for the release file whose bytes have ``release_sha256``: ``{"perturbed_keys":
    [...], "pram": {key: {...}}}`` with the matrices as nested lists of floats.  Every
    mismatch is an `SdcevalError` naming the file and, where it is a key's, the key."""
    path = Path(path)
    shown = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SdcevalError(f"cannot read the public file {shown!r} of the release's "
                           f"method parameters: {exc}; use the file 'sdceval anonymize' "
                           "wrote beside the release") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SdcevalError(f"{shown!r} is not an sdceval public file of method parameters "
                           f"(its 'format' should be {FORMAT!r}); use the file 'sdceval "
                           "anonymize' wrote beside the release")
    if doc.get("release_sha256") != release_sha256:
        raise SdcevalError(
            f"public file {shown!r} belongs to another release: it was written for a file "
            f"{doc.get('release')!r} with other bytes (another release, or this one "
            "edited or saved again); use the public file written with this release")
    if doc.get("kind") == SYNTHETIC:
        return _synthetic_entry(doc, shown)
    keys, pram = doc.get("perturbed_keys"), doc.get("pram")
    if not isinstance(keys, list) or not isinstance(pram, dict) or not keys:
        raise SdcevalError(f"public file {shown!r} is damaged: it lacks the list "
                           "'perturbed_keys' or the object 'pram'")
    qis = list(dataset.schema.qis)
    out = {}
    for q in keys:
        if not isinstance(q, str) or q not in qis:
            raise SdcevalError(f"public file {shown!r} names the PRAM-ed key {q!r}, which "
                               f"is not a quasi-identifier of data set {dataset.name!r} "
                               f"({', '.join(qis)}); evaluate with the --data and --schema "
                               "the release was made with")
        if not isinstance(pram.get(q), dict):
            raise SdcevalError(f"public file {shown!r} is damaged: 'pram' has no entry for "
                               f"the PRAM-ed key {q!r}")
        out[q] = _pram_entry(pram[q], q, dataset, shown)
    return {"perturbed_keys": list(dict.fromkeys(keys)), "pram": out}


def _synthetic_entry(doc: dict, shown: str) -> dict:
    """A synthetic release's checked public parameters (`read_public`): ``{"kind":
    "synthetic", "method", "params", "dp"?}``."""
    method, params, dp = doc.get("method"), doc.get("params", {}), doc.get("dp")
    if not isinstance(method, str) or not method or not isinstance(params, dict) \
            or not isinstance(dp, (dict, type(None))):
        raise SdcevalError(f"public file {shown!r} is damaged: a synthetic release's file "
                           "names its 'method' (a text), its 'params' and its 'dp' budget "
                           "(objects); use the file 'sdceval anonymize' wrote")
    return {"kind": SYNTHETIC, "method": method, "params": params,
            **({"dp": dp} if dp is not None else {})}


def _pram_entry(entry: dict, q: str, dataset, shown: str) -> dict:
    """One key's checked PRAM parameters (`read_public`)."""
    where = f"public file {shown!r}, key {q!r}"
    leaves = [str(v) for v in dataset.hierarchy(q).leaves]
    if entry.get("categories") != leaves:
        raise SdcevalError(f"{where}: its categories are not those of the key in data set "
                           f"{dataset.name!r} ({len(leaves)} categories); evaluate with "
                           "the --data, --schema and hierarchies the release was made with")
    strata, values = entry.get("strata", []), entry.get("strata_values", [[]])
    if (not isinstance(strata, list) or not isinstance(values, list) or not values
            or not all(isinstance(v, list) and len(v) == len(strata) for v in values)):
        raise SdcevalError(f"{where}: 'strata' and 'strata_values' are damaged (one list "
                           "of values per stratum, one value per strata column)")
    try:
        mats = np.asarray(entry.get("matrices"), dtype=float)
    except (TypeError, ValueError):
        mats = np.empty(0)
    L = len(leaves)
    if mats.shape != (len(values), L, L):
        raise SdcevalError(f"{where}: 'matrices' must hold {len(values)} matrices of "
                           f"{L} x {L} (a stratum each), got shape {mats.shape}")
    sums = mats.sum(axis=2)
    if not np.isfinite(mats).all() or (mats < 0).any() or \
            (np.abs(sums - 1.0) > _ROW_SUM_TOL).any():
        raise SdcevalError(f"{where}: a transition matrix row is not a distribution (every "
                           "probability >= 0, each row's sum 1); use the file 'sdceval "
                           "anonymize' wrote")
    return {**{f: entry[f] for f in PRAM_FIELDS if f in entry},
            "strata": strata, "strata_values": values, "matrices": mats.tolist()}


def draw_probability(dataset, q: str, entry: dict, published: np.ndarray) -> np.ndarray:
    """Per record, the probability that PRAM publishes the category ``published`` (leaf
    codes, one per record in record order) for the record's own category of key ``q``
    under the published matrix of its stratum, ``matrices[s][own][published]``
    (``entry``: the key's checked public parameters, `read_public`).  A record whose
    stratum the file does not list (the file is of another data set) is an error.
    Zero: no draw could have published it (`sdceval.core.release_checks.check_cells`
    refuses it, as it refuses a cell that does not contain its record's value)."""
    mats = np.asarray(entry["matrices"], dtype=float)
    own = np.asarray(dataset.codes(q), dtype=np.int64)
    strata = entry.get("strata") or []
    if not strata:
        stratum = np.zeros(len(own), dtype=np.int64)
    else:
        import pandas as pd
        missing = [c for c in strata if c not in dataset.frame.columns]
        if missing:
            raise SdcevalError(f"the public file's PRAM of {q!r} is stratified by "
                               f"{', '.join(map(repr, missing))}, not a column of data set "
                               f"{dataset.name!r}; evaluate with the data the release was "
                               "made with")
        listed = pd.MultiIndex.from_tuples([tuple(v) for v in entry["strata_values"]])
        if not listed.is_unique:
            raise SdcevalError(f"the public file's PRAM of {q!r} lists a stratum twice: "
                               "use the file 'sdceval anonymize' wrote")
        records = pd.MultiIndex.from_frame(dataset.frame[strata].astype(str))
        stratum = listed.get_indexer(records)
        if (stratum < 0).any():
            i = int(np.flatnonzero(stratum < 0)[0])
            raise SdcevalError(f"the public file's PRAM of {q!r} has no matrix for the "
                               f"stratum {tuple(records[i])!r} of record {i} of data set "
                               f"{dataset.name!r}: it was written for other data")
    return mats[stratum, own, np.asarray(published, dtype=np.int64)]


def public_info(dataset, public: dict, cells: dict) -> dict:
    """``Release.info`` of a release read back with its public parameters, as the
    method's own: ``perturbed_keys`` and ``pram`` (each key's public parameters and
    ``changed``, its records whose published category is not their own: known to
    evaluation, which holds the original in record order, never published)."""
    pram = {q: {**entry, "changed": int((cells[q][0] != dataset.codes(q)).sum())}
            for q, entry in public["pram"].items()}
    return {"perturbed_keys": list(public["perturbed_keys"]), "pram": pram}


__all__ = ["DP_FIELDS", "PUBLIC_SUFFIX", "SYNTHETIC", "draw_probability", "public_info",
           "public_parameters", "public_path_for", "public_release", "public_text",
           "read_public", "synthetic_parameters"]
