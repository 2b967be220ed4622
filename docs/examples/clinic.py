"""Write the mixed patient file of docs/across_families.md's worked example: 3 000
synthetic records with a record number (an identifier), ZIP codes with leading zeros,
age, sex and marital status (quasi-identifiers), income and weekly hours (numeric
attributes) and a diagnosis (the sensitive attribute), and its schema.

Run: python docs/examples/clinic.py [FOLDER]   (default: the current folder)
It writes FOLDER/clinic.csv and FOLDER/clinic.toml.
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
folder.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(2026)
n = 3000
zips = np.array([f"{z:05d}" for z in rng.choice(np.arange(2000, 2600), 120, replace=False)])
age = rng.integers(18, 91, n)
pd.DataFrame({
    "record_no": np.arange(1, n + 1),
    "zip": rng.choice(zips, n),
    "age": age,
    "sex": rng.choice(["F", "M"], n),
    "marital": rng.choice(["single", "married", "divorced", "widowed"], n,
                          p=[.35, .45, .12, .08]),
    "income": np.round(rng.lognormal(10.2, 0.6, n) * (1 + (age - 18) / 80), 2),
    "hours": np.clip(np.round(rng.normal(38, 9, n)), 1, 80),
    "diagnosis": rng.choice(["flu", "asthma", "diabetes", "copd", "none", "hypertension"], n,
                            p=[.15, .1, .15, .1, .35, .15]),
}).to_csv(folder / "clinic.csv", index=False)
(folder / "clinic.toml").write_text(
    'qi = ["zip", "age", "sex", "marital"]\nnumeric = ["income", "hours"]\n'
    'sensitive = "diagnosis"\nidentifier = ["record_no"]\n')
print(f"wrote {folder / 'clinic.csv'} and {folder / 'clinic.toml'}")
