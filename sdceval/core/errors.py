"""Errors raised on bad user input.

Every check happens at the boundary (dataset/schema construction, parameter parsing),
so the message can name the column or parameter and the fix. Code past the boundary
trusts its inputs.
"""
from __future__ import annotations

import difflib
from typing import Iterable


class SdcevalError(ValueError):
    """Bad input: the message names the offending column/parameter and the fix."""


def suggest(name: str, options: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest option, or ``""``."""
    close = difflib.get_close_matches(str(name), list(options), n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


def unknown(what: str, name: str, options: Iterable[str]) -> SdcevalError:
    """Error for an unknown method/measure/data set/... name, listing the valid ones."""
    options = sorted(options)
    return SdcevalError(
        f"unknown {what} {name!r}.{suggest(name, options)} "
        f"Known {what}s: {', '.join(options)}."
    )


def plain(v):
    """A numpy scalar or array as the Python value(s) it holds (``np.str_('A')`` ->
    ``'A'``, an array -> a list), for messages and JSON; anything else unchanged."""
    return v.tolist() if type(v).__module__ == "numpy" and hasattr(v, "tolist") else v
