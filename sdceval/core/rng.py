"""One way to turn a user's ``seed`` into a generator (as sklearn's check_random_state)."""
from __future__ import annotations

import numpy as np

from sdceval.core.errors import SdcevalError


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
