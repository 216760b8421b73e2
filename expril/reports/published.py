"""A published study (summary/comparison/, `comparison: published`) as the comparison's other
methods: its per-run accuracies and its cells' privacy, read for every method this run does not
compute, once some of its cells, rerun here, were found equal to what it published
(docs/extending.md, "Against the published study")."""

import pandas as pd

from expril import io, settings

RUNS, TABLE = "comparison_runs.csv", "comparison.csv"
PRIVACY = ["dataset", "method", "eps", "column", "eps_spent", "delta", "neighbours", "mechanisms"]


def _runs(folder):
    # The references' setting is empty, which pandas reads as missing.
    return pd.read_csv(f"{folder}/{RUNS}").fillna({"setting": ""})


def accuracies(folder, local):
    """Every published run of the methods not in `local`, the references included."""
    runs = _runs(folder)
    return runs[~runs.method.isin(local)]


def spent(folder, local):
    """The privacy of each published cell of the methods not in `local` (the references spend nothing)."""
    table = pd.read_csv(f"{folder}/{TABLE}")
    return table[~table.method.isin(local)][PRIVACY]


def methods(folder):
    """The published methods, in the published order, the references aside."""
    runs = _runs(folder)
    return [m for m in runs.method.unique() if m not in ("h_star", "h0_star")]


def checked_cells(folder, method, datasets, epsilons):
    """The published cells of `method` (a deterministic one: registry.checking) rerun before mixing,
    the first and the last dataset at the smallest and the largest eps, in the study's first column:
    (dataset, eps text, column, setting suffix)."""
    runs = _runs(folder)
    mine = runs[runs.method == method]
    column = mine.column.iloc[0]
    cells = []
    for dataset, eps in ((datasets[0], min(epsilons)), (datasets[-1], max(epsilons))):
        cell = mine[(mine.dataset == dataset) & (mine.eps == eps) & (mine.column == column)]
        if cell.empty:
            raise ValueError(
                f"{folder}/{RUNS} has no {method} run on {dataset} at eps {settings.format_eps(eps)}: "
                "was it published with this configuration's datasets and eps?"
            )
        setting = cell.setting.iloc[0]
        cells.append((dataset, settings.format_eps(eps), column, "" if setting == "configured" else setting))
    return cells


def check(folder, method, cells, evaluations, out_path):
    """Compare `method`'s cells rerun here (`evaluations`: their evaluation files, per cell) with the
    published runs, run by run as published (6 significant digits), write the comparison and refuse
    any difference, naming the cells."""
    runs = _runs(folder)
    rows = []
    for (dataset, eps, column, _), files in zip(cells, evaluations):
        here = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        there = runs[
            (runs.method == method)
            & (runs.dataset == dataset)
            & (runs.eps == settings.parse_eps(eps))
            & (runs.column == column)
        ].set_index("seed")
        for seed, accuracy in zip(here.seed, here.accuracy):
            published = there.accuracy.get(seed)
            rows.append(
                {
                    "dataset": dataset,
                    "eps": eps,
                    "column": column,
                    "seed": seed,
                    "published": published,
                    "here": accuracy,
                    "equal": published is not None and f"{accuracy:.6g}" == f"{published:.6g}",
                }
            )
    table = pd.DataFrame(rows)
    differ = table[~table.equal]
    if len(differ):
        cells_text = "; ".join(
            f"{method} on {d} at eps {e} ({c}): seeds {sorted(g.seed)}"
            for (d, e, c), g in differ.groupby(["dataset", "eps", "column"])
        )
        raise ValueError(
            f"{folder}: the published cells rerun here differ ({cells_text}); another library version, "
            "another machine or another oracle secret (EXPRIL_ORACLE_SECRET) makes other runs, which "
            "cannot be mixed with the published ones"
        )
    io.save_csv(out_path, table)
