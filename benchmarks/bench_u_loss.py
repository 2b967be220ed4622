"""U_loss (and P_loss, query error) on Mondrian releases of Adult (target: u_loss <= 5 s
on the first call, population search included).

Run: python benchmarks/bench_u_loss.py
"""
import time

import sdceval
from sdceval import load_dataset
from sdceval.measures.attribute_disclosure import identity_release, suppressed_release
from sdceval.measures.utility_loss import _POPULATIONS, large_populations


def timed(f, *a, **kw):
    t0 = time.perf_counter()
    out = f(*a, **kw)
    return out, time.perf_counter() - t0


if __name__ == "__main__":
    ds = load_dataset("adult")
    rel, dt = timed(sdceval.anonymize, ds, "mondrian", k=10)
    print(f"Mondrian k=10 on Adult: {dt:.2f} s, {len(set(rel.classes))} classes")

    m, first = timed(sdceval.evaluate, ds, rel, "u_loss")
    print(f"u_loss first call (population search included): {first:.2f} s  U_loss = "
          f"{m.value:.5f}  ({m.details['n_populations']} populations, "
          f"{m.details['n_itemsets']} itemsets)  target <= 5 s "
          f"{'PASS' if first <= 5 else 'MISS'}")
    _, again = timed(sdceval.evaluate, ds, rel, "u_loss")
    print(f"u_loss cached call: {again:.2f} s")
    _POPULATIONS.pop(ds, None)
    _, search = timed(large_populations, ds, 0.05)
    print(f"population search alone: {search:.2f} s")

    for name, r in [("suppressed", suppressed_release(ds)), ("original", identity_release(ds))]:
        u, t = timed(sdceval.evaluate, ds, r, "u_loss")
        u2 = sdceval.evaluate(ds, r, "u_loss", dedupe=False)
        p = sdceval.evaluate(ds, r, "p_loss")
        print(f"{name:10s}: U_loss = {u.value:.5f} ({t:.2f} s), all itemsets {u2.value:.5f}, "
              f"P_loss = {p.value:.4f}")

    for method, params in [("mondrian", dict(k=5000)), ("mondrian", dict(k=100)),
                           ("mondrian", dict(model="t", t=0.15, distance="js")),
                           ("bucketization", dict(model="t", t=0.15, distance="js"))]:
        r = sdceval.anonymize(ds, method, **params)
        p = sdceval.evaluate(ds, r, "p_loss")
        u, tu = timed(sdceval.evaluate, ds, r, "u_loss")
        q, tq = timed(sdceval.evaluate, ds, r, "query_error")
        print(f"{method} {params}: P_loss = {p.value:.4f}, U_loss = {u.value:.5f} "
              f"({tu:.2f} s), query error = {q.value:.1f} % ({tq:.2f} s, "
              f"{q.details['n_answered']} answered)")
