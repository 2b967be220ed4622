"""The class counts of a generalized release, computed in parts of a table: the partial
form (`sdceval.core.partial.PartialForm`) shared by the measures that are functions of
the classes' sizes or sensitive counts — every privacy check
(`sdceval.measures.privacy_checks`, generated per privacy model, so a user's model too),
``discernibility`` and ``avg_class_size`` (`sdceval.measures.information_loss`).

A class is a distinct combination of the released QI cells (read back from the labels by
`sdceval.core.release_io.release_from_frame` with the whole table's hierarchies, so
cells agree between parts) and of whether its records are suppressed (the all-``*``
class of suppressed records only, as the in-memory measures count it).  A part gives the
size of each of its classes (with a sensitive attribute: the count of each sensitive
code in each class); a class's size over the table is the sum of its sizes in the parts,
``|E| = Σ_p |E ∩ p|``, and so is each sensitive count ``c_E(s) = Σ_p c_{E∩p}(s)``.
The merged counts are exactly the in-memory measure's class counts (in another row
order, which none of the formulas reads).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdceval.core.errors import SdcevalError
from sdceval.core.partial import PartialForm

#: the level of the merged table holding the sensitive code (when counted)
_CODE = "code"


@dataclass(frozen=True)
class ClassPrep:
    """What every part and the finish need: whether sensitive codes are counted, their
    number ``S`` and the sensitive hierarchy (the models that use it)."""

    sensitive: bool
    n_values: int = 1
    hierarchy: object = None


def _sizes(whole, params) -> ClassPrep:
    return ClassPrep(False)


def _counts(whole, params) -> ClassPrep:
    hierarchy = whole.schema[whole.schema.sensitive].hierarchy
    return ClassPrep(True, hierarchy.n_leaves, hierarchy)


def _partial(prep: ClassPrep, part) -> pd.Series:
    """This part's classes (released QI cells and the suppressed flag, with the
    sensitive code when counted) and their sizes."""
    released, ds = part.release, part.dataset
    if released.kind != "generalized":
        raise SdcevalError(
            f"the class counts read the classes of a generalized release, but release "
            f"{released.method!r} reads as {released.kind} (published numbers beside QIs "
            "with the original values); evaluate linkage_risk or query_error on it")
    cols = {}
    for i, q in enumerate(ds.schema.qis):
        lo, hi = released.cells[q]
        cols[f"lo{i}"], cols[f"hi{i}"] = lo, hi
    cols["suppressed"] = released.suppressed
    if prep.sensitive:
        cols[_CODE] = released.sensitive(ds)
    table = pd.DataFrame(cols)
    return table.groupby(list(table.columns), sort=False).size()


def _merge(*parts: pd.Series) -> pd.Series:
    """Sizes of consecutive parts' classes summed by class."""
    table = pd.concat(parts)
    return table.groupby(level=list(range(table.index.nlevels)), sort=False).sum()


def class_table(prep: ClassPrep, merged: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, suppressed)`` of the merged classes: the classes × sensitive values
    counts matrix (one column of sizes without a sensitive attribute) and whether each
    class is the class of suppressed records."""
    if not prep.sensitive:
        return (merged.to_numpy(np.int64)[:, None],
                merged.index.get_level_values(-1).to_numpy(bool))
    wide = merged.unstack(_CODE, fill_value=0)
    counts = np.zeros((len(wide), prep.n_values), dtype=np.int64)
    counts[:, wide.columns.to_numpy(np.int64)] = wide.to_numpy(np.int64)
    return counts, wide.index.get_level_values(-1).to_numpy(bool)


def _check(sensitive: bool):
    def check(name: str, schema, release_meta, where: str) -> None:
        if not schema.qis:
            raise SdcevalError(f"measure {name!r} counts the classes of quasi-identifiers, "
                               "but the schema gives none; give some columns role 'qi'")
        if sensitive and not schema.sensitive:
            raise SdcevalError(f"measure {name!r} counts the sensitive values of each "
                               "class, but the schema gives no sensitive attribute; give "
                               "a column role 'sensitive'")
        cols = list(release_meta.columns)
        if not any(q in cols for q in schema.qis):
            raise SdcevalError(
                f"measure {name!r} counts the classes of a generalized release (its QI "
                f"columns of labels such as [40-49] or *), but release {where} publishes no "
                "quasi-identifier column (a perturbative release?): evaluate linkage_risk or "
                "query_error on it, or give a generalized release")
        lacking = [q for q in schema.qis if q not in cols]
        if lacking:
            raise SdcevalError(f"release {where} lacks quasi-identifier column(s) "
                               f"{', '.join(map(repr, lacking))}; a generalized release "
                               "publishes every QI")
    return check


def class_form(finish, sensitive: bool = False) -> PartialForm:
    """The partial form of a measure of the classes: sizes (``sensitive=False``) or
    sensitive counts per class, merged by class, then ``finish(prep, merged, params)``
    (`class_table` reads the merged counts).  Measures with the same ``sensitive``
    share one class table per part."""
    return PartialForm(partial=_partial, merge=_merge, finish=finish,
                       prepare=_counts if sensitive else _sizes, hierarchies=("qi", "sensitive"), check=_check(sensitive))
