"""Declarative experiments: spec -> tasks -> executor -> results -> report.

Every module that registers a job kind is imported here, in the order of the kinds
(`sdceval.experiments.jobs.JOB_KINDS`: the order of an experiment's jobs, of the
sections of ``results.json`` and of the report).
"""
from sdceval.experiments import (comparison_job, evaluation_job, tradeoff,  # noqa: F401
                                 lattice_job, vectors_job, pbg_job)
from sdceval.experiments.jobs import JOB_KINDS
from sdceval.experiments.runner import ExperimentResult, run_experiment
from sdceval.experiments.spec import load_spec

__all__ = ["JOB_KINDS", "run_experiment", "ExperimentResult", "load_spec"]
