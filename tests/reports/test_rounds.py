"""What rounds 2 and 3 changed (expril.reports.rounds): round 1's rules reproduce its published
verdicts, and each step of the walks from round 1 to round 2 and from round 2 to round 3 moves only
what it should, with known answers."""

import math

import numpy as np
import pandas as pd
import stats_reference

from expril.privacy import mechanisms
from expril.reports import comparison, design, rounds
from expril.workflow.config import planned_config
from expril.workflow.currency import Currency
from harness import ROOT

ROUND1 = ROOT / "summary" / "comparison" / "round1"
ROUND2 = ROOT / "summary" / "comparison" / "round2"
METHODS = ["C", "I", "llp", "dpsgd", "aim", "dpmerf", "C-mmd", "I-mmd"]
PURE = ["C", "I", "llp", "aim", *comparison.REFERENCES]


def _round1():
    return tuple(pd.read_csv(ROUND1 / f"comparison{part}.csv") for part in ("", "_tests", "_runs"))


def test_round_1s_rules_give_its_published_verdicts():
    """Round 1's published tests (Wilcoxon on float accuracies, eps = inf tested; its frozen
    comparison_tests.csv, 6 significant digits) are what scipy computes on its published runs, and
    so are the tests its rules rerun today; its published cells' verdicts come back (issue 36)."""
    table, tests, runs = _round1()
    expected = stats_reference.paired_tests(runs, finite=False)
    stats_reference.assert_tests_are(tests, expected, rel=1e-5)
    published = rounds.verdicts(table, tests, METHODS, runs, rounds.everything)
    ours, our_tests = rounds.float_verdicts(runs, METHODS, rounds.everything)
    stats_reference.assert_tests_are(our_tests, expected, rel=1e-9)
    assert len(published) == len(table[["dataset", "eps"]].drop_duplicates())
    assert ours.sort_index().equals(published.sort_index())
    assert published["A", 0.1] == "LLP" and published["A", math.inf] == "DP-SGD ▲"
    assert published["CTG-B", 0.1] == "DP-MERF ▲ ⊘"
    assert (our_tests.p_holm < comparison.LEVEL).sum() == (tests.p_holm < comparison.LEVEL).sum()


def test_round_1s_own_runs_move_only_by_infinity_and_the_tests():
    """Round 1's runs read as round 2's (the pure currency's methods the same runs): the tuning and
    currency steps move nothing; the 7 cells at eps = inf become references; the corrected resampled
    t-test takes away CTG-B's ▲ at eps 1, 3 and 10 (issue 36, point 4) and CTG-A's and CTG-B's at
    0.1, and moves nothing else. Each step's significant tests are scipy's count."""
    round1 = _round1()
    runs = round1[2]
    designs = design.designs(planned_config(ROOT))
    frame, significant = rounds.changes(round1, runs, runs[runs.method.isin(PURE)], designs, METHODS)
    frame = frame.set_index(["dataset", "eps"])
    assert (frame["round 1"] == frame["tuning"]).all() and (frame["tests"] == frame["currency"]).all()
    infinite = frame.xs(math.inf, level="eps")
    assert len(infinite) == 7 and (infinite.currency == rounds.REFERENCE).all()
    assert set(infinite.moved_by) == {rounds.ROUND2_STEPS["infinity"]}
    # each cell the tests moved: its leader beside C-ExPriL significant by round 1's Wilcoxon on
    # float accuracies, not by the corrected resampled t-test on counts (scipy, Holm)
    floats = stats_reference.paired_tests(runs, finite=True)
    fitted = stats_reference.paired_tests(runs, finite=True, designs=designs)
    leaders = {("CTG-B", eps): "dpsgd" for eps in (1.0, 3.0, 10.0)} | {(d, 0.1): "dpmerf" for d in ("CTG-A", "CTG-B")}
    for (dataset, eps), method in leaders.items():
        assert floats[dataset, eps, method] < comparison.LEVEL <= fitted[dataset, eps, method]
    for eps in (1.0, 3.0, 10.0):
        cell = frame.loc[("CTG-B", eps)]
        assert (cell["round 1"], cell.currency, cell.moved_by) == ("DP-SGD ▲", "DP-SGD", rounds.ROUND2_STEPS["tests"])
    for dataset in ("CTG-A", "CTG-B"):
        assert frame.loc[(dataset, 0.1), ["round 1", "currency"]].tolist() == ["DP-MERF ▲ ⊘", "DP-MERF ⊘"]
    moved = {(d, e) for (d, e), by in frame.moved_by.items() if by}
    assert moved == {(d, math.inf) for d in infinite.index} | set(leaders)
    assert significant == {
        "round 1": (round1[1].p_holm < comparison.LEVEL).sum(),
        "tuning": stats_reference.significant(stats_reference.paired_tests(runs, finite=False)),
        "infinity": stats_reference.significant(floats),
        "tests": stats_reference.significant(fitted),
        "currency": stats_reference.significant(fitted),
    }


def _runs(cells, eps=1.0):
    """Runs of the tuned column as comparison_runs.csv holds them: {(dataset, method): accuracies}
    at `eps`."""
    return pd.DataFrame(
        [
            {
                "dataset": dataset,
                "seed": seed,
                "method": method,
                "eps": eps,
                "column": comparison.TUNED,
                "setting": "configured",
                "accuracy": accuracy,
                "positive_share": 0.5,
            }
            for (dataset, method), accuracies in cells.items()
            for seed, accuracy in enumerate(accuracies)
        ]
    )


def test_a_verdict_moved_by_one_delta_per_table_is_put_down_to_the_currency():
    """8 fresh runs on A and B at eps 1. C-ExPriL at delta = 0 is 10 points below its headline
    (delta = 1e-5) runs, DP-SGD 5 below them: beside DP-SGD at delta = 1e-5 (round 1's mix)
    DP-SGD leads and every pair favours it (Wilcoxon p 2/256, Holm x 2: ▲); in the headline table
    C-ExPriL leads and DP-SGD is significantly below (★)."""
    c = [0.70, 0.71, 0.72, 0.74, 0.76, 0.78, 0.79, 0.80]
    headline = _runs({(d, m): [a - shift for a in c] for d in "AB" for m, shift in (("C", 0.0), ("dpsgd", 0.05))})
    pure = _runs({(d, "C"): [a - 0.10 for a in c] for d in "AB"})
    mix = rounds.mixed(headline, pure)
    floats = mix.assign(n_test=1, correct=mix.accuracy)
    tests1 = comparison.paired_tests(floats, comparison.TUNED, dict.fromkeys("AB", rounds.FLOATS))
    designs = dict.fromkeys("AB", design.Design(n_test=100, n_train=300, resampled=False))
    frame, significant = rounds.changes(
        (rounds.cell_table(floats), tests1, mix), headline, pure, designs, ["C", "dpsgd"]
    )
    assert frame["round 1"].tolist() == ["DP-SGD ▲"] * 2 and frame.currency.tolist() == ["C-ExPriL ★"] * 2
    assert frame.moved_by.tolist() == [rounds.ROUND2_STEPS["currency"]] * 2
    assert significant == {"round 1": 2, "tuning": 2, "infinity": 2, "tests": 2, "currency": 2}
    md = rounds.markdown(frame, significant, ["A", "B"])
    assert "| A | 1 | DP-SGD ▲ | C-ExPriL ★ | 1: one (ε, δ) per table |" in md
    assert "| 1: one (ε, δ) per table | 2 | 2 |" in md


def test_only_round_2s_cells_are_set_beside_round_1_and_a_cell_it_did_not_run_says_so():
    """Round 2 run on A and on a dataset round 1 did not run (BC), at eps 1 and inf: the frame holds
    those four cells, not round 1's other 38; BC reads as not run in round 1, inf as a reference."""
    c = [0.70, 0.71, 0.72, 0.74, 0.76, 0.78, 0.79, 0.80]
    shifts = {"C": 0.0, "dpsgd": 0.05}
    headline = _runs({(d, m): [a - shift for a in c] for d in ("A", "BC") for m, shift in shifts.items()})
    headline = pd.concat([headline, headline.assign(eps=math.inf)])
    designs = dict.fromkeys(["A", "BC"], design.Design(n_test=100, n_train=300, resampled=False))
    frame, _ = rounds.changes(_round1(), headline, headline[headline.method == "C"], designs, ["C", "dpsgd"])
    frame = frame.set_index(["dataset", "eps"])
    assert sorted(frame.index) == [("A", 1.0), ("A", math.inf), ("BC", 1.0), ("BC", math.inf)]
    assert frame.loc[("BC", 1.0), "round 1"] == frame.loc[("BC", math.inf), "round 1"] == rounds.ABSENT
    assert frame.loc[("BC", 1.0), "currency"] == "C-ExPriL ★"
    assert frame.loc[("A", math.inf), "currency"] == frame.loc[("BC", math.inf), "currency"] == rounds.REFERENCE
    assert frame.loc[("A", math.inf), "round 1"] == "DP-SGD ▲"


def _below_h0_star(folder, methods):
    """The finite cells of a published table (comparison.csv) where no tuned method's mean beats h0*'s."""
    table = pd.read_csv(folder / "comparison.csv")
    majority = table[table.method == "h0_star"].set_index("dataset")["mean"]
    tuned = table[(table.column == comparison.TUNED) & table.method.isin(methods) & np.isfinite(table.eps)]
    best = tuned.groupby(["dataset", "eps"])["mean"].max()
    return {cell for cell, mean in best.items() if mean <= majority[cell[0]]}


def test_round_3s_walk_on_round_2s_own_runs_moves_the_cells_below_h0_star_only():
    """Round 2's published runs read as round 3's: the first step gives round 2's published counts
    back (headline: 41 significant tests of 209, DP-SGD highest in 23 of the 35 finite cells); h0*'s
    rule moves exactly the cells where the published table's best tuned mean is at most h0*'s (the
    headline's DP-MERF at eps 0.1 on CTG-A and CTG-B, issue 49; pure DP's AIM at 0.1 and 0.3 there);
    the same runs move nothing after it."""
    designs = design.designs(planned_config(ROOT))
    runs = pd.read_csv(ROUND2 / "approx" / "comparison_runs.csv")
    frame, significant = rounds.round3_changes(runs, runs, designs, METHODS)
    frame = frame.set_index(["dataset", "eps"])
    assert significant == {"round 2": 41, "h0*": 41, "runs": 41, "round 3": 41}
    finite = frame[np.isfinite(frame.index.get_level_values("eps"))]
    assert len(finite) == 35 and finite["round 2"].str.startswith("DP-SGD").sum() == 23
    assert (frame.xs(math.inf, level="eps")["round 3"] == rounds.REFERENCE).all()
    below = _below_h0_star(ROUND2 / "approx", METHODS)
    assert below == {("CTG-A", 0.1), ("CTG-B", 0.1)}
    assert frame.loc[("CTG-A", 0.1), ["round 2", "round 3"]].tolist() == ["DP-MERF", "no lead (DP-MERF)"]
    assert frame.loc[("CTG-B", 0.1), ["round 2", "round 3"]].tolist() == ["DP-MERF ⊘", "no lead (DP-MERF)"]
    assert {cell for cell, by in frame.moved_by.items() if by} == below
    assert set(frame.moved_by[list(below)]) == {rounds.ROUND3_STEPS["h0*"]}
    pure = pd.read_csv(ROUND2 / "pure" / "comparison_runs.csv")
    frame, significant = rounds.round3_changes(pure, pure, designs, METHODS)
    published = pd.read_csv(ROUND2 / "pure" / "comparison_tests.csv")
    assert set(significant.values()) == {int((published.p_holm < comparison.LEVEL).sum())}
    below = _below_h0_star(ROUND2 / "pure", METHODS)
    assert below == {(d, e) for d in ("CTG-A", "CTG-B") for e in (0.1, 0.3)}
    assert {(r.dataset, r.eps) for r in frame.itertuples() if r.moved_by} == below


def test_round_3s_real_tables_widen_holms_family():
    """On A at eps 1 DP-SGD is 5 counts above C-ExPriL in all 8 runs (Wilcoxon p 2/256): ▲ alone in
    Holm's family. Round 3 adds a table (R, eps 1 and 3) where five rivals differ from C-ExPriL by
    ±1 alternately (p = 1): 11 tests, Holm's p for A 11 x 2/256 = 0.086, so the ▲ goes at the last
    step and at no other; the new table's cells are not round 2's and stay out of the walk."""
    c = [0.70, 0.71, 0.72, 0.74, 0.76, 0.78, 0.79, 0.80]
    round2 = _runs({("A", "C"): c, ("A", "dpsgd"): [a + 0.05 for a in c]})
    wobble = [a + (0.01 if i % 2 else -0.01) for i, a in enumerate(c)]
    rivals = ["I", "llp", "aim", "dpmerf", "dpsgd"]
    real = [_runs({("R", "C"): c, **{("R", m): wobble for m in rivals}}, eps) for eps in (1.0, 3.0)]
    round3 = pd.concat([round2, *real])
    designs = dict.fromkeys(["A", "R"], design.Design(n_test=100, n_train=300, resampled=False))
    frame, significant = rounds.round3_changes(round2, round3, designs, ["C", *rivals])
    assert frame[["dataset", "eps"]].values.tolist() == [["A", 1.0]]
    assert frame.iloc[0][list(rounds.ROUND3_STEPS)].tolist() == ["DP-SGD ▲", "DP-SGD ▲", "DP-SGD ▲", "DP-SGD"]
    assert frame.moved_by.tolist() == [rounds.ROUND3_STEPS["round 3"]]
    assert significant == {"round 2": 1, "h0*": 1, "runs": 1, "round 3": 0}
    approx = Currency("approx", 1e-5, mechanisms.RECORD, {"C": "gaussian-counts"})
    md = rounds.round3_markdown({"approx": (frame, significant)}, ["A", "R"], {"approx": approx})
    assert "### (ε, δ = 1e-05), neighbours: add/remove one record: currency `approx`\n\n1 of 1 cells changed." in md
    assert "| A | 1 | DP-SGD ▲ | DP-SGD | 1: Holm over the real tables' tests too |" in md
    assert "| 1: Holm over the real tables' tests too | 1 | 0 |" in md
