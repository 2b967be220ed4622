"""``sdceval evaluate``: measure a release written by ``anonymize`` against the
original."""
from __future__ import annotations

from sdceval.cli.common import _add_command, _add_data_options, _dataset, _say
from sdceval.core.errors import plain


def add_parser(sub):
    s = _add_command(sub, "evaluate", "measure a release against the original",
                     cmd_evaluate)
    _add_data_options(s)
    s.add_argument("--release", required=True, help="release CSV written by anonymize")
    s.add_argument("--measures", default="linkage_risk,propensity,emd",
                   help="comma-separated measures, parameters after a colon "
                        "(e.g. propensity:model=linear,emd)")
    s.add_argument("--out", help="write the measurements as JSON (default: not written)")
    return s


def cmd_evaluate(args) -> int:
    from sdceval.catalog import get_measure
    from sdceval.compare.ranking import parse_measure_list
    from sdceval.core.fileio import protect, write_json
    from sdceval.core.release_io import read_release
    ds = _dataset(args)
    protect(args.release)
    measures = parse_measure_list(args.measures)
    rel = read_release(ds, args.release)
    rows, lines = [], []
    for label, (name, params) in measures.items():
        _say(args, f"measuring {label} ...")
        m = get_measure(name).evaluate(ds, rel, params)
        rows.append({**m.to_dict(), "label": label, "params": params})
        lines.append(f"{label:20s} {m.value:.6g}" + "".join(
            f"  {k}={v:.4g}" if isinstance(v, float) else f"  {k}={plain(v)}"
            for k, v in m.details.items() if isinstance(v, (int, float, str))))
    if args.out:  # the file first: a closed stdout must not lose it
        write_json({"data": ds.name, "release": str(args.release), "measurements": rows},
                   args.out, protected=[args.release])
        _say(args, f"wrote {args.out}")
    print("\n".join(lines))
    return 0
