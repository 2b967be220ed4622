"""One configuration format for the app, the CLI and the API (issue 31): a run's
configuration is the ``[[comparison]]`` table of an experiment file as a dict (``data``,
the roles, ``methods``, ``target``, ``utilities``, ...), with the ``[experiment]``
settings beside them (`split_config`); written as an experiment file
(`experiment_toml`), as the options of ``sdceval`` commands (`_data_options`,
`_param_options`) and as the Python of the public API (`python_snippet`)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from sdceval.core.errors import SdcevalError

#: the configuration's keys that are settings of the ``[experiment]`` table
EXPERIMENT_KEYS = ("name", "description", "seed", "repeats", "executor", "workers")
#: keys a run's configuration may not hold: the manager chooses the output, and a run
#: is one comparison
REFUSED_KEYS = {"output": "the run manager chooses each run's output folder",
                "scheduler": "runs use the local executors",
                "sweep": "a run is one comparison; write an experiment file for a sweep "
                         "and run it with `sdceval run`"}

# -- the configuration ------------------------------------------------------------------
def split_config(config: dict) -> tuple[dict, dict]:
    """``(experiment, comparison)``: the configuration's ``[experiment]`` settings
    (`EXPERIMENT_KEYS`) and its ``[[comparison]]`` table; a data or schema file is
    named by its absolute path (the worker runs in the run folder)."""
    from sdceval.experiments.jobs import names_file
    if not isinstance(config, dict):
        raise SdcevalError(f"configuration: a table of options is expected, got "
                           f"{type(config).__name__}")
    for key in config:
        if not isinstance(key, str):
            raise SdcevalError(f"configuration: option names are text, got {key!r}")
        if key in REFUSED_KEYS:
            raise SdcevalError(f"configuration: {key!r} is not an option of a run: "
                               f"{REFUSED_KEYS[key]}")
    experiment = {"name": "app-run",
                  **{k: v for k, v in config.items() if k in EXPERIMENT_KEYS}}
    job = {k: v for k, v in config.items() if k not in EXPERIMENT_KEYS}
    for key in ("data", "schema"):
        if names_file(job.get(key)):
            job[key] = str(Path(job[key]).resolve())
    return experiment, job


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_value(name, name)


def _toml_value(value, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SdcevalError(f"configuration {where}: {value!r} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        # a TOML basic string: JSON's escapes are TOML's; DEL must be escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, where) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(str(k))} = {_toml_value(v, where)}"
                               for k, v in value.items()) + "}"
    raise SdcevalError(f"configuration {where}: a {type(value).__name__} cannot be "
                       "written in an experiment file (text, numbers, true/false, lists "
                       "and tables can)")


def experiment_toml(config: dict) -> str:
    """The experiment file of a configuration (`split_config`), checked to read back
    as the configuration it was written from."""
    experiment, job = split_config(config)
    lines = ["# written by sdceval's app: run it with `sdceval run experiment.toml --out out`",
             "[experiment]"]
    lines += [f"{k} = {_toml_value(v, k)}" for k, v in experiment.items()]
    lines += ["", "[[comparison]]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v, k)}" for k, v in job.items()]
    text = "\n".join(lines) + "\n"
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        back = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SdcevalError(f"configuration: cannot be written as an experiment file "
                           f"({exc})") from None
    if back != {"experiment": experiment, "comparison": [job]}:
        raise SdcevalError("configuration: a value does not read back from the experiment "
                           "file as it was given (a tuple or a number too large?)")
    return text


def _check_data(job: dict) -> None:
    """A ``data`` that is neither a bundled data set nor a file: an error naming it
    now, not when the worker opens it."""
    from sdceval.core.errors import suggest
    from sdceval.core.loaders import BUNDLED
    from sdceval.experiments.jobs import names_file
    data = job.get("data")
    if isinstance(data, str) and data not in BUNDLED and not names_file(data):
        raise SdcevalError(f"configuration: 'data' {data!r} is neither a bundled data set "
                           f"({', '.join(BUNDLED)}) nor a file.{suggest(data, BUNDLED)}")


#: the data options of a job and the ``sdceval`` flags that give them
_DATA_FLAGS = {"schema": "--schema", "qi": "--qi", "sensitive": "--sensitive",
               "numeric": "--numeric", "label": "--label", "weight": "--weight",
               "household": "--household", "household_keys": "--household-keys"}


def _data_options(job: dict) -> list[str]:
    out = ["--data", str(job["data"])]
    for key, flag in _DATA_FLAGS.items():
        value = job.get(key)
        if value is not None:
            out += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    return out


def _param_options(params: dict) -> list[str]:
    """A method's parameters as ``--param NAME=VALUE`` and ``--model SPEC``."""
    out = []
    for name, value in params.items():
        if value is None:
            continue
        if name == "models":
            for model in value:
                out += ["--model", str(model)]
        elif isinstance(value, (bool, int, float, str)):
            out += ["--param", f"{name}={value!r}" if isinstance(value, float)
                    else f"{name}={value}"]
        else:
            raise SdcevalError(f"parameter {name} = {value!r} cannot be given to sdceval "
                               "anonymize; make the release with the Python API")
    return out


#: the data options of a job and the keywords of `sdceval.open_dataset`
_OPEN_KEYWORDS = {"schema": "schema_file"}
#: the comparison options that are keywords of `sdceval.compare` as they are
_COMPARE_KEYWORDS = ("target", "risk", "utilities", "risks", "method_params", "tolerance",
                     "intruder", "max_risk", "guideline")


def python_snippet(experiment: dict, job: dict) -> str:
    """The Python (sdceval's public API) that computes the comparison of a run."""
    from sdceval.experiments.jobs import DATA_KEYS
    data_kw = "".join(f", {_OPEN_KEYWORDS.get(k, k)}={job[k]!r}" for k in DATA_KEYS
                      if k != "data" and job.get(k) is not None)
    options = [f"{k}={job[k]!r}" for k in _COMPARE_KEYWORDS if job.get(k) is not None]
    options += [f"seed={experiment.get('seed', 0)!r}",
                f"repeats={experiment.get('repeats', 1)!r}"]
    head = "data" + ("" if job.get("methods") is None else f", {job['methods']!r}")
    return ("import sdceval\n\n"
            f"data = sdceval.open_dataset({job['data']!r}{data_kw})\n"
            f"comparison = sdceval.compare(\n    {head},\n"
            + "".join(f"    {o},\n" for o in options) + ")\n"
            "print(comparison.answer())\n"
            "print(comparison.table())\n")
