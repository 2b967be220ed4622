"""``sdceval run``: a declarative experiment file (TOML)."""
from __future__ import annotations

from pathlib import Path

from sdceval.cli.common import _add_command, _add_wide_option, _say


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
    s.add_argument("--fresh", action="store_true",
                   help="recompute every job, also those the output folder's results store "
                        "already holds (default: resume, reusing them)")
    s.add_argument("--reduced", action="store_true",
                   help="run the file's reduced grid (for CI)")
    _add_wide_option(s)
    return s


def _protect_experiment_inputs(path, reduced: bool):
    """The experiment file and every file its jobs read (data, schema, hierarchies,
    releases read back); returns the parsed file."""
    from sdceval.core.fileio import protect
    from sdceval.core.loaders import open_ref
    from sdceval.experiments.spec import load_spec
    protect(path)
    spec = load_spec(path, reduced=reduced)
    for job in spec.jobs:
        # any option naming a file is read by the job (whatever its kind)
        values = [v for o in job.options.values() for v in (o if isinstance(o, list) else [o])]
        protect(*(v for v in values if isinstance(v, str) and Path(v).is_file()))
        # opened here once (and cached for the serial executor) for its hierarchy files
        protect(*open_ref(job.data_ref()).input_files)
    return spec


def cmd_run(args) -> int:
    from sdceval.experiments.runner import run_experiment
    spec = _protect_experiment_inputs(args.file, args.reduced)
    result = run_experiment(args.file, out=args.out, executor=args.executor,
                            workers=args.workers, reduced=args.reduced,
                            progress=lambda m: _say(args, m), scheduler=args.scheduler,
                            fresh=args.fresh)
    from sdceval.core.text_table import wide_tables
    with wide_tables(args.wide):
        print(result.summary())
    return 0
