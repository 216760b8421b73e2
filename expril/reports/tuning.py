"""Tuning (docs/comparison.md, "Tuning"): every setting of every compared method's grid
(config/tuning.yaml) scored on calibration runs whose seeds are disjoint from the reported runs',
and the setting each method uses at each dataset and eps: the highest mean calibration accuracy,
a tie going to the grid's earlier setting (as configured first).

Nothing the reported runs write reaches the choice: the selection reads the calibration runs'
evaluation files only, and refuses any seed below the calibration's first. A dataset whose runs
resample one record pool (expril.reports.design: CTG, any csv file) has no calibration runs of its
own: their records would be the reported runs' private records, and a choice scored on them is
a release no DP bound covers. It takes, per method and eps, the setting with the best average rank
over the calibrated datasets (transfer()), so none of its records reaches the choice.
"""

import math

import yaml

from expril import io, settings
from expril.reports import comparison
from expril.workflow import grids

COLUMNS = ["method", "dataset", "eps", "setting", "seed", "accuracy", "positive_share"]


def calibration_table(runs, iterations, first_seed):
    """Every calibration run's accuracy per method, dataset, eps and setting ('configured' for as
    configured, else its suffix)."""
    table = comparison.read_runs(runs, iterations)
    if (table.seed < first_seed).any():
        raise ValueError(
            f"the calibration table holds seeds below {first_seed}, the calibration's first: "
            f"{sorted(set(table.seed[table.seed < first_seed]))[:5]}"
        )
    return table[COLUMNS]


def _means(table):
    """Mean calibration accuracy per method, dataset, eps and setting, rounded to 1e-9 so that the
    order of a float sum cannot break a tie."""
    return table.groupby(["method", "dataset", "eps", "setting"], sort=False).accuracy.mean().round(9)


def _first_best(scores, order):
    """The setting of `order` with the highest score, a tie to the earliest."""
    return max(order, key=lambda s: (scores.get(s, -math.inf), -order.index(s)))


def transfer(means, order):
    """{(method, eps): setting} for the datasets without calibration runs of their own, from the
    calibrated datasets' `means` (_means()): per method and calibrated eps, the setting with the
    best (lowest) average rank over those datasets (Demsar 2006: ranks, not accuracies, compare
    across datasets), ties in a dataset averaged, a tie in the average to the earliest in `order`.
    Settings a dataset did not run (a method that repeats another's runs there: Method.bases) leave
    it out of that method's ranks."""
    chosen = {}
    for (method, eps), group in means.groupby(level=[0, 2], sort=False):
        ranks = group.droplevel([0, 2]).unstack("setting").rank(axis=1, ascending=False, method="average")
        chosen[method, eps] = _first_best(-ranks.mean(), order[method])
    return chosen


def select(table, order, epsilons, resampled=None):
    """{method: {dataset: {eps text: setting suffix}}}: per method, calibrated dataset and eps the
    setting with the highest mean calibration accuracy, a tie to the earliest in `order` ({method:
    its settings in the grid's order}); on the datasets `resampled` lists for a method ({method:
    datasets}, none with a calibration run), the transferred setting (transfer()). Every other eps
    of `epsilons` (texts) takes the choice of the nearest calibrated one (grids.nearest)."""
    resampled = resampled or {}
    scored = sorted({d for datasets in resampled.values() for d in datasets} & set(table.dataset))
    if scored:
        raise ValueError(
            f"calibration runs on {scored}, whose runs resample the reported runs' record pool: "
            "their choice is transferred, never scored on their records"
        )
    means = _means(table)
    best = {
        (method, dataset, eps): _first_best(group.droplevel([0, 1, 2]), order[method])
        for (method, dataset, eps), group in means.groupby(level=[0, 1, 2], sort=False)
    }
    transferred = transfer(means, order)
    for method, datasets in resampled.items():
        if datasets and not any(m == method for m, _ in transferred):
            raise ValueError(
                f"{method}: no calibrated dataset to transfer the choice on {datasets} from (their runs resample "
                "one record pool); tune them beside datasets that draw fresh data"
            )
    best |= {(m, d, e): s for (m, e), s in transferred.items() for d in resampled.get(m, ())}
    calibrated = sorted({eps for _, _, eps in best})
    choice = {}
    for method, dataset in dict.fromkeys((m, d) for m, d, _ in best):
        chosen = {e: best[method, dataset, grids.nearest(settings.parse_eps(e), calibrated)] for e in epsilons}
        choice.setdefault(method, {})[dataset] = {e: "" if s == "configured" else s for e, s in chosen.items()}
    return choice


def markdown(table, choice):
    """The chosen settings, and per method, dataset and eps in {1, inf} the best and the worst
    setting on the calibration runs with their mean accuracies."""
    if table.empty:
        return "No compared method runs in this currency: nothing was calibrated.\n"
    means = table.groupby(["method", "dataset", "eps", "setting"], sort=False).accuracy.mean().mul(100)
    seeds = sorted(set(table.seed))
    lines = [
        f"Calibration: seeds {seeds[0]}–{seeds[-1]}, every setting of each method's grid "
        "(config/tuning.yaml); the setting chosen per dataset and ε has the highest mean test accuracy "
        "there (ties: the grid's earlier, as configured first). `configured`: as configured.",
        "",
    ]
    transferred = sorted({d for datasets in choice.values() for d in datasets} - set(table.dataset))
    if transferred:
        lines += [
            f"{', '.join(transferred)}: no calibration run (runs that resample one record pool); each method "
            "takes the setting with the best average rank over the calibrated datasets at the same ε.",
            "",
        ]
    for method, datasets in choice.items():
        eps_values = sorted({settings.parse_eps(e) for d in datasets.values() for e in d})
        lines += [
            f"**{comparison.NAMES[method]}**",
            "",
            "| Dataset | " + " | ".join(comparison.eps_text(e) for e in eps_values) + " |",
            "|---|" + "---|" * len(eps_values),
        ]
        for dataset, chosen in datasets.items():
            lines.append(
                f"| {dataset} | "
                + " | ".join(f"`{chosen.get(settings.format_eps(e), 'n/a') or 'configured'}`" for e in eps_values)
                + " |"
            )
        lines += ["", "| Dataset | ε | best (mean %) | worst (mean %) | as configured |", "|---|---|---|---|---|"]
        for dataset in datasets:
            for eps in (1.0, math.inf):
                if (method, dataset, eps) not in means.index.droplevel(3):
                    continue
                cell = means.loc[(method, dataset, eps)]
                lines.append(
                    f"| {dataset} | {comparison.eps_text(eps)} | `{cell.idxmax()}` ({cell.max():.1f}) | "
                    f"`{cell.idxmin()}` ({cell.min():.1f}) | {cell.get('configured', math.nan):.1f} |"
                )
        lines.append("")
    return "\n".join(lines)


def write(runs, order, iterations, first_seed, epsilons, resampled, out):
    """The calibration table, the choice (YAML) and its report to `out`'s paths; `order`: each
    method's settings in its grid's order ('' as configured); `resampled`: select()'s."""
    table = calibration_table(runs, iterations, first_seed)
    order = {m: [s or "configured" for s in names] for m, names in order.items()}
    choice = select(table, order, epsilons, resampled)
    io.save_csv(out["calibration"], table)
    io.save_text(
        out["choice"],
        "# Written by `snakemake tune` (expril/reports/tuning.py): the tuned setting of "
        "each method per dataset and eps\n# ('': as configured); the comparison reads it.\n"
        + yaml.safe_dump(choice, sort_keys=False),
    )
    io.save_text(out["markdown"], markdown(table, choice))
