"""``sdceval results OUT``: every measurement of a campaign's results store as one tidy
table (`sdceval.experiments.store.read_measurements`): one row per measurement, the
job's parameters as columns, the measure's name and parameters apart (docs/store.md),
to stdout or a file."""
from __future__ import annotations

import sys

from sdceval.cli.common import _add_command, _say
from sdceval.core.errors import SdcevalError

FORMATS = ("csv", "json", "parquet")


def add_parser(sub):
    s = _add_command(sub, "results", "every measurement of an experiment's output folder "
                     "as one tidy table (its results store)", cmd_results)
    s.add_argument("folder", help="the output folder of an `sdceval run` (it holds "
                                  "results.sqlite)")
    s.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                   help="keep the rows whose COLUMN equals VALUE (compared as text; "
                        "measure is the measure's name, its parameters are in "
                        "measure_params); repeat to combine, e.g. --where measure=u_loss "
                        "--where threshold=10; a column or value no row has is an error "
                        "naming what there is (default: every row)")
    s.add_argument("--format", choices=FORMATS, default="csv",
                   help="csv or json to stdout (or --out), parquet to --out (needs the "
                        "[parquet] extra)")
    s.add_argument("--out", help="write the table to this file (default: stdout)")
    return s


def _where(items) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SdcevalError(f"--where {item!r} must look like COLUMN=VALUE, e.g. "
                               "--where measure=emd")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def cmd_results(args) -> int:
    from sdceval.core.fileio import atomic_write, write_csv, write_json
    from sdceval.experiments.store import read_measurements
    df = read_measurements(args.folder, _where(args.where))
    if args.format == "parquet" and not args.out:
        raise SdcevalError("--format parquet writes a file: give --out FILE.parquet")
    if args.out:
        if args.format == "parquet":
            _parquet(df, args.out, atomic_write)
        elif args.format == "json":
            write_json(_records(df), args.out)
        else:
            write_csv(df, args.out)
        _say(args, f"wrote {len(df)} measurements to {args.out}")
        return 0
    if args.format == "json":
        import json
        sys.stdout.write(json.dumps(_records(df), indent=1, default=str) + "\n")
    else:
        sys.stdout.write(df.to_csv(index=False))
    return 0


def _parquet(df, path, atomic_write) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SdcevalError("--format parquet needs pyarrow: pip install "
                           "'sdceval[parquet]'") from None
    # parameter columns mix types across jobs (k = 5, gamma = 0.07): text in Parquet
    table = df.copy()
    for c in table.columns:
        if table[c].dtype == object:
            table[c] = table[c].map(lambda v: None if v is None else str(v))
    atomic_write(path, lambda p: table.to_parquet(p, index=False))


def _records(df) -> list[dict]:
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")
