"""What the commands share: the common, data and suppression options, the help
formatter, opening the data set of the data options, and the output helpers (progress
messages on stderr, tables on stdout)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdceval.core import threads
from sdceval.core.errors import SdcevalError

BUNDLED_NAMES = ("census", "eia", "adult", "adult-train", "adult-arx", "survey")  # = loaders.BUNDLED
#: `sdceval.catalog.PLUGINS_ENV` (not imported from there: the catalog loads every
#: method and measure, and pandas with them)
PLUGINS_ENV = "SDCEVAL_PLUGINS"


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
    g.add_argument("--sep", metavar="CHAR",
                   help="the separator of a CSV --data file: one character, or tab "
                        "(default: found from the file's first lines: , ; tab or |)")
    g.add_argument("--schema", help="TOML file with column roles and hierarchies (see "
                                    "README, 'Your own data') (default: none: roles from "
                                    "the options below, or inferred from the data)")
    g.add_argument("--qi", help="comma-separated quasi-identifier columns" + roles)
    g.add_argument("--sensitive", help="sensitive column" + roles)
    g.add_argument("--numeric", help="comma-separated numeric columns (perturbative "
                                     "methods)" + roles)
    g.add_argument("--label", help="class label column (for the classification metric)"
                                   + roles)
    g.add_argument("--weight", metavar="COL",
                   help="a survey's design-weight column (> 0: the population units a "
                        "record stands for), read by the population risks; never "
                        "inferred, published only with --keep COL" + roles)
    g.add_argument("--household", metavar="COL",
                   help="household (cluster) id column: used by the household risk and "
                        "household-aware methods, never published unless kept" + roles)
    g.add_argument("--household-keys", metavar="COLS",
                   help="comma-separated quasi-identifiers that are household-level "
                        "(equal for every member; checked)" + roles)
    if keep:
        g.add_argument("--keep", metavar="COLS",
                       help="comma-separated columns to publish unchanged beside what the "
                            "method protects (role passthrough); every other column is "
                            "dropped from the release; a column that identifies the "
                            "records (role identifier, named like one or unique per "
                            "record) is refused: see --keep-identifier (default: none)")
        g.add_argument("--keep-identifier", metavar="COLS",
                       help="comma-separated columns to publish unchanged although they "
                            "identify the records (what --keep refuses): forces it "
                            "(default: none)")
    g.add_argument("--missing", choices=MISSING_CHOICES,
                   help="records with a missing value in a column the data set uses (any "
                        "role but identifier and ignore): refuse them, naming the columns "
                        "and counts; drop them, saying how many; or keep them when the "
                        "missing values are in categorical quasi-identifiers (a survey's "
                        "item non-response: a category of its own, published empty, "
                        "matching every category in the population risks as sdcMicro's "
                        "NA; any other missing value is still refused) (default: the "
                        "schema's missing, else refuse)")
    g.add_argument("--print-schema", action=_PrintSchema,
                   help="print the schema the data are read with (roles given and "
                        "inferred, kinds, hierarchies, missing policy) as a TOML file "
                        "for --schema, and exit without running the command")
    command = p.get_default("func")
    if command is not None and not hasattr(command, "command"):
        p.set_defaults(func=_print_schema_or(command))


#: the values of ``--missing`` (`sdceval.core.schema.MISSING_POLICIES`, not imported:
#: the schema module loads pandas, and ``sdceval --help`` must not)
MISSING_CHOICES = ("refuse", "drop", "keep")


class _PrintSchema(argparse.Action):
    """``--print-schema``: a flag after which the command's own required arguments
    (``--method``, ``--out``, ...) are not needed, since the command does not run."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.update(nargs=0, default=False)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)
        for action in parser._actions:  # checked once every argument has been read
            if action.required and action.dest != "data":
                action.required = False


def _print_schema_or(command):
    """The function of a command that reads data: with ``--print-schema``, print the
    schema and return 0 without running the command; else run ``run.command`` (read at
    call time: `sdceval.cli.build_parser` sets it to the function of that name in
    `sdceval.cli`, which the tests may replace; this module never imports its own
    package)."""
    def run(args):
        if getattr(args, "print_schema", False):
            return _print_schema(args)
        return run.command(args)
    run.__name__ = run.__qualname__ = f"{command.__name__}_or_print_schema"
    run.command = command
    return run


def _print_schema(args) -> int:
    """``--print-schema``: the schema the data options read the data with, on stdout
    (its notes are in it, as comments: they are not repeated on stderr)."""
    from sdceval.core.schema_toml import schema_toml
    if getattr(args, "data", None) is None and getattr(args, "dataset", None):
        args.data = args.dataset  # sdceval hierarchy show DATASET COLUMN
    if getattr(args, "data", None) is None:
        raise SdcevalError("--print-schema: which data? give --data FILE (or a bundled "
                           "data set)")
    # the schema's own policy is printed, but records with missing values do not keep
    # the schema from being printed: it is where the policy is chosen
    policy = args.missing
    if policy is None and args.schema:
        from sdceval.core.loaders import read_schema_file
        policy = read_schema_file(args.schema).get("missing")
    args.missing = "drop"
    ds = _dataset(args, notes=False)
    sys.stdout.write(schema_toml(ds, args.data, missing=policy or "refuse"))
    return 0


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


def _dataset(args, notes: bool = True, unused_roles=(), user: str = ""):
    """Open the data set of the data options, protect every file it was read from
    against being overwritten, and print its notes (e.g. the roles inferred), each
    once.  ``unused_roles``: roles the command's method does not use (their columns'
    missing values are not counted, `sdceval.core.loaders.open_dataset`)."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_dataset
    _check_out(args)
    protect(args.data if Path(args.data).exists() else None, args.schema)
    ds = open_dataset(args.data, **_read_options(args, unused_roles, user))
    protect(*ds.input_files)
    if notes:
        for note in dict.fromkeys(ds.messages):
            _say(args, f"note: {note}")
    return ds


def _read_options(args, unused_roles=(), user: str = "") -> dict:
    """The keyword arguments of `sdceval.core.loaders.open_dataset` the data options
    give (besides the data itself): what a certificate records to re-read the data
    (`sdceval.experiments.certificate`)."""
    return {"schema_file": args.schema, "qi": _split(args.qi),
            "sensitive": args.sensitive, "numeric": _split(args.numeric),
            "label": args.label, "passthrough": _split(getattr(args, "keep", None)),
            "keep_identifiers": _split(getattr(args, "keep_identifier", None)),
            "missing": getattr(args, "missing", None), "unused_roles": tuple(unused_roles),
            "user": user, "sep": getattr(args, "sep", None),
            "weight": getattr(args, "weight", None),
            "household": getattr(args, "household", None),
            "household_keys": _split(getattr(args, "household_keys", None))}


def _add_release_options(s: argparse.ArgumentParser, required: bool = True,
                         absent: str = "") -> None:
    """``--release`` and its private key (``--key`` / ``--no-key``): the options of
    the commands that read a release written by ``anonymize`` (`_release`);
    ``required=False``: ``absent`` says what the command reads without one."""
    s.add_argument("--release", required=required,
                   help="release CSV written by anonymize"
                        + (f" (default: {absent})" if not required else ""))
    key = s.add_mutually_exclusive_group()
    key.add_argument("--key", metavar="FILE",
                     help="the release's private key file, which record each published "
                          "row protects (default: RELEASE.private-key.csv beside the "
                          "release, e.g. masked.csv.private-key.csv, if it exists; none "
                          "for a release in record order)")
    key.add_argument("--no-key", action="store_true",
                     help="the release is in record order (anonymize --keep-order, or "
                          "another tool's): read it as it is, without a key and without "
                          "checking its order (refused if a key lies beside it)")


def _release(args, ds):
    """The release of `_add_release_options`, in record order (its key checked and
    applied, `sdceval.core.release_io.read_release`), its files protected against
    being overwritten."""
    from sdceval.core.fileio import protect
    from sdceval.core.release_io import read_release
    from sdceval.core.release_order import key_beside
    from sdceval.core.release_public import public_path_for
    beside = key_beside(args.release)
    protect(args.release, args.key, beside, public_path_for(args.release))
    if args.key or (not args.no_key and beside is not None):
        _say(args, f"reading {args.release} in record order with its key "
                   f"{args.key or beside}")
    return read_release(ds, args.release, key=False if args.no_key else args.key)


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
def _check_out(args) -> None:
    """``--out`` where nothing can be written (under a regular file, in ``/proc``, a
    read-only folder) is an error before any work, naming the path and the fix
    (`sdceval.core.fileio.check_output`; whether a file or a folder is expected is
    checked when it is written, by `sdceval.core.fileio.atomic_write`)."""
    out = getattr(args, "out", None)
    if out and not getattr(args, "print_schema", False):
        from sdceval.core.fileio import check_output
        check_output(out, folder=None)


def _say(args, msg: str) -> None:
    """A progress message or note on stderr; dropped (with every later one) when stderr
    is a closed pipe, so that it never stops a result file (issue 22 item 8)."""
    if not getattr(args, "quiet", False):
        try:
            print(msg, file=sys.stderr, flush=True)
        except BrokenPipeError:
            from sdceval.core.processes import silence_stderr
            silence_stderr()


def _add_wide_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wide", action="store_true",
                   help="print every column of the tables (default: what fits in 100 "
                        "columns; the others are in the result files)")


def _table(args, df, keep: int = 1, labels=None, where: str = "") -> str:
    """A console table within 100 columns unless ``--wide`` (`sdceval.core.text_table`),
    with the direction of its numbers under it."""
    from sdceval.core.text_table import console_table
    return console_table(df, keep=keep, wide=getattr(args, "wide", False), labels=labels,
                         where=where)


def _answer(text: str) -> str:
    """The one line that states the answer, wrapped to 100 columns."""
    from sdceval.core.text_table import fill
    return fill(text)


def _write_report(args, path, title: str, sections, dataset=None, extra=None,
                  lead: str = "") -> Path:
    """The HTML report of a command (`sdceval.experiments.report_html`); the command prints
    its path last."""
    from sdceval.experiments.report_html import run_inputs, write_page
    return write_page(path, title, sections, run_inputs(dataset, extra), lead=lead)


def _note_worker_cap(args, workers: int) -> None:
    procs, each = threads.per_worker(workers)
    if procs < workers:
        _say(args, f"note: {procs} worker process(es) x {each} thread(s) instead of "
                   f"{workers}: the thread budget is {threads.budget()} (raise --threads / "
                   f"{threads.ENV} to use more cores)")
