"""Seeds: one way to turn a user's ``seed`` into a generator (as sklearn's
check_random_state), and the seed tree of a comparison.

The seed tree (SPEC §5; docs/across_families.md, "Noise").  One seed, the root ``s``
(``--seed``, an experiment's ``seed``), drives every random component of a comparison:

* repeat ``r`` (``0 .. repeats−1``) has the seed ``s + r`` (`repeat_seed`);
* at repeat ``r``, the method's release is drawn with ``s + r`` (`method_seed`);
* at repeat ``r``, every seed parameter of a measure (a parameter the measure's registry
  entry declares under the name ``seed``, `is_seed`: the query workload, the ML
  train/test split, the sample of records linked by ``reidentification`` or
  ``linkage_risk``, the k-means of ``emd``) takes ``o + s + r``, where ``o`` is the value
  the user gave that parameter (``emd:seed=3``) or its declared default (0)
  (`measure_params`).

* the control set the attacks need (issue 32) is held out once, with ``s``
  (`control_seed`), before any method runs: the same records for every candidate and
  every repeat.

Every candidate of a comparison gets the same seeds at a repeat (common random numbers:
the same query workload, split and linkage sample for every release), the repeats get
different ones, and the same root reproduces every number exactly.

Why an additive tree rather than, e.g., ``numpy.random.SeedSequence(s).spawn``: root 0
gives exactly the seeds the published reproduction was computed with (every method and
every measure at seed 0 on the first repeat; docs/reproduction.md keeps its numbers), and
the repeats of root 0 are the seed study's seeds 0, 1, 2, ...  What it costs: runs with
roots ``s`` and ``s + 1`` share all but one of their repeats' seeds, so independent runs
of ``R`` repeats take roots at least ``R`` apart; and the components of one repeat start
their generators from the same integer (they draw different things with different
algorithms: a release's noise, a workload of queries, a data split).
"""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError

#: the name under which a method receives, and a measure declares, its seed
SEED = "seed"


def check_random_state(seed) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` from ``None``, an int or a Generator.

    The same int always gives the same stream, so every random method is exactly
    reproducible from its ``seed``.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise SdcevalError(f"seed must be an integer, None or a numpy Generator, got {seed!r}")
    if seed < 0:
        raise SdcevalError(f"seed must be a non-negative integer, got {seed}")
    return np.random.default_rng(int(seed))


def control_seed(root: int) -> int:
    """The seed of a comparison's control set (`sdceval.core.control.hold_out`): the
    root's own, drawn once for every candidate and every repeat alike."""
    return int(root)


def repeat_seed(root: int, repeat: int) -> int:
    """The seed of repeat ``repeat`` of the tree rooted at ``root``: ``root + repeat``."""
    return int(root) + int(repeat)


def method_seed(root: int, repeat: int) -> int:
    """The seed a method's release is drawn with at ``repeat`` (module notes)."""
    return repeat_seed(root, repeat)


def is_seed(param) -> bool:
    """Whether a declared parameter (`sdceval.core.params.Param`) is a seed."""
    return param.name == SEED


def measure_params(spec, params: dict | None, root: int, repeat: int) -> dict:
    """``params`` of the measure ``spec`` (its registry entry: ``spec.params`` and
    ``spec.resolve``) at ``repeat`` of the tree rooted at ``root``: each seed parameter
    (`is_seed`) set to its given or default value plus ``repeat_seed(root, repeat)``.
    ``params`` itself when that changes nothing (root 0, repeat 0) or the measure has no
    seed."""
    params = dict(params or {})
    names = [p.name for p in spec.params if is_seed(p)]
    if not names or repeat_seed(root, repeat) == 0:
        return params
    resolved = spec.resolve(params)
    return {**params, **{n: int(resolved[n] or 0) + repeat_seed(root, repeat)
                         for n in names}}
