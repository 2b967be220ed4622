"""Console tables that fit (issue 20 item 3): display names as headers (wrapped over
lines), numbers to 4 significant digits, and at most `WIDTH` characters a line.

A table wider than that drops its detail columns, last first, until it fits (the first
``keep`` columns always stay); the dropped ones are named under the table, and stay in
the CSV/JSON files.  ``wide=True`` (``--wide``) shows every column.  `legend` gives the
short glosses of the columns shown, so that no header is jargon without an explanation.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import textwrap

import numpy as np
import pandas as pd

from sdceval.core.glossary import display_name, term

#: the widest line a default console table prints
WIDTH = 100
_GAP = 2
#: every column, for the tables printed inside `wide_tables` (``--wide``)
_WIDE = contextvars.ContextVar("sdceval_wide_tables", default=False)


@contextlib.contextmanager
def wide_tables(on: bool = True):
    """Within the block, `console_table` shows every column (``--wide``)."""
    token = _WIDE.set(bool(on))
    try:
        yield
    finally:
        _WIDE.reset(token)


def cell(v) -> str:
    """A console cell: 4 significant digits, whole numbers as integers, - for missing."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.4g}"
    return str(v)


def _label(name: str, labels: dict | None) -> str:
    return (labels or {}).get(name) or display_name(name)


def _header(name: str, width: int, labels: dict | None) -> list[str]:
    text = _label(name, labels)
    longest = max((len(w) for w in text.split()), default=0)
    return textwrap.wrap(text, max(width, longest, 8), break_long_words=False) or [""]


def fit_table(df: pd.DataFrame, width: int = WIDTH, keep: int = 1, wide: bool = False,
              labels: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """``(text, dropped)``: ``df`` as text within ``width`` characters (module
    docstring); ``dropped`` are the columns left out."""
    cols = list(df.columns)
    cells = {c: [cell(v) for v in df[c]] for c in cols}
    numeric = {c: pd.api.types.is_numeric_dtype(df[c]) or all(
        isinstance(v, (int, float, np.number)) for v in df[c].dropna()) for c in cols}

    def col_width(c):
        data = max((len(s) for s in cells[c]), default=0)
        # a header wraps to the data's width, but not below 10 characters a line
        head = _header(c, max(data, 10), labels)
        return max([data] + [len(h) for h in head])

    widths = {c: col_width(c) for c in cols}
    shown = list(cols)
    dropped: list[str] = []
    if not wide:
        while (sum(widths[c] for c in shown) + _GAP * (len(shown) - 1) > width
               and len(shown) > keep):
            dropped.insert(0, shown.pop())
    heads = {c: _header(c, widths[c], labels) for c in shown}
    depth = max((len(h) for h in heads.values()), default=1)
    lines = []
    for i in range(depth):
        parts = []
        for c in shown:
            h = heads[c]
            # headers sit on the bottom lines, next to the data
            text = h[i - (depth - len(h))] if i >= depth - len(h) else ""
            parts.append(text.rjust(widths[c]) if numeric[c] else text.ljust(widths[c]))
        lines.append((" " * _GAP).join(parts).rstrip())
    for r in range(len(df)):
        parts = [cells[c][r].rjust(widths[c]) if numeric[c] else cells[c][r].ljust(widths[c])
                 for c in shown]
        lines.append((" " * _GAP).join(parts).rstrip())
    return "\n".join(lines), dropped


def legend(columns, labels: dict[str, str] | None = None, width: int = WIDTH) -> list[str]:
    """One short item per column whose value has a direction, ``label: words``, or
    whose name is jargon, ``label: short gloss`` (ranks and intervals are read like the
    column they belong to, so they get none)."""
    out, seen = [], set()
    for c in columns:
        t = term(c)
        if t is None or str(c).startswith("rank_") or not (t.words or t.short):
            continue
        if t.short:  # jargon (P_cov, CE): explained once for its two columns
            base = t.label.split(",")[0]
            if base in seen:
                continue
            seen.add(base)
            text = f"{base}: {t.short}" + (f" ({t.words})" if t.words else "")
        else:
            text = f"{_label(c, labels)}: {t.words}"
        out.append(textwrap.shorten(text, width - 2, placeholder=" ..."))
    return out


def fill(text: str) -> str:
    """A sentence wrapped to `WIDTH` columns, its continuation lines indented."""
    return textwrap.fill(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def console_table(df: pd.DataFrame, *, keep: int = 1, wide: bool = False,
                  labels: dict[str, str] | None = None, where: str = "",
                  glosses: bool = True) -> str:
    """`fit_table`, then a line naming the dropped columns (and ``where`` they are),
    then the `legend` of the columns shown."""
    text, dropped = fit_table(df, keep=keep, wide=wide or _WIDE.get(), labels=labels)
    lines = [text]
    if dropped:
        names = ", ".join(display_name(c) for c in dropped)
        lines.append(textwrap.fill(
            f"({len(dropped)} more column{'s' if len(dropped) > 1 else ''}"
            + (f" in {where}" if where else "") + f", --wide shows them: {names})",
            WIDTH, break_on_hyphens=False))
    if glosses:
        shown = [c for c in df.columns if c not in dropped]
        got = legend(shown, labels)
        if got:
            lines.append("  " + textwrap.fill("; ".join(got), WIDTH - 2,
                                              subsequent_indent="  ",
                                              break_on_hyphens=False))
    return "\n".join(lines)


__all__ = ["WIDTH", "cell", "console_table", "fill", "fit_table", "legend", "wide_tables"]
