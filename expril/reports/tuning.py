"""Tuning (docs/comparison.md, "Tuning"): every setting of every compared method's grid
(config/tuning.yaml) scored on calibration runs whose seeds are disjoint from the reported runs',
and the setting each method uses at each dataset and eps: the highest mean calibration accuracy,
a tie going to the grid's earlier setting (as configured first), or, where config/tuning.yaml has a
`selection`, round 3's rules (below).

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
    _refuse_scored(table, resampled)
    means = _means(table)
    best = {
        (method, dataset, eps): _first_best(group.droplevel([0, 1, 2]), order[method])
        for (method, dataset, eps), group in means.groupby(level=[0, 1, 2], sort=False)
    }
    return _choice(best | _transferred(transfer(means, order), resampled), epsilons)


def _refuse_scored(table, resampled):
    """Refuse calibration runs on a dataset whose choice is transferred (`resampled`: {method:
    datasets})."""
    scored = sorted({d for datasets in resampled.values() for d in datasets} & set(table.dataset))
    if scored:
        raise ValueError(
            f"calibration runs on {scored}, whose runs resample the reported runs' record pool: "
            "their choice is transferred, never scored on their records"
        )


def _transferred(transferred, resampled):
    """{(method, dataset, eps): setting} on each method's `resampled` datasets from its transferred
    {(method, eps): setting}; a method with such datasets and nothing to transfer is refused."""
    for method, datasets in resampled.items():
        if datasets and not any(m == method for m, _ in transferred):
            raise ValueError(
                f"{method}: no calibrated dataset to transfer the choice on {datasets} from (their runs resample "
                "one record pool); tune them beside datasets that draw fresh data"
            )
    return {(m, d, e): s for (m, e), s in transferred.items() for d in resampled.get(m, ())}


def _choice(best, epsilons):
    """{method: {dataset: {eps text: suffix}}} from {(method, dataset, calibrated eps): setting}:
    every eps of `epsilons` takes the nearest calibrated eps's setting (grids.nearest)."""
    calibrated = sorted({eps for _, _, eps in best})
    choice = {}
    for method, dataset in dict.fromkeys((m, d) for m, d, _ in best):
        chosen = {e: best[method, dataset, grids.nearest(settings.parse_eps(e), calibrated)] for e in epsilons}
        choice.setdefault(method, {})[dataset] = {e: "" if s == "configured" else s for e, s in chosen.items()}
    return choice


# How each selection chose (markdown()): round 1 and 2's highest mean, round 3's rules.
RULES = {
    False: (
        "the setting chosen per dataset and ε has the highest mean test accuracy there (ties: the grid's "
        "earlier, as configured first)",
        "takes the setting with the best average rank over the calibrated datasets at the same ε",
    ),
    True: (
        "the setting chosen per dataset and ε follows round 3's rules (docs/comparison.md, \"Selection (round "
        '3)"): among the settings that collapsed in the fewest runs, those within two standard errors of the '
        "leader's mean (at most 3, `finalists.yaml`) ran 15 more seeds, and the simplest within one standard "
        "error of the leader on all their runs is chosen. The means below are the first seeds', every setting "
        "on equal runs",
        "takes, among the settings that collapsed in the fewest runs there, the best average rank over the "
        "calibrated datasets at the same ε, never one that ranks below the smaller ε's choice on any of them",
    ),
}


def markdown(table, choice, round3=False):
    """The chosen settings, and per method, dataset and eps in {1, inf} the best and the worst
    setting on the calibration runs (`table`; round 3's: its first pass) with their mean
    accuracies; `round3`: the rule that chose (RULES)."""
    if table.empty:
        return "No compared method runs in this currency: nothing was calibrated.\n"
    means = table.groupby(["method", "dataset", "eps", "setting"], sort=False).accuracy.mean().mul(100)
    seeds = sorted(set(table.seed))
    chose, transfers = RULES[round3]
    lines = [
        f"Calibration: seeds {seeds[0]}–{seeds[-1]}, every setting of each method's grid "
        f"(config/tuning.yaml); {chose}. `configured`: as configured.",
        "",
    ]
    transferred = sorted({d for datasets in choice.values() for d in datasets} - set(table.dataset))
    if transferred:
        lines += [
            f"{', '.join(transferred)}: no calibration run (runs that resample one record pool); each method "
            f"{transfers}.",
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


def write(runs, order, iterations, first_seed, first_runs, epsilons, resampled, out, selection=None):
    """The calibration table, the choice (YAML) and its report to `out`'s paths; `order`: each
    method's settings in its grid's order ('' as configured); `resampled`: select()'s; `selection`
    (config/tuning.yaml's): round 3's rules (select_round3) with its `simpler`, else select();
    `first_runs`: the calibration's seeds per setting from `first_seed`, before any finalist's."""
    table = calibration_table(runs, iterations, first_seed)
    order = {m: [s or "configured" for s in names] for m, names in order.items()}
    chosen, first = {}, table
    if selection is None:
        choice = select(table, order, epsilons, resampled)
    else:
        first = first_pass(table, first_seed, first_runs)
        choice = select_round3(table, first, order, epsilons, resampled or {}, selection["simpler"])
        chosen = finalists(first, order, selection["finalists"])
    rows = [
        {"method": m, "dataset": d, "eps": settings.format_eps(e), "setting": "" if s == "configured" else s}
        for (m, d, e), names in chosen.items()
        for s in names
    ]
    io.save_text(
        out["finalists"],
        "# Written by `snakemake tune` (expril/reports/tuning.py): the settings that run the\n"
        "# calibration's extra seeds (round 3's more-seeds rule; '': as configured).\n"
        + yaml.safe_dump(rows, sort_keys=False),
    )
    io.save_csv(out["calibration"], table)
    io.save_text(
        out["choice"],
        "# Written by `snakemake tune` (expril/reports/tuning.py): the tuned setting of "
        "each method per dataset and eps\n# ('': as configured); the comparison reads it.\n"
        + yaml.safe_dump(choice, sort_keys=False),
    )
    io.save_text(out["markdown"], markdown(first, choice, round3=selection is not None))


# ---------------------------------------------------------------- round 3's selection rules
# docs/comparison.md, "Selection (round 3)": collapses count against a setting, the best few close
# settings get more calibration seeds, a one-standard-error rule prefers the simpler setting, and
# on the datasets without calibration runs a monotone transfer. Fixed before round 3's calibration.


def _cells(table):
    """Per (method, dataset, eps, setting): runs, collapsed runs, mean accuracy (rounded as _means)
    and its standard error (sample std / sqrt(runs); 0 for one run)."""
    runs = table.assign(collapsed=comparison.collapsed(table.positive_share))
    cells = runs.groupby(["method", "dataset", "eps", "setting"], sort=False).agg(
        runs=("accuracy", "size"), collapsed=("collapsed", "sum"), mean=("accuracy", "mean"), std=("accuracy", "std")
    )
    cells["mean"] = cells["mean"].round(9)
    cells["se"] = (cells["std"].fillna(0) / cells.runs**0.5).round(9)
    return cells.drop(columns="std")


def _eligible(cell):
    """The settings of one cell (a frame indexed by setting) that collapsed in the fewest runs: those
    that never did, where any never did."""
    return cell[cell.collapsed == cell.collapsed.min()]


def _leader(cell, order):
    """The setting with the highest mean, a tie to the earliest in `order`."""
    return _first_best(cell["mean"].to_dict(), [s for s in order if s in cell.index])


def first_pass(table, first_seed, runs):
    """The calibration table's first `runs` seeds from `first_seed`, which every setting ran: the
    finalists' extra seeds left out, so that rules comparing every setting compare them on equal
    runs, and the finalists, once their extra seeds ran, stay the same."""
    return table[table.seed < first_seed + runs]


def finalists(table, order, count):
    """{(method, dataset, eps): [settings]}: per calibrated cell of `table` (first_pass()), where
    settings are close, the best `count` of them, which get more calibration seeds (more_runs):
    among the settings that collapsed in the fewest runs, the leader by mean and those whose mean is
    within two standard errors of the leader's (its runs' std / sqrt(runs)), by mean, ties to the
    grid's order. A cell whose leader stands alone has none."""
    chosen = {}
    for key, cell in _cells(table).groupby(level=[0, 1, 2], sort=False):
        cell = _eligible(cell.droplevel([0, 1, 2]))
        ranked = sorted(cell.index, key=lambda s: (-cell.at[s, "mean"], order[key[0]].index(s)))
        lead = ranked[0]
        close = [s for s in ranked if cell.at[s, "mean"] >= cell.at[lead, "mean"] - 2 * cell.at[lead, "se"]]
        if len(close) > 1:
            chosen[key] = close[:count]
    return chosen


def more_runs(finalists, first_seed, runs, extra):
    """The plan hook of the more-seeds rule: {(method, dataset, eps, setting): seeds} that each
    finalist (finalists()) runs beyond the calibration's `runs` seeds from `first_seed`: the next
    `extra` seeds, disjoint from the first ones and from the reported runs."""
    seeds = list(range(first_seed + runs, first_seed + runs + extra))
    return {(*key, s): seeds for key, settings_ in finalists.items() for s in settings_}


def simplicity(setting, simpler):
    """A setting's place in the one-standard-error rule's order (smaller: simpler): per axis that
    `simpler` orders ({axis: its values, simplest first}, config/tuning.yaml), in that order, the
    index of the setting's value ('configured' where the suffix leaves the axis out)."""
    values = dict(part.split("=", 1) for part in setting.split("~")[1:]) if simpler else {}
    return tuple(
        [str(v) for v in ranking].index(str(values.get(axis, grids.CONFIGURED))) for axis, ranking in simpler.items()
    )


def choose(cell, order, simpler):
    """One calibrated cell's setting (`cell`: _cells() of one method, dataset and eps, indexed by
    setting): among the settings with the most runs (the finalists, once their extra seeds ran),
    those that collapsed in the fewest runs; their leader by mean; then the simplest (simplicity(),
    ties to the grid's order) whose mean is within one standard error of the leader's."""
    cell = _eligible(cell[cell.runs == cell.runs.max()])
    lead = _leader(cell, order)
    near = [s for s in order if s in cell.index and cell.at[s, "mean"] >= cell.at[lead, "mean"] - cell.at[lead, "se"]]
    return min(near, key=lambda s: (simplicity(s, simpler), order.index(s)))


def transfer_monotone(table, order):
    """{(method, eps): setting} for the datasets without calibration runs, from `table`
    (first_pass(): every setting on equal runs): per method and calibrated eps, among the settings
    that collapsed in the fewest calibration runs over the calibrated datasets, the best average
    rank (transfer()); but at each finite eps after the smallest, the candidates are the previous
    eps's choice (where it is still among the fewest collapses) and the settings that rank at least
    as high as it on every calibrated dataset. So a larger eps never takes a setting that the
    calibration ranks below the smaller eps's choice anywhere. eps = inf, a reference, is chosen
    alone."""
    cells = _cells(table)
    chosen = {}
    for method, frame in cells.groupby(level=0, sort=False):
        previous = None
        for eps in sorted(set(frame.index.get_level_values(2))):
            at = frame.xs(eps, level=2).droplevel(0)  # (dataset, setting)
            totals = at.groupby(level="setting").collapsed.sum()
            eligible = set(totals[totals == totals.min()].index)
            means = at["mean"].unstack("setting")[sorted(eligible, key=order[method].index)]
            ranks = means.rank(axis=1, ascending=False, method="average")
            allowed = list(ranks.columns)
            if previous in eligible and math.isfinite(eps):
                unranked = ranks.isna()  # a dataset where either did not run leaves the pair unordered
                allowed = [
                    s for s in allowed if ((ranks[s] <= ranks[previous]) | unranked[s] | unranked[previous]).all()
                ]
            best = _first_best((-ranks[allowed].mean()).to_dict(), [s for s in order[method] if s in allowed])
            chosen[method, eps] = best
            if math.isfinite(eps):
                previous = best
    return chosen


def select_round3(table, first, order, epsilons, resampled, simpler):
    """select()'s {method: {dataset: {eps text: suffix}}} by round 3's rules: choose() on every
    calibrated cell of `table` (the finalists' extra seeds included), transfer_monotone() of
    `first` (first_pass() of it) on the datasets `resampled` lists (no calibration run)."""
    _refuse_scored(table, resampled)
    best = {
        key: choose(cell.droplevel([0, 1, 2]), order[key[0]], simpler)
        for key, cell in _cells(table).groupby(level=[0, 1, 2], sort=False)
    }
    return _choice(best | _transferred(transfer_monotone(first, order), resampled), epsilons)
