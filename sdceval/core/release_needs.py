"""What a measure may need of a data set and a release, and the one check of it
(`require`, used by `Release.check` and the registry)."""
from __future__ import annotations

from sdceval.core.errors import SdcevalError

#: what a measure may declare it needs (`Release.check`): release structures and
#: data-set roles
NEEDS = ("classes", "cells", "qis", "sensitive", "numeric", "label", "control")


def require(dataset, needs, who: str, release=None) -> None:
    """Check the ``needs`` (`NEEDS`) of ``who`` — data-set roles and, given a release,
    its structures — with messages naming the fix (the one place these are checked)."""
    s = dataset.schema
    for need in needs:
        if need not in NEEDS:
            raise SdcevalError(f"{who}: unknown requirement {need!r} (known: "
                               f"{', '.join(NEEDS)})")
        if need in ("classes", "cells") and release is None:
            raise TypeError(f"{who}: requirement {need!r} needs a release")
        if need == "classes" and release.classes is None:
            raise SdcevalError(
                f"{who} needs a release with equivalence classes or buckets "
                f"(Release.classes), but the {release.kind} release of {release.method!r} "
                "has none; use a generalization, Mondrian, bucketization or MDAV release")
        if need == "cells" and release.cells is None:
            raise SdcevalError(
                f"{who} needs the generalized cell of every quasi-identifier "
                f"(Release.cells), but the {release.kind} release of {release.method!r} "
                "has none; use a generalization, Mondrian or bucketization release")
        if need == "qis" and not s.qis:
            raise SdcevalError(f"{who} needs quasi-identifiers, but data set "
                               f"{dataset.name!r} has none; give some columns role 'qi' "
                               "(e.g. --qi age,sex)")
        if need == "sensitive" and s.sensitive is None:
            raise SdcevalError(
                f"{who} needs a sensitive attribute, but data set {dataset.name!r} has "
                "none; give one column role 'sensitive' (e.g. --sensitive occupation)")
        if need == "numeric" and not s.numeric:
            raise SdcevalError(
                f"{who} needs numeric attributes, but data set {dataset.name!r} has none "
                "with role 'numeric'; pass --numeric COLS or a schema")
        if need == "control" and getattr(dataset, "control", None) is None:
            raise SdcevalError(
                f"{who} needs a control set: records of {dataset.name!r} held out before "
                "anonymization, which the release never saw; hold them out with "
                "sdceval.core.control.hold_out(dataset) and anonymize the training set it "
                "returns (a comparison reserves one for every candidate alike)")
        if need == "label" and s.label is None:
            raise SdcevalError(
                f"{who} needs a class label, but data set {dataset.name!r} has none; give "
                "one column role 'label' (e.g. --label income)")
