"""The real tables of round 3 (docs/comparison.md, "Real data"): what each benchmark entry of
config.yaml with `generator: package` holds, and whether its label can be learnt at all.

    .venv/bin/python -m benchmarks.real_tables [--datasets vote,credit] [--records 8000]

Per table, printed: its records (after the records missing a value are left out), features (after
the encoding rule), the positive share and the majority class's accuracy; the screen that chose
the tables, a non-private check of learnability: the 5-fold cross-validated accuracy of a logistic
regression on standardised features (scikit-learn) against the majority class, both on the
table's calibration part alone (`calibration`: records no reported run reads; at most `--records`
of them, drawn at random): a table where it does not beat the majority class by 5 points cannot
tell DP methods apart, and is set aside; the records of the reported runs' part and
of the calibration's; and how many runs each part holds: disjoint blocks (`draw: disjoint`), or the
smallest source and target pools over seeds 0-19 and 10000-10019 (`draw: resample`), to compare with
n_source and n_target. Nothing here is a result of the comparison: no DP method runs.

The candidates are config.yaml's package entries (those kept) and CANDIDATES' (those the screen
set aside: --datasets all screens the eleven).
"""

import argparse
from pathlib import Path

import numpy as np
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from snakemake.utils import validate

from expril import datasets, tables
from expril.seeds import rng
from expril.workflow.config import planned_config

ROOT = Path(__file__).resolve().parents[1]
REPORTED, CALIBRATION = range(20), range(10000, 10020)
# The entries the screen set aside, as they were screened (docs/comparison.md, "Real data").
CANDIDATES = ROOT / "benchmarks" / "real_candidates.yaml"


def learnability(name, spec, table, records):
    """Majority-class accuracy and a logistic regression's 5-fold accuracy, on the calibration part."""
    rows, _ = datasets._part(name, spec, len(table.x), CALIBRATION[0])
    if len(rows) > records:
        rows = np.random.default_rng(0).choice(rows, records, replace=False)
    x, y = table.x[rows], table.y[rows]
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
    parser.add_argument(
        "--datasets", help="comma-separated, or 'all' (with the set-aside); default: every package entry"
    )
    parser.add_argument("--records", type=int, default=8000)
    args = parser.parse_args()
    config = planned_config(ROOT)
    kept = [n for n, s in config["benchmarks"].items() if s["generator"] == "package"]
    set_aside = yaml.safe_load(CANDIDATES.read_text())
    config["benchmarks"].update(set_aside)
    validate(config, schema=str(ROOT / "config.schema.yaml"), set_default=True)  # the entries' defaults
    benchmarks = config["benchmarks"]
    names = {None: kept, "all": [*kept, *set_aside]}.get(args.datasets) or args.datasets.split(",")
    for name in names:
        spec = benchmarks[name]
        table = tables.load(name, spec)
        majority, logistic = learnability(name, spec, table, args.records)
        reported, calibration = capacity(name, spec, table)
        print(
            f"{name}: {len(table.y)} records, d = {table.x.shape[1]}, positive {table.y.mean():.1%}, "
            f"calibration part: majority {majority:.1%}, logistic regression {logistic:.1%} "
            f"({logistic - majority:+.1%}); "
            f"n_source {spec['n_source']}, n_target {spec['n_target']}; reported part: {reported}; "
            f"calibration part: {calibration}",
            flush=True,
        )


if __name__ == "__main__":
    main()
