"""The `Verdict` value object of a guideline check (`sdceval.guidelines.verdict`,
`sdceval.guidelines.hipaa`) and the count of the classes holding violating records."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class Verdict:
    """The answer to "does this release meet the guideline?" (module notes)."""

    guideline: str
    title: str
    kind: str
    metric: str
    attacker: str
    value: float | None
    threshold: float | None
    rounding: str
    effective_threshold: float | None
    min_class_size: int | None
    comparison: str
    passed: bool
    margin: float | None
    relative_margin: float | None
    violating_records: int | None
    violating_classes: int | None
    records: int
    assumptions: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    #: rule checks (``rules`` profiles): name, status (passed / failed / not checked),
    #: detail, records, classes
    checks: list = field(default_factory=list)
    not_checked: list = field(default_factory=list)

    @property
    def status(self) -> str:
        """PASS, FAIL, or NOT CHECKED (a rule profile none of whose checked rules
        failed, but some could not be checked: not a pass)."""
        if self.passed:
            return "PASS"
        if self.kind == "rules" and not any(c["status"] == "failed" for c in self.checks):
            return "NOT CHECKED"
        return "FAIL"

    def to_dict(self) -> dict:
        """Plain JSON values (the audit certificate stores them)."""
        d = asdict(self)
        d["status"] = self.status
        return _plain(d)

    def text(self) -> str:
        """The lines ``sdceval check`` prints."""
        lines = [f"{self.status}: {self.title} ({self.guideline})"]
        if self.kind == "rules":
            for c in self.checks:
                counts = ("" if c.get("records") is None else
                          f" ({c['records']} records, {c['classes']} published values)")
                lines.append(f"  {c['name']}: {c['status']}{counts}: {c['detail']}")
            rules = tuple(f"{c['name']}:" for c in self.checks)
            lines += [f"  not checked: {item}" for item in self.not_checked
                      if not item.startswith(rules)]   # those are in the lines above
        else:
            sign = "at most" if self.comparison == "at_most" else "at least"
            read = (f"threshold {self.threshold:g} read {self.rounding}"
                    + (f" (minimum class size {self.min_class_size})"
                       if self.min_class_size else "")
                    + f": the value must be {sign} {self.effective_threshold:.6g}")
            lines += [f"  metric: {self.metric} (attacker: {self.attacker})",
                      f"  value: {self.value:.6g}; {read}",
                      f"  margin: {self.margin:+.6g} ({self.relative_margin:+.1%} of the "
                      "bound; negative: not met)" if self.relative_margin is not None
                      else f"  margin: {self.margin:+.6g}"]
            if self.violating_records is not None:
                classes = ("" if self.violating_classes is None
                           else f", in {self.violating_classes} classes")
                lines.append(f"  violating: {self.violating_records} of {self.records} "
                             f"records{classes}")
        lines.append("  assumptions: " + "; ".join(
            f"{k} = {v}" for k, v in self.assumptions.items()))
        lines.append(f"  source: {self.source.get('citation', '')} <{self.source.get('url', '')}>")
        return "\n".join(lines)


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def classes_of(release, bad: np.ndarray) -> int | None:
    """The number of the release's classes (equivalence classes, or published key
    combinations of a release with cells) that hold a record of ``bad``."""
    if not bad.any():
        return 0
    if release.classes is not None:
        inv, _ = release.class_index()
        return len(np.unique(inv[bad]))
    if release.cells:
        keys = np.stack([np.stack(release.cells[q], axis=1)[bad].reshape(-1, 2)
                         for q in release.cells], axis=1).reshape(int(bad.sum()), -1)
        return len(np.unique(keys, axis=0))
    return None


__all__ = ["Verdict", "classes_of"]
