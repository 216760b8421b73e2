"""What round 2 of the comparison changed (issue 36), cell by cell. Each dataset and eps has a
verdict: its leader(s) and mark (comparison.leaders, tuned column). It is read in round 1 as
published, then on round 2's runs with round 1's rules given up one at a time, in the order of
STEPS, so that each change of a verdict is put down to the step that made it:

- `round 1`: the round-1 study as published.
- `tuning`: round 1's rules on round 2's runs: its currency mix (the methods of the pure currency
  at delta = 0 beside the others at 1e-5), Wilcoxon on float accuracies everywhere, eps = inf
  tested and led. What changed here is round 2's tuning (12 settings per method, CTG's settings by
  transfer: points 2 and 5) and its code (DP-SGD's last bits, AIM's estimator).
- `infinity`: eps = inf a reference, out of the tests, Holm's family and the leaders (point 3).
- `tests`: the tests that fit how runs are drawn, on counts of correct records (points 4 and 6).
- `currency`: the headline currency's own table, one (eps, delta) for every method (point 1):
  round 2 as published.
"""

import numpy as np
import pandas as pd

from expril import io
from expril.reports import comparison
from expril.reports.design import Design

STEPS = {
    "round 1": "round 1 as published",
    "tuning": "2, 5: round 2's tuning (and code)",
    "infinity": "3: ε = ∞ a reference",
    "tests": "4, 6: tests that fit the runs, ties",
    "currency": "1: one (ε, δ) per table",
}
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


def verdicts(table, tests, methods, runs, cells=comparison.contested):
    """Each cell's verdict: its leaders' names and mark ('DP-SGD ▲'), ⊘ where every leader
    collapsed; a method that repeats its base's runs is left out (comparison.plain_repeats), as in
    the report."""
    top = comparison.leaders(
        comparison.without(table, comparison.plain_repeats(runs)), methods, comparison.TUNED, tests, cells
    )
    return pd.Series(
        [
            " ".join(part for part in (row.methods, row.mark, "⊘" if row.collapsed else "") if part)
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


def current_verdicts(runs, designs, methods):
    """Round 2's statistics on `runs`: counts of correct records, each dataset's test, inf a
    reference."""
    counted = comparison.counted(runs[comparison.RUN_COLUMNS], designs)
    tests = comparison.paired_tests(counted, comparison.TUNED, designs)
    return verdicts(cell_table(counted), tests, methods, runs), tests


def mixed(headline, pure):
    """Round 1's currency mix of round 2's runs: each method of the pure currency's table at
    delta = 0, the others (and the references) from the headline's."""
    pure_methods = set(pure.method) - set(comparison.REFERENCES)
    return pd.concat([pure[pure.method.isin(pure_methods)], headline[~headline.method.isin(pure_methods)]])


def changes(round1, headline, pure, designs, methods):
    """Every cell's verdict at each step (STEPS) and the steps that changed it (`moved_by`), and
    each step's count of significant tests. `round1`: its (comparison.csv, comparison_tests.csv,
    comparison_runs.csv); `headline`, `pure`: round 2's comparison_runs.csv of each currency."""
    table1, tests1, runs1 = round1
    both = mixed(headline, pure)
    steps = {
        "round 1": (verdicts(table1, tests1, methods, runs1, everything), tests1),
        "tuning": float_verdicts(both, methods, everything),
        "infinity": float_verdicts(both, methods, comparison.contested),
        "tests": current_verdicts(both, designs, methods),
        "currency": current_verdicts(headline, designs, methods),
    }
    # Round 2's cells alone. Round 1 led every cell it ran; a later step leaves eps = inf to the
    # references.
    frame = pd.DataFrame({step: verdict for step, (verdict, _) in steps.items()})
    frame = frame.reindex(pd.MultiIndex.from_frame(headline[["dataset", "eps"]].drop_duplicates()))
    frame["round 1"] = frame["round 1"].fillna(ABSENT)
    infinite = np.isinf(frame.index.get_level_values("eps"))
    frame.loc[infinite] = frame.loc[infinite].fillna(REFERENCE)
    frame = frame.fillna(ABSENT)
    names = list(STEPS)
    frame["moved_by"] = [
        "; ".join(STEPS[b] for a, b in zip(names, names[1:]) if row[a] != row[b]) for _, row in frame.iterrows()
    ]
    significant = {step: int((tests.p_holm < comparison.LEVEL).sum()) for step, (_, tests) in steps.items()}
    return frame.rename_axis(["dataset", "eps"]).reset_index(), significant


def markdown(frame, significant, datasets):
    """The cells whose verdict changed, round 1 against round 2, with the steps that moved them,
    and per step the cells it moved and the significant tests."""
    order = {d: i for i, d in enumerate(datasets)}
    moved = frame[frame["round 1"] != frame["currency"]].sort_values(
        ["dataset", "eps"], key=lambda c: c.map(order) if c.name == "dataset" else c
    )
    lines = [
        "## What round 2 changed",
        "",
        f"Verdicts (tuned column: the leader, ▲/★ from the paired tests against C-ExPriL, ⊘ collapsed) of "
        f"the {len(frame)} cells, round 1 as published against round 2's headline table; {len(moved)} changed. "
        "Each step gives up one of round 1's rules on round 2's runs (expril/reports/rounds.py); "
        "`moved by` names the steps where a cell's verdict changed, the issue's points first.",
        "",
        "| Dataset | ε | round 1 | round 2 | moved by |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.dataset} | {comparison.eps_text(r.eps)} | {r['round 1']} | {r.currency} | {r.moved_by} |"
        for _, r in moved.iterrows()
    ]
    lines += ["", "| step | cells it moved | significant tests (Holm, 0.05) |", "|---|---|---|"]
    names = list(STEPS)
    for a, b in zip([None] + names, names):
        count = "" if a is None else str(int((frame[a] != frame[b]).sum()))
        lines.append(f"| {STEPS[b]} | {count} | {significant[b]} |")
    return "\n".join(lines) + "\n"


def report(round1, headline, pure, designs, methods, datasets, out_csv, out_md):
    """Write changes() as CSV and Markdown; `round1`: its comparison.csv, comparison_tests.csv and
    comparison_runs.csv; `headline`, `pure`: round 2's comparison_runs.csv of each currency."""
    frame, significant = changes(
        tuple(pd.read_csv(f) for f in round1), pd.read_csv(headline), pd.read_csv(pure), designs, methods
    )
    io.save_csv(out_csv, frame)
    io.save_text(out_md, markdown(frame, significant, datasets))
