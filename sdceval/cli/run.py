"""``sdceval run``: a declarative experiment file (TOML)."""
from __future__ import annotations

from sdceval.cli.common import _add_command, _add_wide_option, _say

#: `sdceval.experiments.dask_executor.CONNECT_TIMEOUT`, written here so that ``--help`` does
#: not import the experiments package (tests/test_hostile_round4_campaigns.py pins it)
CONNECT_TIMEOUT = 10.0


def add_parser(sub):
    s = _add_command(sub, "run", "run a declarative experiment file (TOML)", cmd_run)
    s.add_argument("file", help="experiment file (e.g. experiments/domingo_ferrer_table1.toml)")
    s.add_argument("--out", help="output folder (default: the file's 'output')")
    s.add_argument("--executor", choices=["serial", "processes", "dask"],
                   help="where tasks run (default: the file's 'executor')")
    s.add_argument("--workers", type=int,
                   help="worker processes (default: the file's 'workers'); honoured as "
                        "written unless --threads / SDCEVAL_THREADS gives a smaller budget, "
                        "which caps processes x threads")
    s.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786 (needs "
                        "the [dask] extra) (default: the file's 'scheduler', if any)")
    s.add_argument("--connect-timeout", type=float, metavar="SECONDS",
                   help="give up on the --scheduler when it has not answered as a Dask "
                        f"scheduler within SECONDS (default {CONNECT_TIMEOUT:g})")
    s.add_argument("--fresh", action="store_true",
                   help="recompute every job, also those the output folder's results store "
                        "already holds (default: resume, reusing them)")
    s.add_argument("--trust-legacy-store", action="store_true",
                   help="resume from a results store of an earlier sdceval, whose results "
                        "are Python pickles: this executes code from the store; use only "
                        "for stores you created (docs/store.md) (default: refuse it; "
                        "--fresh recomputes instead)")
    s.add_argument("--reduced", action="store_true",
                   help="run the file's reduced grid (for CI)")
    _add_wide_option(s)
    return s


def _protect_experiment_inputs(path, reduced: bool):
    """The experiment file and every file its jobs read (data, schema, hierarchies,
    releases read back); returns the parsed file."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_ref
    from sdceval.experiments.jobs import names_file
    from sdceval.experiments.spec import load_spec
    protect(path)
    spec = load_spec(path, reduced=reduced)
    for job in spec.jobs:
        # any option naming a file is read by the job (whatever its kind)
        values = [v for o in job.options.values() for v in (o if isinstance(o, list) else [o])]
        protect(*(v for v in values if names_file(v)))
        # opened here once (and cached for the serial executor) for its hierarchy files
        protect(*open_ref(job.data_ref()).input_files)
    return spec


def cmd_run(args) -> int:
    import math

    from sdceval.core.errors import SdcevalError
    from sdceval.experiments.runner import run_experiment
    timeout = args.connect_timeout
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise SdcevalError(f"--connect-timeout must be a positive number of seconds, got "
                           f"{timeout:g}")
    _protect_experiment_inputs(args.file, args.reduced)
    result = run_experiment(args.file, out=args.out, executor=args.executor,
                            workers=args.workers, reduced=args.reduced,
                            progress=lambda m: _say(args, m), scheduler=args.scheduler,
                            fresh=args.fresh, trust_legacy_store=args.trust_legacy_store,
                            connect_timeout=timeout)
    from sdceval.core.text_table import wide_tables
    with wide_tables(args.wide):
        print(result.summary())
    return 0
