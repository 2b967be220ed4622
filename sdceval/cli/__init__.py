"""Command-line interface: ``sdceval list|anonymize|evaluate|check|compare|run|hierarchy|
tradeoff|lattice|vectors|pbg|verify|serve``.

``sdceval compare`` with no options runs the main job on the bundled ``census`` data:
MDAV, correlated noise, multiplicative noise and rank swapping matched to the linkage
risk of ``mdav:k=5``, ranked by propensity and EMD utility.

The process (exit codes, signals, output order):

- exit 0 on success, 2 on a usage or input error (one line naming the fix), 130 on
  Ctrl-C (SIGINT), 143 on SIGTERM, 141 when stdout is a closed pipe (``| head``), the
  codes a shell reports for a process ended by those signals.
- SIGTERM is turned into an exception, like Ctrl-C, so every ``finally`` block runs:
  partial output files are removed (`sdceval.core.fileio`), worker processes are killed
  (`sdceval.experiments.executor`); child processes still alive afterwards are
  terminated.  One exception: inside a method or measure running on more than one
  thread (`sdceval.core.threads.parallel_native`), scipy's ``workers=`` threads keep
  running native code that unwinding would pull memory from under (the segfault of
  ``cKDTree.query`` on Ctrl-C), so the process ends there and then with ``os._exit``
  (no file is being written and no executor runs inside a method or measure); the same
  if helper threads are still alive after the clean-up.  A second signal during the
  clean-up exits at once, after removing partial files.
- result files are written before anything is printed on stdout, so ``| head`` never
  loses them.
- heavy libraries (pandas, scikit-learn, POT, matplotlib) are imported by the commands
  that use them, so ``sdceval --help`` and ``sdceval list`` start fast.

Each command is one module of this package, holding its options (``add_parser``) and
its function (``cmd_NAME``), and one entry of `COMMANDS`; `sdceval.cli.common` holds
what the commands share, `sdceval.core.processes` the signal handling and the ending of
child processes.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import warnings

from sdceval.cli import (anonymize, check, compare, evaluate, hierarchy, lattice, listing,
                         pbg, results, run, serve, tradeoff, vectors, verify)
from sdceval.cli.anonymize import cmd_anonymize
from sdceval.cli.check import cmd_check
from sdceval.cli.common import BUNDLED_NAMES, PLUGINS_ENV, _add_common_options, _HelpFormatter
from sdceval.cli.compare import cmd_compare
from sdceval.cli.evaluate import cmd_evaluate
from sdceval.cli.hierarchy import cmd_hierarchy
from sdceval.cli.lattice import cmd_lattice
from sdceval.cli.listing import cmd_list, direction_words
from sdceval.cli.pbg import cmd_pbg
from sdceval.cli.results import cmd_results
from sdceval.cli.run import cmd_run
from sdceval.cli.serve import cmd_serve
from sdceval.cli.tradeoff import cmd_tradeoff
from sdceval.cli.vectors import cmd_vectors
from sdceval.cli.verify import cmd_verify
from sdceval.core import interrupts, processes, threads
from sdceval.core.errors import SdcevalError
from sdceval.core.processes import Terminated
# `main` calls these by their names here, where a test replaces _end_children
from sdceval.core.processes import end_children as _end_children
from sdceval.core.processes import signal_handling as _signal_handling

__all__ = ["BUNDLED_NAMES", "COMMANDS", "EXIT_ERROR", "EXIT_SIGINT", "EXIT_SIGPIPE",
           "EXIT_SIGTERM", "Terminated", "build_parser", "cmd_anonymize", "cmd_check",
           "cmd_compare",
           "cmd_evaluate", "cmd_hierarchy", "cmd_lattice", "cmd_list", "cmd_pbg", "cmd_results",
           "cmd_run", "cmd_serve",
           "cmd_tradeoff", "cmd_vectors", "cmd_verify", "direction_words", "main"]

EXIT_ERROR, EXIT_SIGINT, EXIT_SIGPIPE, EXIT_SIGTERM = 2, 130, 141, 143

# the subcommands, in the order ``sdceval --help`` lists them: a command is a module
# whose ``add_parser(sub)`` adds its subparser, options and function
COMMANDS = (listing, anonymize, evaluate, check, compare, run, results, hierarchy, tradeoff,
            lattice, vectors, pbg, verify, serve)


def build_parser() -> argparse.ArgumentParser:
    from sdceval import __version__
    p = argparse.ArgumentParser(
        prog="sdceval", formatter_class=_HelpFormatter,
        description="Anonymize microdata, measure disclosure risk and utility loss, and "
                    "compare methods at equal risk.  'sdceval compare' alone runs the "
                    "main job on the bundled Census data.",
        epilog=f"environment: {threads.ENV}=N sets the thread budget (like --threads).\n"
               "exit codes: 0 done, 2 bad input (the message names the fix), "
               "130 Ctrl-C, 141 output pipe closed, 143 SIGTERM.")
    p.add_argument("--version", action="version", version=f"sdceval {__version__}")
    _add_common_options(p, top=True)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        s = command.add_parser(sub)
        # the function runs by its name on this package, so that replacing
        # ``sdceval.cli.cmd_list`` (as the tests do) replaces what the command runs; a
        # command that reads data is wrapped for --print-schema
        # (`sdceval.cli.common._print_schema_or`), which runs its ``command`` attribute
        func = s.get_default("func")
        wrapped = getattr(func, "command", None)
        if wrapped is not None:
            func.command = globals().get(wrapped.__name__, wrapped)
        else:
            s.set_defaults(func=globals().get(func.__name__, func))
    return p


def main(argv=None) -> int:
    # a closed stderr (`2>&1 | head -1`) drops the progress messages, notes and
    # warnings, never the result files (issue 22 item 8)
    with processes.guard_stderr():
        return _main(argv)


def _main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    threads_before = set(threading.enumerate())
    quiet_before = os.environ.get("SDCEVAL_QUIET")
    plugins_before = os.environ.get(PLUGINS_ENV)
    error = None
    with warnings.catch_warnings(record=True) as caught, _signal_handling():
        warnings.simplefilter("always")
        try:
            import numpy as np
            # messages are built from numpy values in many places: print them as the
            # values they are ('A', 1.5), not as np.str_('A') / np.float64(1.5)
            with np.printoptions(legacy="1.25"):
                if args.threads is not None:
                    threads.set_budget(args.threads)
                threads.budget()  # a bad SDCEVAL_THREADS is an error before any work
                if args.quiet:  # read by the progress bars of long searches, in workers too
                    os.environ["SDCEVAL_QUIET"] = "1"
                if args.plugin:  # in the environment: worker processes load them too
                    os.environ[PLUGINS_ENV] = ",".join(
                        [p for p in os.environ.get(PLUGINS_ENV, "").split(",") if p]
                        + [str(p) for p in args.plugin])
                    from sdceval.catalog import load_plugins
                    load_plugins()
                from sdceval.core.fileio import protection_scope
                with protection_scope():  # this command's inputs, not the next one's
                    code = args.func(args)
                    # a signal whose exception was swallowed (raised inside a gc
                    # callback, say) still ends the command as interrupted
                    interrupts.check()
                sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        except SdcevalError as exc:
            code, error = EXIT_ERROR, exc
        except Terminated:
            code, error = EXIT_SIGTERM, "terminated (SIGTERM)"
        except KeyboardInterrupt:
            code, error = EXIT_SIGINT, "interrupted"
        except SystemExit as exc:  # sdceval never exits from a command: a plugin's code did
            code, error = EXIT_ERROR, (
                f"the command was ended by code calling sys.exit({exc.code!r}) (a plugin's "
                "method or measure?): results were not finished; remove the sys.exit call")
        except BrokenPipeError:  # piped into e.g. `head`: files are already written
            processes.silence_stdout()
            code = EXIT_SIGPIPE
        finally:  # leave a calling Python process as it was
            if args.threads is not None:
                threads.set_budget(None)
            for var, before in (("SDCEVAL_QUIET", quiet_before),
                                (PLUGINS_ENV, plugins_before)):
                if before is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = before
    seen = set()
    for w in caught:  # each distinct warning once, after the progress messages
        msg = str(w.message)
        if msg not in seen and not issubclass(w.category, (DeprecationWarning,
                                                           PendingDeprecationWarning)):
            seen.add(msg)
            print(f"sdceval: warning: {msg}", file=sys.stderr)
    if error is not None:
        print(f"sdceval: error: {error}", file=sys.stderr, flush=True)
    if code in (EXIT_SIGINT, EXIT_SIGTERM):
        _end_children()
        lingering = [t for t in threading.enumerate()
                     if t not in threads_before and t.is_alive()]
        deadline = time.monotonic() + 0.2
        for t in lingering:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in lingering):
            # threads still in native code: never finalize under them
            processes.hard_exit(code)
    return code
