"""Guideline profiles and verdicts (issue 30 item 2): "does this release meet EMA Policy
0070?" as a value a regulator can read.

* `sdceval.guidelines.profiles`: the profiles, TOML files shipped in this package and
  registered in `GUIDELINES` (``ema-0070``, ``hc-prci``, ``el-emam-public``,
  ``el-emam-5``, ``sdcmicro-global``, ``hipaa-safe-harbor``, ``custom``), or a user's
  file;
* `sdceval.guidelines.rounding`: how a threshold such as 0.09 is read against a risk
  ``1/k`` (ARX: class size 12; El Emam: 11);
* `sdceval.guidelines.verdict`: `evaluate_guideline` -> `Verdict`;
* `sdceval.guidelines.hipaa`: Safe Harbor's rule checks on the published columns.

The layer sits above the measures' registry (`sdceval.catalog`), below the comparison,
which turns a guideline into one of its risk constraints (`sdceval.compare.constraints`).
See docs/guidelines.md.
"""
from sdceval.guidelines.profiles import (
           GUIDELINES,
           Profile,
           get_profile,
           list_profiles,
           load_profile,
)
from sdceval.guidelines.rounding import ROUNDINGS, exceeds, get_rounding
from sdceval.guidelines.verdict import (
           Verdict,
           effective_bound,
           evaluate_guideline,
           metric_of,
)

__all__ = ["GUIDELINES", "ROUNDINGS", "Profile", "Verdict", "effective_bound",
           "evaluate_guideline", "exceeds", "get_profile", "get_rounding", "list_profiles",
           "load_profile", "metric_of"]
