"""The real tables of round 3 (docs/comparison.md, "Real data"): what each benchmark entry of
config.yaml with `generator: package` holds, and whether its label can be learnt at all.

    .venv/bin/python -m benchmarks.real_tables [--datasets vote,credit] [--records 8000]

Per table, printed: its records (after the records missing a value are left out), features (after
the encoding rule), the positive share and the majority class's accuracy; a non-private check of
learnability, the 5-fold cross-validated accuracy of a logistic regression on standardised
features (scikit-learn, on at most `--records` records drawn at random: a table where it does not
beat the majority class cannot tell DP methods apart); the records of the reported runs' part and
of the calibration's; and how many runs each part holds: disjoint blocks (`draw: disjoint`), or the
smallest source and target pools over seeds 0-19 and 10000-10019 (`draw: resample`), to compare with
n_source and n_target. Nothing here is a result of the comparison: no DP method runs.
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from expril import datasets, tables
from expril.seeds import rng
from expril.workflow.config import planned_config

ROOT = Path(__file__).resolve().parents[1]
REPORTED, CALIBRATION = range(20), range(10000, 10020)


def learnability(table, records):
    """Majority-class accuracy and a logistic regression's 5-fold accuracy."""
    x, y = table.x, table.y
    if len(y) > records:
        keep = np.random.default_rng(0).choice(len(y), records, replace=False)
        x, y = x[keep], y[keep]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    return max(y.mean(), 1 - y.mean()), cross_val_score(model, x, y, cv=5).mean()


def capacity(name, spec, table):
    """Per part (reported, calibration): its disjoint blocks, or its smallest pools over 20 seeds."""
    p = datasets.source_probability(spec, table)
    out = []
    for seeds in (REPORTED, CALIBRATION):
        rows, block = datasets._part(name, spec, len(table.x), seeds[0])
        if spec.get("draw") == "disjoint":
            try:
                datasets._disjoint(name, spec, rows, p, 10**9, seeds[0])
            except ValueError as error:  # names the blocks the part holds
                out.append(f"{len(rows)} records, {str(error).split('which holds ')[1]}")
            continue
        pools = [rng("data", name, s).random(len(rows)) < p[rows] for s in seeds]
        smallest = min(int(t.sum()) for t in pools), min(int((~t).sum()) for t in pools)
        out.append(f"{len(rows)} records, smallest pools {smallest[0]} source, {smallest[1]} target")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", help="comma-separated; default: every package entry")
    parser.add_argument("--records", type=int, default=8000)
    args = parser.parse_args()
    benchmarks = planned_config(ROOT)["benchmarks"]
    names = (
        args.datasets.split(",") if args.datasets else [n for n, s in benchmarks.items() if s["generator"] == "package"]
    )
    for name in names:
        spec = benchmarks[name]
        table = tables.load(name, spec)
        majority, logistic = learnability(table, args.records)
        reported, calibration = capacity(name, spec, table)
        print(
            f"{name}: {len(table.y)} records, d = {table.x.shape[1]}, positive {table.y.mean():.1%}, "
            f"majority {majority:.1%}, logistic regression {logistic:.1%} ({logistic - majority:+.1%}); "
            f"n_source {spec['n_source']}, n_target {spec['n_target']}; reported part: {reported}; "
            f"calibration part: {calibration}",
            flush=True,
        )


if __name__ == "__main__":
    main()
