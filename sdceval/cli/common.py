"""What the commands share: the common, data and suppression options, the help
formatter, opening the data set of the data options, and the output helpers (progress
messages on stderr, tables on stdout)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdceval.core import threads
from sdceval.core.errors import SdcevalError

BUNDLED_NAMES = ("census", "eia", "adult", "adult-train", "adult-arx")  # = loaders.BUNDLED


# -- options -----------------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows every option's default (``(default: ...)``) unless it has none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if ("default" in text or not action.option_strings or d is None or d is False
                or d == [] or d is argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


def _add_command(sub, name: str, help_text: str, func) -> argparse.ArgumentParser:
    """The subcommand ``name``, run by ``func(args)``, with the common options (each
    command module's ``add_parser`` starts with it)."""
    s = sub.add_parser(name, help=help_text, description=help_text,
                       formatter_class=_HelpFormatter)
    _add_common_options(s, top=False)
    s.set_defaults(func=func)
    return s


def _add_common_options(p: argparse.ArgumentParser, top: bool) -> None:
    """``--threads``, ``--quiet`` and ``--plugin``, accepted before or after the command
    (the command's copies default to SUPPRESS so that they do not undo the top-level
    one)."""
    keep = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--plugin", action="append", metavar="MODULE",
                   **({"default": []} if top else keep),
                   help="a module of your own that registers methods, measures, privacy "
                        "models, objectives or properties: a module name or a .py file, "
                        "repeatable; worker processes load it too (default: "
                        "$SDCEVAL_PLUGINS if set)")
    p.add_argument("--threads", type=int, metavar="N", **({"default": None} if top else keep),
                   help="CPU threads sdceval may use, shared by worker processes "
                        f"(0 = all cores) (default: ${threads.ENV} if set, else "
                        f"{threads.DEFAULT})")
    p.add_argument("-q", "--quiet", action="store_true", **keep,
                   help="no progress messages or notes on stderr")


def _add_data_options(p: argparse.ArgumentParser, default: str | None = "census",
                      keep: bool = False) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", default=default, required=default is None,
                   help="bundled data set (%s) or a CSV/Parquet file"
                        % ", ".join(BUNDLED_NAMES))
    roles = " (default: the schema's; for a bundled data set its own roles)"
    g.add_argument("--schema", help="TOML file with column roles and hierarchies (see "
                                    "README, 'Your own data') (default: none: roles from "
                                    "the options below, or inferred from the data)")
    g.add_argument("--qi", help="comma-separated quasi-identifier columns" + roles)
    g.add_argument("--sensitive", help="sensitive column" + roles)
    g.add_argument("--numeric", help="comma-separated numeric columns (perturbative "
                                     "methods)" + roles)
    g.add_argument("--label", help="class label column (for the classification metric)"
                                   + roles)
    if keep:
        g.add_argument("--keep", metavar="COLS",
                       help="comma-separated columns to publish unchanged beside what the "
                            "method protects (role passthrough); every other column is "
                            "dropped from the release (default: none)")


def _add_suppression_options(p: argparse.ArgumentParser) -> None:
    """The lattice's suppression rule and limit (``lattice`` and ``pbg``), with the
    defaults of their one declaration (`sdceval.core.suppression`); the rule is checked
    against the rules' registry when the lattice problem is built."""
    from sdceval.core.suppression import DEFAULT_MAX_SUPPRESSION, DEFAULT_RULE
    p.add_argument("--rule", default=DEFAULT_RULE,
                   help="suppression rule (sdceval list rules): dewri (Dewri et al. 2010 "
                        "§6) or arx (suppress every violating class)")
    p.add_argument("--max-suppression", type=float, default=DEFAULT_MAX_SUPPRESSION,
                   help="suppression limit: a fraction of the records if < 1, else a count")


def _add_model_option(p: argparse.ArgumentParser) -> None:
    """``--model``, repeatable: the privacy models a command enforces (`_models`)."""
    p.add_argument("--model", action="append", default=[], metavar="SPEC",
                   help="privacy model to enforce, repeatable: k=5, l=3,variant=distinct, "
                        "t=0.2, delta=1.5, cl:c=3,l=2 (default: none)")


# -- reading options -----------------------------------------------------------------
def _split(text):
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _numbers(text, what: str):
    if text is None:
        return None
    try:
        return [float(t) for t in _split(text)]
    except ValueError:
        raise SdcevalError(f"{what} must be comma-separated numbers, got {text!r}") from None


def _dataset(args):
    """Open the data set of the data options, protect every file it was read from
    against being overwritten, and print its notes (e.g. the roles inferred)."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_dataset
    protect(args.data if Path(args.data).exists() else None, args.schema)
    ds = open_dataset(args.data, schema_file=args.schema, qi=_split(args.qi),
                      sensitive=args.sensitive, numeric=_split(args.numeric),
                      label=args.label, passthrough=_split(getattr(args, "keep", None)))
    protect(*ds.input_files)
    for note in ds.messages:
        _say(args, f"note: {note}")
    return ds


def _models(ds, specs):
    """Privacy models from ``--model`` options: ``k=5`` (a model and its threshold),
    ``l=3,variant=distinct``, or ``NAME:param=value,...`` (e.g. ``cl:c=3,l=2``); the
    syntax of `sdceval.privacy.parse_model_spec`, shared with experiment files."""
    from sdceval.privacy import parse_model_spec
    sens = ds.schema.sensitive
    hierarchy = ds.hierarchy(sens) if sens else None
    out = []
    for spec in specs or []:
        try:
            out.append(parse_model_spec(spec, hierarchy=hierarchy))
        except SdcevalError as exc:
            raise SdcevalError(f"--model {spec!r}: {exc}") from None
    return out


# -- output --------------------------------------------------------------------------
def _say(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def _fmt_table(df) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    return df.to_string(index=False, formatters={c: fmt for c in df.columns
                                                 if df[c].dtype == float})


def _note_worker_cap(args, workers: int) -> None:
    procs, each = threads.per_worker(workers)
    if procs < workers:
        _say(args, f"note: {procs} worker process(es) x {each} thread(s) instead of "
                   f"{workers}: the thread budget is {threads.budget()} (raise --threads / "
                   f"{threads.ENV} to use more cores)")
