"""The whole Li & Li Fig. 2(a) grid: 32 Mondrian releases of Adult with P_loss and U_loss,
2 worker processes (target <= 3 min on 2 cores).

Run: python benchmarks/bench_tradeoff.py
"""
import tempfile
import time

from sdceval import load_dataset
from sdceval.experiments.tradeoff import run_tradeoff

if __name__ == "__main__":
    ds = load_dataset("adult")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_tradeoff(ds, models=["k", "l", "t", "delta"], method="mondrian",
                           measures=["p_loss", "u_loss"], out=tmp, workers=2)
        dt = time.perf_counter() - t0
    print(res)
    print(f"Fig. 2(a) grid, {len(res.points)} releases, P_loss + U_loss: {dt:.1f} s "
          f"(target <= 180 s) {'PASS' if dt <= 180 else 'MISS'}")
