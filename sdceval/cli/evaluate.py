"""``sdceval evaluate``: measure a release written by ``anonymize`` against the
original.

The release's private key file (beside it, ``masked.csv.private-key.csv``, or
``--key``) puts its shuffled rows back in record order, after checking that it belongs
to this release and this data set; a release without a key must be in record order
(``anonymize --keep-order``; ``--no-key`` reads it without checking, and is refused
when a key lies beside the release).  See `sdceval.core.release_order`.  A synthetic
release (its public ``.method.json`` says so: new records, no record correspondence)
is read with no key (`sdceval.core.release_io.read_release`); a measure that reads
row-aligned releases only is named with the registry's reason, "not applicable to a
synthetic release: it has no record correspondence", never given a number.

Every measure asked for is checked against the release before any is computed
(`MeasureSpec.check_release`: the release's kind and what the measure needs): those that
apply are computed and reported, each one that does not is named on stderr with its
reason; if none applies, the command fails with the reasons.
"""
from __future__ import annotations

from sdceval.cli.common import (_add_command, _add_data_options, _add_release_options,
                                _add_wide_option, _dataset, _release, _say)
import warnings

from sdceval.core.errors import SdcevalError, plain


def add_parser(sub):
    s = _add_command(sub, "evaluate", "measure a release against the original",
                     cmd_evaluate)
    _add_data_options(s)
    _add_release_options(s)
    s.add_argument("--measures", default="linkage_risk,propensity,emd",
                   help="comma-separated measures, parameters after a colon "
                        "(e.g. propensity:model=linear,emd)")
    s.add_argument("--out", help="write the measurements as JSON (default: not written)")
    _add_wide_option(s)
    return s


def cmd_evaluate(args) -> int:
    from sdceval.catalog import get_measure
    from sdceval.compare.ranking import parse_measure_list
    from sdceval.core.fileio import write_json
    ds = _dataset(args)
    measures = parse_measure_list(args.measures)
    rel = _release(args, ds)
    applicable, skipped = [], []
    for label, (name, params) in measures.items():  # every one checked before any runs
        spec = get_measure(name)
        spec.resolve(params)  # a bad parameter is an error, not a measure skipped
        try:
            spec.check_release(ds, rel)
        except SdcevalError as exc:
            skipped.append((label, exc))
        else:
            applicable.append((label, spec, params))
    if not applicable:
        raise SdcevalError("no measure asked for applies to this release: "
                           + "; ".join(_reason(label, exc) for label, exc in skipped))
    for label, exc in skipped:  # a warning: shown even with -q, as the output lacks it
        warnings.warn(f"not computed: {_reason(label, exc)}")
    rows, measured = [], []
    for label, spec, params in applicable:
        _say(args, f"measuring {label} ...")
        m = spec.evaluate(ds, rel, params)
        rows.append({**m.to_dict(), "label": label, "params": params})
        measured.append((label, m))
    if args.out:  # the file first: a closed stdout must not lose it
        write_json({"data": ds.name, "release": str(args.release), "measurements": rows},
                   args.out, protected=[args.release, args.key])
        _say(args, f"wrote {args.out}")
    print(_measurements_text(measured, getattr(args, "wide", False)))
    return 0


def _measurements_text(measured, wide: bool) -> str:
    """One row per measure (display name, value, how to read it, the name
    ``--measures`` takes); below each, its
    details that have a name people read (re-identification rates, ...); every detail,
    as ``key=value``, with ``--wide``."""
    import textwrap

    import pandas as pd

    from sdceval.core.glossary import term
    from sdceval.core.text_table import cell, console_table

    def shown(t, v):
        if t is not None and t.unit == "share of records" and isinstance(v, float):
            return f"{100 * v:.3g} %"
        return cell(v)
    table, extra = [], []
    for label, m in measured:
        t = term(label)
        table.append({"measure": t.label if t else label, "value": shown(t, float(m.value)),
                      "how to read it": t.words if t else "", "name": label})
        for k, v in m.details.items():
            dt = term(k)
            if dt is not None and dt.words and isinstance(v, (int, float)):
                table.append({"measure": f"  {dt.label}", "value": shown(dt, float(v)),
                              "how to read it": dt.words, "name": ""})
        if wide:
            extra.append(textwrap.fill(f"{label}: " + "  ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={plain(v)}"
                for k, v in m.details.items() if isinstance(v, (int, float, str))), 100,
                subsequent_indent="    "))
    text = console_table(pd.DataFrame(table), keep=3, glosses=False,
                         labels={"measure": "measure", "value": "value",
                                 "how to read it": "how to read it",
                                 "name": "name (--measures)"})
    return "\n".join([text, *_sample_notes(measured), *extra])


def _sample_notes(measured) -> list[str]:
    """One line per measure estimated from a sample of records (large tables: the
    nearest-neighbour risks), so nobody reads an estimate as an exact figure."""
    import textwrap

    from sdceval.measures._nearest import sample_phrase
    out = []
    for label, m in measured:
        s = m.details.get("sample") if isinstance(m.details, dict) else None
        if s:
            out.append(textwrap.fill(
                f"{label}: {sample_phrase(s['sampled_records'], s['records'])} (standard "
                f"error {s['standard_error']:.2g}); {m.measure}:sample=0 links every "
                "record, exactly but slowly", 100, subsequent_indent="    "))
    return out


def _reason(label: str, exc: Exception) -> str:
    """Why the measure ``label`` was not computed (its label first if it has parameters,
    as the error names the measure only)."""
    return str(exc) if ":" not in label else f"{label}: {exc}"
