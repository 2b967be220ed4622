"""``sdceval hierarchy show|export``: a column's generalization hierarchy, read from a
file or built from the data (`sdceval.core.hierarchy_builders`), and where it came from.

The data: ``sdceval hierarchy show DATASET COLUMN`` (a bundled data set or a file), or
the data options of the other commands, ``--data FILE --schema S.toml --qi ...``."""
from __future__ import annotations

import re
from pathlib import Path

from sdceval.cli.common import _add_command, _add_data_options, _dataset, _say
from sdceval.core.errors import SdcevalError


def add_parser(sub):
    s = _add_command(sub, "hierarchy", "show or export a generalization hierarchy (read "
                     "from the schema's file, or built from the data)", cmd_hierarchy)
    s.add_argument("action", choices=["show", "export"], help="print it, or write it as CSV")
    s.add_argument("dataset", nargs="?", metavar="DATASET",
                   help="bundled data set or data file (or --data)")
    s.add_argument("column", metavar="COLUMN", help="column whose hierarchy to show")
    s.add_argument("--out", help="CSV file for export (ARX layout) (default: none; "
                                 "required by export)")
    _add_data_options(s)
    s.set_defaults(data=None)  # the data come from DATASET or --data, never by default
    for action in s._actions:
        if action.dest == "data":
            action.help += " (default: the DATASET argument)"
    return s


def _origin(ds, column: str, h) -> str:
    """Where the hierarchy came from, for the header line."""
    if h.builder is not None:
        from sdceval.core.hierarchy_builders import DESCRIPTIONS
        what = DESCRIPTIONS.get(h.builder, "")
        role = ds.schema[column].role
        why = (f" (the {'sensitive attribute' if role == 'sensitive' else 'label'} is "
               "never generalized)" if role in ("sensitive", "label") else "")
        return f"built from the data by the {h.builder} builder: {what}{why}"
    if h.source is not None:
        return f"read from {h.source}"
    return "given with the data set"


def _schema_entry(column: str, file: str, numeric: bool) -> str:
    key = column if re.fullmatch(r"[A-Za-z0-9_-]+", column) else f'"{column}"'
    return (f'{key} = {{ file = "{file}", numeric = {"true" if numeric else "false"} }}')


def cmd_hierarchy(args) -> int:
    if args.dataset is not None:
        if args.data is not None and args.data != args.dataset:
            raise SdcevalError(f"hierarchy: the data are given twice ({args.dataset!r} and "
                               f"--data {args.data!r}); give one")
        args.data = args.dataset
    if args.data is None:
        raise SdcevalError("hierarchy: which data? sdceval hierarchy show DATASET COLUMN, "
                           "or --data FILE (with --schema or --qi) and the column")
    ds = _dataset(args)
    if args.column not in ds.frame.columns:
        from sdceval.core.errors import suggest
        raise SdcevalError(f"data set {ds.name!r} has no column {args.column!r}."
                           f"{suggest(args.column, ds.frame.columns)}")
    h = ds.hierarchy(args.column)
    if args.action == "export":
        if not args.out:
            raise SdcevalError("hierarchy export needs --out FILE")
        from sdceval.core.fileio import atomic_write
        atomic_write(args.out, lambda p: h.to_csv(p))
        _say(args, f"wrote {args.out} ({_origin(ds, args.column, h)})")
        _say(args, f"note: edit it if you like, then name it in the schema file (--schema) "
                   f"to use it: under [hierarchies] (the path relative to the schema file), "
                   f"{_schema_entry(args.column, Path(args.out).as_posix(), h.numeric)}")
        return 0
    print(f"{args.column}: {h.n_leaves} leaves, {h.height} levels above the leaf"
          + (" (numeric intervals)" if h.numeric else "") + f"; {_origin(ds, args.column, h)}")
    print(h.to_frame().to_string(index=False))
    if h.builder is not None:
        _say(args, f"note: to change it, write it with sdceval hierarchy export ... "
                   f"--out {args.column}.csv, edit the file, and name it in the schema file "
                   f"under [hierarchies]: "
                   f"{_schema_entry(args.column, args.column + '.csv', h.numeric)}")
    return 0
