"""Make the bundled household survey ``survey`` (sdceval/data/survey.csv.gz): a
synthetic population of households and persons, and a stratified sample of its
households with design weights, as a statistical office's survey file is.

Run: python docs/examples/make_survey.py [OUT]   (default sdceval/data/survey.csv.gz)

Seeded (numpy's default_rng(2029)): the same file on every machine with the same numpy.

The population (about 1 000 000 persons in 420 000 households) has 12 regions, each
with an urban and a rural part; a household has a dwelling type and a size of 1–8
members; a person a sex, an age, a marital status, an education level, an activity
status and, for the employed, an income; members of a household are drawn together
(the head and a partner of similar age, children younger than their parents), so
household-level keys are equal within a household by construction.  A stratified
simple random sample of households is drawn in each region × urban/rural stratum with
sampling fractions between 0.5 % and 2.5 % (rural strata and small regions over-
sampled, as many surveys do); every member of a sampled household is in the file, with
the household's weight: the design weight 1/f_stratum (the number of population
households the household stands for) times a nonresponse and calibration adjustment
(lognormal, sd 0.25 on the log scale, mean 1 within the stratum), so that weights vary
within strata as a survey's final weights do.  No record is real; nothing is taken from a real survey.

Columns: hid (household id), region, urbrur (1 urban, 2 rural), dwelling, hhsize,
sex, age, marital, education, activity, income (0 when not employed), weight.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HOUSEHOLDS = 420_000
REGIONS = 12
SEED = 2029


def population(rng: np.random.Generator) -> pd.DataFrame:
    H = HOUSEHOLDS
    # regions of unequal size; the share urban differs by region
    size = rng.dirichlet(np.full(REGIONS, 3.0))
    region = rng.choice(REGIONS, H, p=size) + 1
    urban_share = np.linspace(0.35, 0.85, REGIONS)[rng.permutation(REGIONS)]
    urbrur = np.where(rng.random(H) < urban_share[region - 1], 1, 2)
    # household size: larger in rural households
    lam = np.where(urbrur == 1, 1.3, 2.0)
    hhsize = np.minimum(1 + rng.poisson(lam), 8)
    dwelling = np.where(urbrur == 1, rng.choice(4, H, p=[0.55, 0.30, 0.10, 0.05]),
                        rng.choice(4, H, p=[0.15, 0.60, 0.15, 0.10])) + 1
    hid = np.repeat(np.arange(1, H + 1), hhsize)
    n = len(hid)
    pos = np.arange(n) - np.repeat(np.cumsum(hhsize) - hhsize, hhsize)  # 0 = head
    head_age = rng.integers(18, 90, H)
    ages = np.repeat(head_age, hhsize).astype(np.int64)
    partner = pos == 1
    ages[partner] = np.clip(ages[partner] + rng.integers(-6, 7, partner.sum()), 18, 95)
    child = pos >= 2
    parent = np.repeat(head_age, hhsize)[child]
    ages[child] = np.clip(parent - 20 - rng.integers(0, 20, child.sum()), 0, 70)
    sex = rng.choice([1, 2], n)                  # 1 male, 2 female
    sex[pos == 0] = np.where(rng.random(H) < 0.6, 1, 2)
    sex[partner] = 3 - sex[np.flatnonzero(partner) - 1]   # the head's partner
    marital = np.where(ages < 18, 1, np.where(rng.random(n) < 0.5, 1, 2))
    marital[(pos <= 1) & (np.repeat(hhsize, hhsize) >= 2)] = 2
    old = ages >= 65
    marital[old & (rng.random(n) < 0.3)] = 3   # widowed
    marital[(ages >= 25) & (rng.random(n) < 0.08)] = 4   # divorced
    edu_p = np.where(urbrur == 1, 0.45, 0.25)[np.repeat(np.arange(H), hhsize)]
    education = np.where(ages < 15, 1, np.where(rng.random(n) < edu_p, 4,
                                                rng.choice([2, 3], n, p=[0.45, 0.55])))
    activity = np.select([ages < 15, ages >= 67, rng.random(n) < 0.7],
                         [4, 3, 1], default=2)   # 1 employed, 2 unemployed/inactive
    income = np.where(activity == 1,
                      np.round(rng.lognormal(9.6 + 0.25 * (education - 2), 0.55, n), -1),
                      0.0)
    hh = np.repeat(np.arange(H), hhsize)
    return pd.DataFrame({"hid": hid, "region": region[hh], "urbrur": urbrur[hh],
                         "dwelling": dwelling[hh], "hhsize": hhsize[hh], "sex": sex,
                         "age": ages, "marital": marital, "education": education,
                         "activity": activity, "income": income})


def sample(pop: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    hh = pop.drop_duplicates("hid")[["hid", "region", "urbrur"]]
    strata = hh.groupby(["region", "urbrur"]).size()
    # smaller strata and rural ones sampled at higher fractions
    frac = np.clip(0.5 / np.sqrt(strata / strata.max()) / 100 * (1.0 + (
        strata.index.get_level_values("urbrur") == 2)), 0.005, 0.025)
    chosen, weight = [], {}
    for (r, u), f in frac.items():
        ids = hh["hid"][(hh["region"] == r) & (hh["urbrur"] == u)].to_numpy()
        m = max(2, int(round(f * len(ids))))
        take = rng.choice(ids, m, replace=False)
        chosen.append(take)
        # design weight 1 / the realised sampling fraction, times a household's
        # nonresponse and calibration adjustment (lognormal, mean 1 in the stratum),
        # so that weights vary within strata as a survey's final weights do
        adj = rng.lognormal(0.0, 0.25, m)
        w = len(ids) / m * adj / adj.mean()
        weight.update(zip(take.tolist(), w.tolist()))
    keep = pop[pop["hid"].isin(np.concatenate(chosen))].copy()
    keep["weight"] = keep["hid"].map(weight).round(4)
    # households renumbered in file order: the population's ids are not published
    keep["hid"] = pd.factorize(keep["hid"])[0] + 1
    return keep.reset_index(drop=True)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else \
        Path(__file__).resolve().parents[2] / "sdceval" / "data" / "survey.csv.gz"
    rng = np.random.default_rng(SEED)
    pop = population(rng)
    s = sample(pop, rng)
    s.to_csv(out, index=False, compression={"method": "gzip", "mtime": 0})
    print(f"population {len(pop):,} persons in {pop['hid'].nunique():,} households; "
          f"sample {len(s):,} persons in {s['hid'].nunique():,} households, weights "
          f"{s['weight'].min():.1f}..{s['weight'].max():.1f} (sum {s['weight'].sum():,.0f})"
          f" -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
