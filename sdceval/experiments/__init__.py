"""Declarative experiments: spec -> tasks -> executor -> results -> report."""
from .runner import ExperimentResult, run_experiment
from .spec import load_spec

__all__ = ["run_experiment", "ExperimentResult", "load_spec"]
