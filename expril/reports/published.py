"""A published study (summary/comparison/, `comparison: published`) as the comparison's other
methods: its per-run accuracies and its cells' privacy, read for every method this run does not
compute, once some of its cells, rerun here, were found to pair with what it published and to
agree with it (docs/extending.md, "Against the published study")."""

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from expril import io, settings
from expril.reports import pairing

RUNS, TABLE = "comparison_runs.csv", "comparison.csv"
REFERENCES = ("h_star", "h0_star")
PRIVACY = ["dataset", "method", "eps", "column", "eps_spent", "delta", "neighbours", "mechanisms"]
# The equivalence test's margin on a cell's mean paired difference of test accuracy, and its level,
# the comparison's (docs/extending.md, "Against the published study": why these).
MARGIN, ALPHA = 0.01, 0.05


def runs(folder):
    # The references' setting is empty, which pandas reads as missing.
    return pd.read_csv(f"{folder}/{RUNS}").fillna({"setting": ""})


def accuracies(folder, local):
    """Every published run of the methods not in `local`, the references included."""
    read = runs(folder)
    return read[~read.method.isin(local)]


def spent(folder, local):
    """The privacy of each published cell of the methods not in `local` (the references spend nothing)."""
    table = pd.read_csv(f"{folder}/{TABLE}")
    return table[~table.method.isin(local)][PRIVACY]


def columns(folder):
    """The columns the study reports its methods in (tuned, as configured), the references' aside."""
    read = runs(folder)
    return sorted(set(read[~read.method.isin(REFERENCES)].column))


def methods(folder):
    """The published methods, in the published order, the references aside."""
    read = runs(folder)
    return [m for m in read.method.unique() if m not in REFERENCES]


def bins_rule(folders):
    """The noise the published study's bins are sized for (config `bins: sized_for`), as its
    study.yaml records it in each currency's folder of `folders`; without one, Laplace's: round 2
    predates the record and the Gaussian sizing (docs/extending.md, "Against the published study")."""
    recorded = {
        yaml.safe_load(path.read_text())["bins"] if (path := Path(f) / pairing.STUDY).exists() else "laplace"
        for f in folders
    }
    if len(recorded) != 1 or not recorded <= {"drawn", "laplace"}:
        raise ValueError(
            f"{', '.join(map(str, folders))}: {pairing.STUDY}: bins: one of 'drawn' or 'laplace' for every "
            f"currency (none: 'laplace'), got {sorted(recorded)}"
        )
    return recorded.pop()


def checked_cells(study, method, datasets, epsilons, where):
    """The cells of `method` (registry.checking) in `study` (its runs, a frame or dicts: method,
    dataset, eps, column, setting) that a rerun checks against the published study, from `where`: the first and the last
    dataset at the smallest and the largest eps, in the study's first column: (dataset, eps text,
    column, setting suffix). The checking method trains networks, so a host whose MKL takes another
    code path than the published study's reruns them as other draws (the equivalence test's case)."""
    study = pd.DataFrame(study, columns=["method", "dataset", "eps", "column", "setting"])
    mine = study[study.method == method]
    column = mine.column.iloc[0] if len(mine) else None
    cells = []
    for dataset, eps in ((datasets[0], min(epsilons)), (datasets[-1], max(epsilons))):
        cell = mine[(mine.dataset == dataset) & (mine.eps == eps) & (mine.column == column)]
        if cell.empty:
            raise ValueError(
                f"{where} has no {method} run on {dataset} at eps {settings.format_eps(eps)}: "
                "was it published with this configuration's datasets and eps?"
            )
        setting = cell.setting.iloc[0]
        cells.append((dataset, settings.format_eps(eps), column, "" if setting == "configured" else setting))
    return cells


def equivalence(published, here, n_test, margin=MARGIN):
    """p of two one-sided paired t-tests (TOST) that the mean difference of test accuracy between
    the runs here and the published ones (their correct counts, on n_test records) lies within
    +-margin: the larger one-sided p. Pairs that all differ by the same amount leave no variance:
    0 if that amount is within the margin, else 1."""
    from scipy import stats  # here: the workflow imports this module when it plans

    d = (np.asarray(here, dtype=float) - np.asarray(published, dtype=float)) / n_test
    if np.all(d == d[0]):
        return 0.0 if abs(d[0]) < margin else 1.0
    above = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
    below = stats.ttest_1samp(d, margin, alternative="less").pvalue
    return float(max(above, below))


def _refuse(folder, what, cells_text, why):
    raise ValueError(f"{folder}: the published cells rerun here {what} ({cells_text}); {why}")


def check_pairing(folder, method, digests, out_path):
    """Compare the files of `method`'s checked cells that pair each run here with its published one
    (`digests`: the published study's pairing.csv and this rerun's) bit for bit: write the paired
    digests, or refuse any that differs or that the published study lacks, naming the cells, seeds
    and parts."""
    published_digests, here = (pairing.read(path) for path in digests)
    differ = pairing.differences(published_digests, here)
    if len(differ):
        _refuse(
            folder,
            "do not pair with the published runs",
            "; ".join(
                f"{method} on {d} at eps {e} ({c}): {part} of seeds {sorted(g.seed)}"
                for (d, e, c, part), g in differ.groupby(["dataset", "eps", "column", "part"], sort=False)
            ),
            "their data, splits, bins, noise or ledger differ from the published study's (another data "
            "configuration, another oracle secret: EXPRIL_ORACLE_SECRET, or another release), and runs "
            "made from other data or noise cannot be mixed with the published ones",
        )
    io.save_csv(out_path, here)


def check(folder, method, cells, evaluations, n_test, hosts, out_path, report_path):
    """Check `method`'s cells rerun here, once they pair with the published runs (check_pairing),
    against the published study `folder`: the runs' correct counts (`evaluations`: the cells'
    files, per cell; `n_test`: their test split sizes), equal ("identical") or equivalent by the
    paired TOST (`equivalence`, every cell at level ALPHA: "equivalent on this host"). Write each
    run's counts and each cell's verdict, naming both `hosts` (the published study's host.yaml and
    this one's); refuse anything else, naming the cells."""
    from expril.reports import statistics  # here: it imports scipy, which planning does not need

    published = runs(folder)
    rows = []
    for (dataset, eps, column, _), files, n in zip(cells, evaluations, n_test):
        here = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        there = published[
            (published.method == method)
            & (published.dataset == dataset)
            & (published.eps == settings.parse_eps(eps))
            & (published.column == column)
        ].set_index("seed")
        for seed, accuracy in zip(here.seed, here.accuracy):
            rows.append(
                {
                    "dataset": dataset,
                    "eps": eps,
                    "column": column,
                    "seed": seed,
                    "n_test": n,
                    "published": there.correct.get(seed, np.nan),
                    "here": int(statistics.correct(accuracy, n)),
                }
            )
    table = pd.DataFrame(rows)
    table["difference"] = table.here - table.published
    verdicts = [_verdict(cell, group) for cell, group in table.groupby(["dataset", "eps", "column"], sort=False)]
    refused = [v for v in verdicts if v["verdict"] == "refused"]
    if refused:
        _refuse(
            folder,
            "differ",
            "; ".join(f"{method} on {v['dataset']} at eps {v['eps']} ({v['column']}): {v['text']}" for v in refused),
            f"not shown within +-{MARGIN:g} of accuracy at level {ALPHA} (docs/extending.md): their data and noise "
            "pair with the published runs, but another library version or training configuration makes "
            "other networks, which cannot be mixed with the published ones",
        )
    io.save_csv(out_path, table)
    io.save_text(report_path, _report(method, verdicts, hosts))


def _verdict(cell, group):
    """A cell's verdict: identical, equivalent (TOST p < ALPHA) or refused; its counts in words."""
    dataset, eps, column = cell
    verdict = {"dataset": dataset, "eps": eps, "column": column, "runs": len(group)}
    missing = sorted(group.seed[group.published.isna()])
    if missing:
        return verdict | {"verdict": "refused", "text": f"seeds {missing} not published"}
    differ = group[group.difference != 0]
    if differ.empty:
        return verdict | {"verdict": "identical", "text": f"all {len(group)} runs equal"}
    p = equivalence(group.published, group.here, group.n_test.iloc[0])
    text = (
        f"{len(differ)} of {len(group)} runs differ, by {int(differ.difference.min()):+d} to "
        f"{int(differ.difference.max()):+d} of {group.n_test.iloc[0]} test records (seeds "
        f"{sorted(differ.seed)}), mean difference {100 * group.difference.mean() / group.n_test.iloc[0]:+.3f} "
        f"points, TOST p = {p:.3g}"
    )
    return verdict | {"verdict": "equivalent" if p < ALPHA else "refused", "text": text}


SIDES = ("published", "here")


def _report(method, verdicts, hosts):
    overall = "identical" if all(v["verdict"] == "identical" for v in verdicts) else "equivalent on this host"
    lines = [
        f"# The published study's {method} cells rerun here: {overall}",
        "",
        *(f"- {side}: {pairing.describe(yaml.safe_load(Path(path).read_text()))}" for side, path in zip(SIDES, hosts)),
        f"- equivalence: paired TOST on correct counts, margin +-{MARGIN:g} of accuracy, level {ALPHA}",
        "",
        *(
            f"- {method} on {v['dataset']} at eps {v['eps']} ({v['column']}): {v['verdict']}: {v['text']}"
            for v in verdicts
        ),
    ]
    return "\n".join(lines) + "\n"
