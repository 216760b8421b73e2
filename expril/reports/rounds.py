"""What each round of the comparison changed, cell by cell. Each dataset and eps has a verdict:
its leader(s) and mark (comparison.leaders, tuned column). A round's walk reads the earlier round as
published, then gives up its rules one at a time, in the order of its steps, so that each change of
a verdict is put down to the step that made it.

Round 2 (issue 36; ROUND2_STEPS), round 1 against round 2:
- `round 1`: the round-1 study as published.
- `tuning`: round 1's rules on round 2's runs: its currency mix (the methods of the pure currency
  at delta = 0 beside the others at 1e-5), Wilcoxon on float accuracies everywhere, eps = inf
  tested and led. What changed here is round 2's tuning (12 settings per method, CTG's settings by
  transfer: points 2 and 5) and its code (DP-SGD's last bits, AIM's estimator).
- `infinity`: eps = inf a reference, out of the tests, Holm's family and the leaders (point 3).
- `tests`: the tests that fit how runs are drawn, on counts of correct records (points 4 and 6).
- `currency`: the headline currency's own table, one (eps, delta) for every method (point 1):
  round 2 as published.

Round 3 (issue 49; ROUND3_STEPS), round 2 against round 3 in each currency, on round 2's cells:
- `round 2`: round 2 as published.
- `h0*`: round 3's rule on round 2's runs: a cell where no method beats h0*, the majority class, is
  no one's lead (point 4).
- `runs`: round 3's runs of round 2's datasets, their tests alone in Holm's family: its selection
  rules, the bins sized for the noise drawn and its code (points 2, 3 and 5).
- `round 3`: Holm's family over every dataset round 3 ran, the real tables too (point 1): round 3
  as published.
"""

import numpy as np
import pandas as pd

from expril import io
from expril.reports import comparison
from expril.reports.design import Design

ROUND2_STEPS = {
    "round 1": "round 1 as published",
    "tuning": "2, 5: round 2's tuning (and code)",
    "infinity": "3: ε = ∞ a reference",
    "tests": "4, 6: tests that fit the runs, ties",
    "currency": "1: one (ε, δ) per table",
}
ROUND3_STEPS = {
    "round 2": "round 2 as published",
    "h0*": "4: no lead below h0*",
    "runs": "2, 3, 5: round 3's selection, bins and code",
    "round 3": "1: Holm over the real tables' tests too",
}
NO_LEAD = "no lead"
REFERENCE = "reference"
ABSENT = "not run"  # a cell of round 2 that round 1 did not run
# Round 1 compared accuracies as floats: a run's accuracy as a count out of one test record.
FLOATS = Design(n_test=1, n_train=1, resampled=False)


def everything(frame):
    """Round 1 contested every eps, inf included."""
    return frame


def cell_table(runs):
    """The cells' means and collapse flags (comparison.comparison_table) of counted runs read back
    from CSV (a reference's empty setting read as NaN); no ledger."""
    runs = runs.assign(setting=runs.setting.fillna(""))
    keys = ["dataset", "method", "eps", "column"]
    spent = runs[keys].drop_duplicates().assign(eps_spent=np.nan, delta=np.nan, neighbours="", mechanisms="")
    return comparison.comparison_table(runs, spent)


def verdicts(table, tests, methods, runs, cells=comparison.contested, unled=False):
    """Each cell's verdict: its leaders' names and mark ('DP-SGD ▲'), ⊘ where every leader
    collapsed; a method that repeats its base's runs is left out (comparison.plain_repeats), as in
    the report. `unled`: round 3's rule, a cell where no method's mean beats h0* is no one's lead
    ('no lead (DP-MERF)')."""
    top = comparison.leaders(
        comparison.without(table, comparison.plain_repeats(runs)), methods, comparison.TUNED, tests, cells
    )
    below = comparison.unled(table, methods, comparison.TUNED) if unled else set()
    return pd.Series(
        [
            f"{NO_LEAD} ({row.methods})"
            if row.Index in below
            else " ".join(part for part in (row.methods, row.mark, "⊘" if row.collapsed else "") if part)
            for row in top.itertuples()
        ],
        index=top.index,
        dtype=object,
    )


def float_verdicts(runs, methods, cells):
    """Round 1's statistics on `runs` (comparison_runs.csv's columns): means and Wilcoxon tests of
    the float accuracies, on the rows `cells` keeps (Holm over their tests)."""
    floats = runs.assign(n_test=1, correct=runs.accuracy)
    tests = comparison.paired_tests(floats, comparison.TUNED, dict.fromkeys(runs.dataset, FLOATS), cells=cells)
    return verdicts(cell_table(floats), tests, methods, runs, cells), tests


def current_verdicts(runs, designs, methods, unled=False):
    """Round 2's statistics on `runs`: counts of correct records, each dataset's test, inf a
    reference (`unled`: as verdicts())."""
    counted = comparison.counted(runs[comparison.RUN_COLUMNS], designs)
    tests = comparison.paired_tests(counted, comparison.TUNED, designs)
    return verdicts(cell_table(counted), tests, methods, runs, unled=unled), tests


def mixed(headline, pure):
    """Round 1's currency mix of round 2's runs: each method of the pure currency's table at
    delta = 0, the others (and the references) from the headline's."""
    pure_methods = set(pure.method) - set(comparison.REFERENCES)
    return pd.concat([pure[pure.method.isin(pure_methods)], headline[~headline.method.isin(pure_methods)]])


def cells_of(runs):
    """The (dataset, eps) cells a round ran, as an index."""
    return pd.MultiIndex.from_frame(runs[["dataset", "eps"]].drop_duplicates())


def walk(steps, names, cells):
    """Every cell of `cells` at each step: its verdict where the step led it, else a reference at
    eps = inf and not run elsewhere; the steps that changed it (`moved_by`); and each step's count
    of significant tests. `steps`: {step: (verdicts, tests)} in the order of `names`, a *_STEPS."""
    frame = pd.DataFrame({step: verdict for step, (verdict, _) in steps.items()}).reindex(cells)
    infinite = np.isinf(frame.index.get_level_values("eps"))
    frame.loc[infinite] = frame.loc[infinite].fillna(REFERENCE)
    frame = frame.fillna(ABSENT)
    keys = list(names)
    frame["moved_by"] = [
        "; ".join(names[b] for a, b in zip(keys, keys[1:]) if row[a] != row[b]) for _, row in frame.iterrows()
    ]
    significant = {step: int((tests.p_holm < comparison.LEVEL).sum()) for step, (_, tests) in steps.items()}
    return frame.rename_axis(["dataset", "eps"]).reset_index(), significant


def changes(round1, headline, pure, designs, methods):
    """Round 2's walk (ROUND2_STEPS) on round 2's cells. `round1`: its (comparison.csv,
    comparison_tests.csv, comparison_runs.csv); `headline`, `pure`: round 2's comparison_runs.csv
    of each currency."""
    table1, tests1, runs1 = round1
    both = mixed(headline, pure)
    cells = cells_of(headline)
    # Round 1 led every cell it ran, eps = inf included.
    first = verdicts(table1, tests1, methods, runs1, everything).reindex(cells).fillna(ABSENT)
    steps = {
        "round 1": (first, tests1),
        "tuning": float_verdicts(both, methods, everything),
        "infinity": float_verdicts(both, methods, comparison.contested),
        "tests": current_verdicts(both, designs, methods),
        "currency": current_verdicts(headline, designs, methods),
    }
    return walk(steps, ROUND2_STEPS, cells)


def round3_changes(round2, round3, designs, methods):
    """Round 3's walk (ROUND3_STEPS) in one currency, on round 2's cells; `round2`, `round3`: each
    round's comparison_runs.csv of the currency."""
    shared = round3[round3.dataset.isin(set(round2.dataset))]
    steps = {
        "round 2": current_verdicts(round2, designs, methods),
        "h0*": current_verdicts(round2, designs, methods, unled=True),
        "runs": current_verdicts(shared, designs, methods, unled=True),
        "round 3": current_verdicts(round3, designs, methods, unled=True),
    }
    return walk(steps, ROUND3_STEPS, cells_of(round2))


def moved_lines(frame, significant, datasets, names, labels):
    """The cells whose verdict changed from the walk's first step to its last, with the steps that
    moved them, and per step the cells it moved and the significant tests; `labels`: the first and
    last steps' column names."""
    keys = list(names)
    order = {d: i for i, d in enumerate(datasets)}
    moved = frame[frame[keys[0]] != frame[keys[-1]]].sort_values(
        ["dataset", "eps"], key=lambda c: c.map(order) if c.name == "dataset" else c
    )
    lines = [f"| Dataset | ε | {labels[0]} | {labels[1]} | moved by |", "|---|---|---|---|---|"]
    lines += [
        f"| {r.dataset} | {comparison.eps_text(r.eps)} | {r[keys[0]]} | {r[keys[-1]]} | {r.moved_by} |"
        for _, r in moved.iterrows()
    ]
    lines += ["", "| step | cells it moved | significant tests (Holm, 0.05) |", "|---|---|---|"]
    for a, b in zip([None] + keys, keys):
        count = "" if a is None else str(int((frame[a] != frame[b]).sum()))
        lines.append(f"| {names[b]} | {count} | {significant[b]} |")
    return len(moved), lines


LEGEND = "tuned column: the leader, ▲/★ from the paired tests against C-ExPriL, ⊘ collapsed"


def markdown(frame, significant, datasets):
    """Round 2's walk: round 1 against round 2's headline table."""
    count, table = moved_lines(frame, significant, datasets, ROUND2_STEPS, ("round 1", "round 2"))
    lines = [
        "## What round 2 changed",
        "",
        f"Verdicts ({LEGEND}) of the {len(frame)} cells, round 1 as published against round 2's headline table; "
        f"{count} changed. Each step gives up one of round 1's rules on round 2's runs "
        "(expril/reports/rounds.py); `moved by` names the steps where a cell's verdict changed, the issue's "
        "points first.",
        "",
    ]
    return "\n".join(lines + table) + "\n"


def round3_markdown(walks, datasets, currencies):
    """Round 3's walk per currency (`walks`: {currency: (frame, significant)}, `currencies`: {name:
    expril.workflow.currency.Currency}, titled as in the comparison's report)."""
    lines = [
        "## What round 3 changed",
        "",
        f"Verdicts ({LEGEND}; no lead: no method's mean beats h0*) of the cells round 2 ran, round 2 as "
        "published against round 3, in each currency's table. Each step gives up one of round 2's rules "
        "(expril/reports/rounds.py); `moved by` names the steps where a cell's verdict changed, the issue's "
        "points first.",
    ]
    for currency, (frame, significant) in walks.items():
        count, table = moved_lines(frame, significant, datasets, ROUND3_STEPS, ("round 2", "round 3"))
        lines += [
            "",
            f"### {comparison.title(currencies[currency])}",
            "",
            f"{count} of {len(frame)} cells changed.",
            "",
            *table,
        ]
    return "\n".join(lines) + "\n"


def report(round1, headline, pure, designs, methods, datasets, out_csv, out_md):
    """Write round 2's changes() as CSV and Markdown; `round1`: its comparison.csv,
    comparison_tests.csv and comparison_runs.csv; `headline`, `pure`: round 2's comparison_runs.csv
    of each currency."""
    frame, significant = changes(
        tuple(pd.read_csv(f) for f in round1), pd.read_csv(headline), pd.read_csv(pure), designs, methods
    )
    io.save_csv(out_csv, frame)
    io.save_text(out_md, markdown(frame, significant, datasets))


def round3_report(round2, round3, designs, methods, datasets, currencies, out_csv, out_md):
    """Write round3_changes() of every currency as CSV (a `currency` column first) and Markdown;
    `round2`, `round3`: {currency: its comparison_runs.csv} of each round; `currencies`: as
    round3_markdown()'s."""
    walks = {c: round3_changes(pd.read_csv(round2[c]), pd.read_csv(round3[c]), designs, methods) for c in round3}
    frames = pd.concat({c: frame for c, (frame, _) in walks.items()}, names=["currency"])
    io.save_csv(out_csv, frames.reset_index(level="currency"))
    io.save_text(out_md, round3_markdown(walks, datasets, currencies))
