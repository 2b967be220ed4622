"""Declarative experiments: spec -> tasks -> executor -> results -> report.

Every module that registers a job kind is imported here, in the order of the kinds
(`sdceval.experiments.jobs.JOB_KINDS`: the order of an experiment's jobs, of the
sections of ``results.json`` and of the report).
"""
from sdceval.experiments import (comparison_job, evaluation_job, tradeoff,  # noqa: F401
                                 lattice_job, vectors_job, pbg_job)
from sdceval.experiments.jobs import JOB_KINDS

#: imported on first use (PEP 562): a command that runs one job alone (``sdceval
#: lattice search``) needs neither the runner nor the experiment files' reader, nor
#: pydantic, which the files' schema loads (issue 27 item 23)
_LAZY = {"ExperimentResult": "sdceval.experiments.runner",
         "run_experiment": "sdceval.experiments.runner",
         "load_spec": "sdceval.experiments.spec"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["JOB_KINDS", "run_experiment", "ExperimentResult", "load_spec"]
