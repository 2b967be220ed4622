"""Declarative experiments: spec -> tasks -> executor -> results -> report."""
from sdceval.experiments.runner import ExperimentResult, run_experiment
from sdceval.experiments.spec import load_spec

__all__ = ["run_experiment", "ExperimentResult", "load_spec"]
