"""What a release did to each column of its data set (issue 28 item 1, SPEC §5).

`column_treatment` states, for every column of the data set's schema, one entry of
`TREATMENTS`, derived from the release itself — its kind, its structures (``cells``,
``suppressed``, ``sensitive_codes``) and the columns its data holds — compared with the
original where the structures do not say it:

* ``"dropped"``: the release does not publish the column.  Identifier and ignored
  columns are never published by any method; they are listed as
  ``"dropped (identifier)"`` / ``"dropped (ignored)"`` so a table of treatments covers
  the whole schema and says why.
* ``"generalized"``: a column with ``cells`` some of which are wider than one leaf
  (QI labels such as ``[40-49]``; a ``numeric``-role attribute a composite release
  generalized into intervals); ``"generalized, N suppressed cells"`` when the release
  suppressed N records (each suppressed record's cell of that column is ``*``).
* ``"as is"``: published unchanged — a column whose cells are all exact
  (bucketization; the QIs a whole-file strategy publishes as they are), a sensitive
  attribute whose released codes equal the original's, a passthrough or label column, a
  numeric column whose values equal the original's.
* ``"permuted within buckets"``: the sensitive attribute of a release whose values are
  permuted within its buckets (`Release.sensitive_in_buckets`: bucketization, alone or
  as a strategy's step) and differ from the original's.
* ``"synthesized"``: every published column of a synthetic release (new records drawn
  from a model of the file: synthetic data, a DP sampler; issue 32).
* ``"masked"``: any other published column whose values differ from the original's
  (perturbative numeric attributes; a changed column of an external table; keys PRAM
  published as exact cells of other categories).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.release_checks import unchanged

#: the vocabulary of `column_treatment` (module docstring); "generalized" may carry
#: ", N suppressed cells"
TREATMENTS = ("masked", "generalized", "as is", "permuted within buckets", "synthesized",
              "dropped", "dropped (identifier)", "dropped (ignored)")
#: roles no method publishes, and the reason shown for them
_UNUSED = {"identifier": "dropped (identifier)", "ignore": "dropped (ignored)"}


def column_treatment(dataset, release) -> dict[str, str]:
    """Column of ``dataset``'s schema -> what ``release`` did to it (one of
    `TREATMENTS`, in schema order; the rules are the module docstring's)."""
    out = {}
    for col in dataset.schema.columns:
        name = col.name
        if col.role in _UNUSED:
            out[name] = _UNUSED[col.role]
        elif name not in release.data.columns:
            out[name] = "dropped"
        elif not release.aligned:   # new records: no row is any record's version
            out[name] = "synthesized"
        elif release.cells is not None and name in release.cells:
            out[name] = _cells_treatment(dataset, release, name)
        elif name == dataset.schema.sensitive and release.sensitive_codes is not None:
            same = np.array_equal(release.sensitive_codes, dataset.codes(name))
            out[name] = "as is" if same else (
                "permuted within buckets" if release.sensitive_in_buckets else "masked")
        else:
            out[name] = "as is" if unchanged(dataset.frame[name],
                                             release.data[name]).all() else "masked"
    return out


def differing_columns(treatments: dict[str, dict[str, str]]) -> list[str]:
    """Columns published by some of the releases in ``treatments`` (method -> column ->
    treatment) and dropped by others: where their utilities compare different columns."""
    columns = dict.fromkeys(c for t in treatments.values() for c in t)
    return [c for c in columns
            if len({t.get(c, "dropped").startswith("dropped")
                    for t in treatments.values()}) > 1]


def treatment_summary(treatment: dict[str, str]) -> str:
    """One line for a release's `column_treatment`, columns grouped by what was done to
    them in the order first met: ``"income masked; zip, age dropped; id dropped
    (identifier)"``."""
    groups: dict[str, list[str]] = {}
    for column, what in treatment.items():
        groups.setdefault(what, []).append(column)
    return "; ".join(f"{', '.join(cols)} {what}" for what, cols in groups.items())


def _cells_treatment(dataset, release, name: str) -> str:
    lo, hi = release.cells[name]
    suppressed = int(release.suppressed.sum()) if release.suppressed is not None else 0
    if suppressed == 0 and np.array_equal(lo, hi):
        # exact cells everywhere: the values themselves are published (bucketization),
        # or, where some differ from the records', other values drawn (PRAM: masked)
        return "as is" if np.array_equal(lo, dataset.codes(name)) else "masked"
    return f"generalized, {suppressed} suppressed cells" if suppressed else "generalized"
