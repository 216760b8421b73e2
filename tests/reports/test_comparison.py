"""The comparison's tables, tests and figures (expril.reports.comparison) on small files written by
hand as the workflow writes them, with known answers."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from expril import settings
from expril.privacy import ledger, mechanisms
from expril.privacy.dpsgd import DPSGD
from expril.privacy.noise import SECRET_VARIABLE
from expril.reports import comparison, design
from expril.workflow.currency import Currency
from harness import ROOT

INF = math.inf
# 8 runs: the smallest two-sided Wilcoxon p is 2/256, which survives Holm over 4 tests (0.031)
C_RUNS = [0.70, 0.71, 0.72, 0.74, 0.76, 0.78, 0.79, 0.80]
SEEDS = range(len(C_RUNS))
# Each run of A and B draws fresh data and scores 100 test records; CTG resamples one pool.
DESIGNS = {
    "A": design.Design(n_test=100, n_train=300, resampled=False),
    "B": design.Design(n_test=100, n_train=300, resampled=False),
    "D": design.Design(n_test=100, n_train=300, resampled=False),
    "E": design.Design(n_test=1250, n_train=3750, resampled=False),
    "CTG": design.Design(n_test=100, n_train=150, resampled=True),
}


def _write(tmp_path, name, rows):
    path = tmp_path / f"{name}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _ledgers(tmp_path):
    """Every method's ledger for dataset A at eps 1, as the workflow writes them."""
    files, book = {}, None
    plan = mechanisms.Counts(1.0, 1e-5, 2, 2, False)
    for query, rule in [
        ("marginals", "oracle_marginals"),
        ("errors_t0", "oracle_errors"),
        ("errors_t1", "oracle_errors"),
    ]:
        book = ledger.record(tmp_path / "expril.ledger.csv", book, "A", SEEDS, query, rule, plan)
    files["C"] = files["I"] = str(tmp_path / "expril.ledger.csv")
    llp, book = mechanisms.Counts(1.0, 1e-5, 2, 1, False), None
    for query in ("llp/counts", "llp/negatives"):
        book = ledger.record(tmp_path / "llp.ledger.csv", book, "A", SEEDS, query, "oracle_proportions", llp)
    files["llp"] = str(tmp_path / "llp.ledger.csv")
    dp = DPSGD(1.0, 1e-5, settings.sample_rate(1250, 64), 2, 1.0)
    ledger.record(tmp_path / "dp.ledger.csv", None, "A", SEEDS, "dpsgd", "train_dpsgd", dp)
    files["dpsgd"] = str(tmp_path / "dp.ledger.csv")
    return files, dp.query_cost()[0]


def _study(tmp_path, tuned_shift=0.0):
    """Dataset A at eps 1, 8 runs, as configured (and tuned, DP-SGD's `tuned_shift` points higher
    under its setting '~recipe=sgd'): I equals C, LLP is 5 points above C in every run, DP-SGD 10
    below and collapsed (its networks label every test record 1). ExPriL's intermediate
    iterations hold a decoy 0.1."""
    expril = _write(
        tmp_path,
        "expril",
        [
            {
                "dataset": "A",
                "seed": s,
                "eps": 1.0,
                "variant": v,
                "t": t,
                "accuracy": 0.1 if t < 2 else acc,
                "positive_share": 0.5,
            }
            for s, acc in enumerate(C_RUNS)
            for v in "CI"
            for t in range(3)
        ],
    )
    rival_files = {
        (m, column): _write(
            tmp_path,
            f"{m}-{column}",
            [
                {
                    "dataset": "A",
                    "seed": s,
                    "eps": 1.0,
                    "method": m,
                    "accuracy": acc + shift + bonus,
                    "positive_share": share,
                }
                for s, acc in enumerate(C_RUNS)
            ],
        )
        for m, shift, share in (("llp", 0.05, 0.5), ("dpsgd", -0.10, 1.0))
        for column, bonus in (("as configured", 0.0), ("tuned", tuned_shift if m == "dpsgd" else 0.0))
    }
    ledgers, dp_eps = _ledgers(tmp_path)
    runs = []
    for column in ("as configured", "tuned"):
        for m in ("C", "I", "llp", "dpsgd"):
            setting = "~recipe=sgd" if (m, column) == ("dpsgd", "tuned") else ""
            evaluation = expril if m in "CI" else rival_files[m, column]
            runs.append(
                {
                    "method": m,
                    "dataset": "A",
                    "eps": 1.0,
                    "column": column,
                    "setting": setting,
                    "evaluation": evaluation,
                    "ledger": ledgers[m],
                }
            )
    reference = _write(tmp_path, "reference", {"dataset": "A", "seed": list(SEEDS), "h_star": 0.9, "h0_star": 0.5})
    return runs, [reference], dp_eps


def _accuracy(runs, reference):
    accuracy = pd.concat([comparison.read_runs(runs, 2), comparison.reference_runs(reference)], ignore_index=True)
    return comparison.counted(accuracy, DESIGNS)


def _frames(tmp_path, **kwargs):
    runs, reference, dp_eps = _study(tmp_path, **kwargs)
    accuracy = _accuracy(runs, reference)
    spent, _ = comparison.privacy(runs)
    return accuracy, comparison.comparison_table(accuracy, spent), dp_eps


def _runs(accuracies, column="tuned"):
    """A runs frame from {(dataset, method, eps): each run's accuracy}."""
    return pd.DataFrame(
        [
            {
                "dataset": dataset,
                "seed": seed,
                "method": method,
                "eps": eps,
                "column": column,
                "setting": "configured",
                "accuracy": accuracy,
                "positive_share": 0.5,
            }
            for (dataset, method, eps), values in accuracies.items()
            for seed, accuracy in enumerate(values)
        ]
    )


def _table(runs):
    """comparison_table() of `runs` (counted()), every cell spending its eps by the counts mechanism."""
    cells = runs[["dataset", "method", "eps", "column"]].drop_duplicates()
    spent = cells.assign(eps_spent=cells.eps, delta=0.0, neighbours=mechanisms.RECORD, mechanisms="counts")
    return comparison.comparison_table(runs, spent)


def test_runs_hold_the_final_hypothesis_of_each_variant_the_rivals_and_the_references(tmp_path):
    accuracy, _, _ = _frames(tmp_path)
    assert list(accuracy.columns) == [*comparison.RUN_COLUMNS, "n_test", "correct"]
    assert accuracy[accuracy.method == "C"].correct.tolist()[:8] == [70, 71, 72, 74, 76, 78, 79, 80]
    assert len(accuracy) == 2 * 4 * 8 + 2 * 8 and 0.1 not in set(accuracy.accuracy)
    assert set(accuracy[accuracy.method.isin(comparison.REFERENCES)].eps) == {INF}
    tuned = accuracy[(accuracy.column == "tuned") & (accuracy.method == "dpsgd")]
    assert set(tuned.setting) == {"~recipe=sgd"} and len(tuned) == 8


def test_the_table_has_each_methods_accuracy_privacy_and_collapse(tmp_path):
    _, table, dp_eps = _frames(tmp_path)
    table = table[table.column != "tuned"].set_index(["method", "eps"])
    assert table.loc[("C", 1.0), "mean"] == pytest.approx(100 * np.mean(C_RUNS))
    assert table.loc[("C", 1.0), "std"] == pytest.approx(100 * np.std(C_RUNS, ddof=1))
    assert table.loc[("llp", 1.0), "mean"] == pytest.approx(100 * np.mean(C_RUNS) + 5)
    for method, eps_spent, delta in [("C", 1.0, 0.0), ("I", 1.0, 0.0), ("llp", 1.0, 0.0), ("dpsgd", dp_eps, 1e-5)]:
        row = table.loc[(method, 1.0)]
        assert (row.eps_spent, row.delta, row.neighbours) == (pytest.approx(eps_spent), delta, mechanisms.RECORD)
    assert [table.loc[(m, 1.0), "mechanisms"] for m in ("C", "llp", "dpsgd")] == ["counts", "counts", "dpsgd"]
    # DP-SGD's networks label every record 1: collapsed in all 8 runs; the others in none
    assert table.loc[("dpsgd", 1.0), ["collapsed_runs", "collapsed"]].tolist() == [8, True]
    assert not table.loc[("llp", 1.0), "collapsed"] and table.loc[("h_star", INF), "neighbours"].startswith("none")


def test_a_cell_is_flagged_when_half_its_runs_collapsed():
    share = pd.Series([0.995, 0.004, 0.5, 0.98])
    assert comparison.collapsed(share).tolist() == [True, True, False, False]


def test_paired_tests_are_holm_corrected_over_the_table(tmp_path):
    accuracy, _, _ = _frames(tmp_path)
    tests = comparison.paired_tests(accuracy, "as configured", DESIGNS).set_index(["method", "eps"])
    # I's runs are C's: not tested; LLP and DP-SGD: 8 pairs all one way, p = 2/256, Holm x2
    assert sorted(tests.index.get_level_values(0)) == ["dpsgd", "llp"] and set(tests.n_pairs) == {8}
    assert tests.loc[("llp", 1.0)].p_value == pytest.approx(2 / 256)
    assert tests.loc[("llp", 1.0)].p_holm == pytest.approx(4 / 256)
    assert tests.loc[("llp", 1.0)].verdict == "C-ExPriL loses" and tests.loc[("dpsgd", 1.0)].verdict == "C-ExPriL wins"
    assert tests.loc[("llp", 1.0)].difference == pytest.approx(5.0)
    assert set(tests.test) == {"Wilcoxon signed-rank"}  # A draws fresh data every run
    assert comparison.paired_tests(accuracy[accuracy.method != "C"], "as configured", DESIGNS).empty


def test_markdown_marks_significance_collapse_and_the_settings_chosen(tmp_path):
    runs, reference, _ = _study(tmp_path, tuned_shift=0.2)
    accuracy = _accuracy(runs, reference)
    spent, _ = comparison.privacy(runs)
    table = comparison.comparison_table(accuracy, spent)
    tests = comparison.paired_tests(accuracy, "tuned", DESIGNS)
    md = comparison.markdown(table, tests, pd.DataFrame(), ["C", "I", "llp", "dpsgd"], ["A", "B"], "tuned")
    assert "| Dataset | ε | C-ExPriL | I-ExPriL | LLP | DP-SGD |" in md and "| B |" not in md
    # tuned: DP-SGD 10 points above C (still collapsed), LLP 5 above
    assert "| A | 1 | 75.0 ± 3.8 | 75.0 ± 3.8 | 80.0 ± 3.8 ▲ | 85.0 ± 3.8 ▲ ⊘8 |" in md
    assert "| A | 1 | 75.0 ± 3.8 | 75.0 ± 3.8 | 80.0 ± 3.8 | 65.0 ± 3.8 ⊘8 |" in md  # as configured, untested
    assert "| A | 1 | `configured` | `configured` | `configured` | `~recipe=sgd` |" in md
    assert "| A | DP-SGD (85.0) ▲ ⊘ |" in md and "| A | 90.0 ± 0.0 | 50.0 ± 0.0 |" in md
    assert "| ★ / ▲ | 0 / 1 of 1 |" in md
    assert "| DP-SGD | +20.0 (1/1) | 1 → 1 |" in md and "| LLP | +0.0 (0/1) | 0 → 0 |" in md
    assert "| DP-SGD | tuned | dpsgd | add/remove one record | 1 |" in md and "over the 2 tests" in md


def test_rankings_give_average_ranks_a_friedman_test_and_the_critical_difference():
    means = {"A": [90, 80, 70], "B": [91, 81, 71], "C": [70, 80, 90], "D": [92, 82, 72]}
    table = pd.DataFrame(
        [
            {"dataset": d, "method": m, "eps": 1.0, "column": "tuned", "mean": v}
            for d, values in means.items()
            for m, v in zip(("C", "llp", "dpsgd"), values)
        ]
    )
    ranking, ranks = comparison.rankings(table, ["C", "llp", "dpsgd"], "tuned")
    assert ranks[1.0].tolist() == [1.5, 2.0, 2.5] and ranking.datasets.tolist() == [4]
    # chi2_F = 12 N / (k (k+1)) (sum R^2 - k (k+1)^2 / 4) = 12 * 4 / 12 * (12.5 - 12) = 2
    assert ranking.chi2[0] == pytest.approx(2.0) and ranking.cd[0] == pytest.approx(
        2.343 * math.sqrt(12 / 24), rel=1e-3
    )
    tests = pd.DataFrame(
        columns=["dataset", "eps", "method", "n_pairs", "difference", "test", "p_value", "p_holm", "verdict"]
    )
    table = table.assign(std=1.0, n_runs=20, collapsed=False, collapsed_runs=0, setting="", eps_spent=1.0, delta=0.0)
    table = table.assign(mechanisms="counts", neighbours="add/remove one record")
    md = comparison.markdown(table, tests, ranking, ["C", "llp", "dpsgd"], list(means), "tuned")
    assert f"| 1 | 4 | 1.50 | 2.00 | 2.50 | {ranking.F[0]:.2f} |" in md


def test_leaders_are_the_highest_means_with_ties_marked_by_the_tests(tmp_path):
    accuracy, table, _ = _frames(tmp_path)
    tests = comparison.paired_tests(accuracy, "as configured", DESIGNS)
    untested = tests.iloc[0:0]
    top = comparison.leaders(table, ["C", "I"], "as configured", untested)
    assert top.loc[("A", 1.0)].tolist() == ["C-ExPriL, I-ExPriL", pytest.approx(100 * np.mean(C_RUNS)), False, ""]
    # C leads, its one rival DP-SGD significantly below: ★; LLP significantly above C: ▲
    assert comparison.leaders(table, ["C", "I", "dpsgd"], "as configured", tests).loc[("A", 1.0)].mark == "★"
    assert comparison.leaders(table, ["C", "I", "dpsgd"], "as configured", untested).loc[("A", 1.0)].mark == ""
    top = comparison.leaders(table, ["C", "I", "llp", "dpsgd"], "as configured", tests).loc[("A", 1.0)]
    assert (top.methods, top.mark) == ("LLP", "▲")


def test_a_repeat_of_plain_expril_is_left_out_of_the_leaders_and_the_tuning_effect(tmp_path):
    """I's runs are C's here: as a repeat (ExPriL by MMD without an IS step would be one) it
    neither ties with C among the leaders nor has a row of the tuning's effect."""
    accuracy, table, _ = _frames(tmp_path)
    tests = comparison.paired_tests(accuracy, "as configured", DESIGNS)
    args = (table, tests, pd.DataFrame(), ["C", "I"], ["A"], "as configured")
    kept, left_out = comparison.markdown(*args), comparison.markdown(*args, repeats={("A", "I")})
    assert "| A | C-ExPriL, I-ExPriL (75.0) |" in kept and "| I-ExPriL | +0.0 (0/1) | 0 → 0 |" in kept
    assert "| A | C-ExPriL (75.0) |" in left_out and "| I-ExPriL | +0.0" not in left_out
    assert "| A | 1 | 75.0 ± 3.8 | 75.0 ± 3.8 |" in left_out  # the accuracy tables still show it


def test_tuning_effect_is_tuned_minus_as_configured_per_method_and_eps(tmp_path):
    _, table, _ = _frames(tmp_path, tuned_shift=0.2)
    effect = comparison.tuning_effect(table, ["C", "llp", "dpsgd"]).set_index("method")
    assert effect.index.tolist() == ["C", "llp", "dpsgd"] and set(effect.eps) == {1.0}
    assert effect.loc["dpsgd", "change"] == pytest.approx(20.0) and effect.loc["dpsgd", "raised"] == 1
    assert effect.loc["llp", "change"] == pytest.approx(0.0) and effect.loc["llp", "raised"] == 0
    assert effect.loc["dpsgd", ["collapsed_configured", "collapsed_tuned"]].tolist() == [1, 1]


def test_eps_positions_put_no_privacy_beyond_the_largest_eps():
    assert comparison._positions([0.1, 1.0, 10.0, INF]) == {0.1: 0.1, 1.0: 1.0, 10.0: 10.0, INF: 30.0}
    assert comparison._positions([INF]) == {INF: 1.0}


@pytest.mark.parametrize("secret", [None, "a real secret"])
def test_compare_writes_every_output_and_the_demo_secrets_note_exactly_when_it_keyed_noise(
    tmp_path, monkeypatch, secret
):
    if secret:
        monkeypatch.setenv(SECRET_VARIABLE, secret)
    runs, reference, _ = _study(tmp_path)
    names = [
        ("comparison_csv", "comparison.csv"),
        ("comparison_md", "comparison.md"),
        ("runs", "runs.csv"),
        ("tests", "tests.csv"),
        ("ranks", "ranks.csv"),
        ("figure_pdf", "privacy_utility.pdf"),
        ("figure_png", "privacy_utility.png"),
        ("cd_pdf", "cd.pdf"),
        ("cd_png", "cd.png"),
    ]
    out = {key: tmp_path / "out" / name for key, name in names}
    comparison.compare(runs, reference, ["C", "I", "llp", "dpsgd"], ["A"], 2, DESIGNS, out)
    assert all(path.exists() for path in out.values())
    assert list(pd.read_csv(out["comparison_csv"]).columns) == comparison.TABLE_COLUMNS
    assert b"CreationDate" not in out["figure_pdf"].read_bytes()
    # Every release of the study, deduplicated (C and I share one ledger): 3 of ExPriL, 2 of LLP and
    # 1 of DP-SGD for each of the 8 runs, all keyed by the demo secret unless a secret is set.
    note = "48 of the 48 releases' noise was keyed by the public demo secret"
    assert (note in out["comparison_md"].read_text()) == (not secret)
    assert ("demo secret" in out["comparison_md"].read_text()) == (not secret)


def test_expril_by_mmd_has_its_own_runs_and_ledger(tmp_path):
    """Its ledger: the embedding (eps / 3 and delta) then the two error queries, all for C-mmd."""
    book = ledger.record(
        tmp_path / "0.csv",
        None,
        "A",
        SEEDS,
        "embedding",
        "oracle_embedding",
        mechanisms.MeanEmbedding(1.0, 1e-5, 1250, 2),
    )
    errors = mechanisms.Counts(1.0, 1e-5, 2, 2, True)
    for t in range(2):
        book = ledger.record(
            tmp_path / f"{t + 1}.csv", book, "A", SEEDS, f"eps1-mmd/both/errors_t{t}", "oracle_errors", errors
        )
    evaluation = _write(
        tmp_path,
        "mmd",
        [
            {"dataset": "A", "seed": s, "eps": 1.0, "variant": "C", "t": 2, "accuracy": 0.8, "positive_share": 0.5}
            for s in SEEDS
        ],
    )
    runs = [
        {
            "method": "C-mmd",
            "dataset": "A",
            "eps": 1.0,
            "column": "as configured",
            "setting": "",
            "evaluation": evaluation,
            "ledger": str(tmp_path / "2.csv"),
        }
    ]
    spent, _ = comparison.privacy(runs)
    assert spent[["method", "eps", "eps_spent", "delta", "mechanisms"]].values.tolist() == [
        ["C-mmd", 1.0, 1.0, 1e-5, "counts; rff-embedding"]
    ]
    assert set(comparison.read_runs(runs, 2).method) == {"C-mmd"}


def test_expril_by_mmd_is_found_and_not_tested_where_it_repeats_plain_expril():
    """On A (no IS step) C-mmd's runs are C's and I-mmd's are I's (2 points below C in every run);
    on D, C-mmd differs from C in one run and I-mmd from I in every run."""
    rows = [
        {"dataset": d, "method": m, "eps": 1.0, "column": "tuned", "seed": s, "accuracy": acc - shift}
        for d in ("A", "D")
        for m, shift in (("C", 0.0), ("C-mmd", 0.0), ("I", 0.02), ("I-mmd", 0.02))
        for s, acc in enumerate(C_RUNS)
    ]
    runs = pd.DataFrame(rows)
    runs.loc[(runs.dataset == "D") & (runs.method == "C-mmd") & (runs.seed == 3), "accuracy"] = 0.5
    runs.loc[(runs.dataset == "D") & (runs.method == "I-mmd"), "accuracy"] -= 0.03
    assert comparison.plain_repeats(runs) == {("A", "C-mmd"), ("A", "I-mmd")}
    tests = comparison.paired_tests(comparison.counted(runs, DESIGNS), "tuned", DESIGNS)
    assert sorted(zip(tests.dataset, tests.method)) == [("A", "I"), ("D", "C-mmd"), ("D", "I"), ("D", "I-mmd")]
    assert tests.set_index(["dataset", "method"]).difference.to_dict() == pytest.approx(
        {("A", "I"): -2.0, ("D", "I"): -2.0, ("D", "I-mmd"): -5.0, ("D", "C-mmd"): 100 * (0.5 - C_RUNS[3]) / 8}
    )


def test_each_benchmarks_design_follows_how_its_runs_are_drawn():
    """config.yaml with the identified readings over it, as the workflow reads it: A and C draw
    fresh data (A: 2500 target records, half the validation split, so 1250 test records and 2500
    source + 1250 validation records to learn from); CTG-A and BC split one file's records anew
    (CTG-A: 950 target records, 700 of them the validation split, 250 the test split, beside 700
    source records)."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    identified = yaml.safe_load((ROOT / "data/identification/choice.yaml").read_text())
    for name, readings in identified["benchmarks"].items():
        config["benchmarks"][name].update(readings)
    designs = design.designs(config)
    assert designs["A"] == design.Design(n_test=1250, n_train=3750, resampled=False)
    assert designs["C"] == design.Design(n_test=2500, n_train=7500, resampled=False)
    assert designs["CTG-A"] == designs["CTG-B"] == design.Design(n_test=250, n_train=1400, resampled=True)
    assert designs["BC"] == design.Design(n_test=150, n_train=300, resampled=True)
    config["benchmarks"]["A"]["redraw"] = "split"  # every run splits data set 0's target anew
    assert design.designs(config)["A"].resampled


def test_equal_results_tie_in_the_table_the_ranks_and_the_leaders():
    """LLP's runs are C-ExPriL's up to the last bit of each accuracy: as floats LLP's mean is the
    higher, as counts of correct test records the two tie. They share ranks 1 and 2 on both
    datasets (1.5 each), both lead, and LLP is not tested against C-ExPriL."""
    c = [0.70, 0.71, 0.72, 0.74]
    llp = [np.nextafter(a, 1) for a in c]
    assert np.mean(llp) > np.mean(c)  # what the float accuracies would rank apart
    runs = _runs(
        {(d, m, 1.0): values for d in ("A", "B") for m, values in (("C", c), ("llp", llp), ("dpsgd", [0.6] * 4))}
    )
    runs = comparison.counted(runs, DESIGNS)
    table = _table(runs)
    means = table.set_index(["dataset", "method"])["mean"]
    assert means["A", "C"] == means["A", "llp"] == 71.75
    ranking, ranks = comparison.rankings(table, ["C", "llp", "dpsgd"], "tuned")
    assert ranks[1.0].to_dict() == {"C": 1.5, "llp": 1.5, "dpsgd": 3.0}
    tests = comparison.paired_tests(runs, "tuned", DESIGNS)
    assert tests.method.tolist() == ["dpsgd", "dpsgd"]
    top = comparison.leaders(table, ["C", "llp", "dpsgd"], "tuned", tests)
    assert top.methods.tolist() == ["C-ExPriL, LLP", "C-ExPriL, LLP"]


def test_paired_differences_equal_in_correct_records_tie_in_the_wilcoxon_test():
    """20 runs on E's 1250 test records, LLP - C-ExPriL: +17, -17, -20, -21 and +22 to +37 records.
    The two |differences| of 0.0136 differ in their last bits as accuracies; as counts they tie
    (ranks 1.5), and the p is the tie-corrected normal approximation: T+ = 210 - 8.5 = 201.5, mean
    105, variance 20 x 21 x 41 / 24 - (2^3 - 2) / 48 = 717.375."""
    d = np.array([17, -17, -20, -21, *range(22, 38)])
    base = 800 + 5 * np.arange(20)
    base[1] = 917
    c, llp = base / 1250, (base + d) / 1250
    assert abs(llp[0] - c[0]) != abs(llp[1] - c[1])
    runs = comparison.counted(_runs({("E", "C", 1.0): c, ("E", "llp", 1.0): llp}), DESIGNS)
    test = comparison.paired_tests(runs, "tuned", DESIGNS).iloc[0]
    assert test.test == "Wilcoxon signed-rank" and test.difference == pytest.approx(100 * d.mean() / 1250)
    assert test.p_value == pytest.approx(2 * stats.norm.sf((201.5 - 105) / math.sqrt(717.375)), rel=1e-9)


def test_runs_that_resample_one_pool_take_the_corrected_resampled_t_test():
    """The same 3 runs on A (fresh data) and CTG (one pool; 100 test records, 150 to learn from):
    LLP gets 2, 4 and 6 more test records right than C-ExPriL. On A, Wilcoxon's exact p: all 3 pairs
    one way, 2/8. On CTG, t = 4 / sqrt((1/3 + 100/150) x 4) = 2 on 2 degrees of freedom, p = 1 -
    2/sqrt(6); Holm over the two: 2 x 0.184 = 0.367, then max(0.367, 0.25)."""
    c, llp = [0.70, 0.80, 0.90], [0.72, 0.84, 0.96]
    runs = _runs({(d, m, 1.0): values for d in ("A", "CTG") for m, values in (("C", c), ("llp", llp))})
    runs = comparison.counted(runs, DESIGNS)
    tests = comparison.paired_tests(runs, "tuned", DESIGNS).set_index("dataset")
    assert tests.test.to_dict() == {"A": "Wilcoxon signed-rank", "CTG": "corrected resampled t"}
    assert tests.p_value.to_dict() == pytest.approx({"A": 0.25, "CTG": 1 - 2 / math.sqrt(6)})
    assert tests.p_holm.tolist() == pytest.approx([2 - 4 / math.sqrt(6)] * 2)
    assert tests.difference.tolist() == pytest.approx([4.0, 4.0])
    md = comparison.markdown(_table(runs), tests.reset_index(), pd.DataFrame(), ["C", "llp"], ["A", "CTG"], "tuned")
    assert "| CTG | 1 | LLP | 3 | +4.0 | corrected resampled t | 0.18 | 0.37 | no significant difference |" in md


def test_no_privacy_is_a_reference_and_no_contest():
    """A and B at eps 1 and inf, 8 runs: at eps 1 LLP 5 points above C-ExPriL in every run, DP-SGD
    10 below; at inf LLP 3 and DP-SGD 10 above. Only the 4 tests at eps 1 are made, each p = 2/256,
    so Holm multiplies the smallest by 4 (1/32, significant; with the 4 at inf it would be 8 x 2/256
    = 0.0625, none). The inf rows stay in the accuracy table, unmarked; the leaders and the ranks
    are those of eps 1 alone."""
    shifts = {1.0: {"llp": 0.05, "dpsgd": -0.10}, INF: {"llp": 0.03, "dpsgd": 0.10}}
    runs = _runs(
        {
            (d, m, eps): [a + shifts[eps].get(m, 0.0) for a in C_RUNS]
            for d in ("A", "B")
            for eps in shifts
            for m in ("C", "llp", "dpsgd")
        }
    )
    runs = comparison.counted(runs, DESIGNS)
    table = _table(runs)
    tests = comparison.paired_tests(runs, "tuned", DESIGNS)
    assert set(tests.eps) == {1.0} and len(tests) == 4
    assert tests.p_holm.tolist() == pytest.approx([4 * 2 / 256] * 4)
    ranking, ranks = comparison.rankings(table, ["C", "llp", "dpsgd"], "tuned")
    assert ranking.eps.tolist() == [1.0] and ranks[1.0].to_dict() == {"C": 2.0, "llp": 1.0, "dpsgd": 3.0}
    top = comparison.leaders(table, ["C", "llp", "dpsgd"], "tuned", tests)
    assert top.index.tolist() == [("A", 1.0), ("B", 1.0)] and top.mark.tolist() == ["▲", "▲"]
    md = comparison.markdown(table, tests, ranking, ["C", "llp", "dpsgd"], ["A", "B"], "tuned")
    assert "| A | 1 | 75.0 ± 3.8 | 80.0 ± 3.8 ▲ | 65.0 ± 3.8 ▼ |" in md
    assert "| A | ∞ | 75.0 ± 3.8 | 78.0 ± 3.8 | 85.0 ± 3.8 |" in md  # a reference: no mark
    assert "| Dataset | 1 |" in md and "| ★ / ▲ | 0 / 2 of 2 |" in md
    assert md.count("ε = ∞ adds no noise") == 1


def test_a_currencys_table_names_its_budget_and_refuses_a_disagreeing_ledger(tmp_path):
    """The study's ledgers (Laplace counts and DP-SGD, budgeted at delta 1e-5) in a currency naming
    those mechanisms: the section's heading names (eps, delta, relation) and each method's
    mechanism; a currency naming `gaussian-counts` for ExPriL refuses the table, by ledger file."""
    runs, reference, _ = _study(tmp_path)
    out = {key: tmp_path / "out" / key for key in ("comparison_csv", "comparison_md", "runs", "tests", "ranks")}
    out |= {key: tmp_path / "out" / f"{key}.png" for key in ("figure_pdf", "figure_png", "cd_pdf", "cd_png")}
    methods = ["C", "I", "llp", "dpsgd"]
    agreed = Currency(
        "approx", 1e-5, mechanisms.RECORD, {"C": "counts", "I": "counts", "llp": "counts", "dpsgd": "dpsgd"}
    )
    comparison.compare(runs, reference, methods, ["A"], 2, DESIGNS, out, currency=agreed)
    md = out["comparison_md"].read_text()
    assert md.startswith("## (ε, δ = 1e-05), neighbours: add/remove one record: currency `approx`\n")
    assert "Mechanisms: C-ExPriL `counts`, I-ExPriL `counts`, LLP `counts`, DP-SGD `dpsgd`." in md
    zcdp = Currency(
        "approx", 1e-5, mechanisms.RECORD, {**agreed.mechanisms, "C": "gaussian-counts", "I": "gaussian-counts"}
    )
    with pytest.raises(
        ValueError, match=r"expril.ledger.csv: seed 0, query 'marginals' \(C at eps 1.0\) has mechanism"
    ):
        comparison.compare(runs, reference, methods, ["A"], 2, DESIGNS, out, currency=zcdp)
    pure = Currency("pure", 0.0, mechanisms.RECORD, agreed.mechanisms)
    with pytest.raises(ValueError, match=r"has delta_budget 1e-05 where currency 'pure' expects 0.0"):
        comparison.compare(runs, reference, methods, ["A"], 2, DESIGNS, out, currency=pure)


def test_an_expril_run_is_read_at_its_settings_last_iteration(tmp_path):
    """h_T: t = 2 (the configured T) for a run without `iterations`, t = 1 for a T1 setting's run."""
    rows = [("A", 0, 1.0, v, t, 0.5 + 0.1 * t, 0.5) for v in ("C", "I") for t in (0, 1, 2)]
    path = tmp_path / "accuracy.csv"
    pd.DataFrame(rows, columns=["dataset", "seed", "eps", "variant", "t", "accuracy", "positive_share"]).to_csv(
        path, index=False
    )
    run = {"method": "I", "dataset": "A", "eps": 1.0, "column": "tuned", "setting": "", "evaluation": str(path)}
    read = comparison.read_runs([run, run | {"setting": "~budget=T1", "iterations": 1}], 2)
    assert read.accuracy.tolist() == pytest.approx([0.7, 0.6])


# ---------------------------------------------------------------- round 3's checks (issue 49)


def test_a_cell_where_no_method_beats_the_majority_class_is_no_ones_lead():
    """h0* scores 70 on A. At eps 1 the best method (LLP, 65) is below it: no one's lead, neither
    marked nor counted; at eps 10 C-ExPriL's 80 beats it: a lead, counted."""
    runs = _runs(
        {
            ("A", "C", 1.0): [0.60, 0.62],
            ("A", "llp", 1.0): [0.65, 0.65],
            ("A", "C", 10.0): [0.80, 0.80],
            ("A", "llp", 10.0): [0.70, 0.72],
            ("A", "h0_star", INF): [0.70, 0.70],
        }
    ).assign(column=lambda f: np.where(f.method == "h0_star", "reference", "tuned"))
    table = _table(comparison.counted(runs, DESIGNS))
    assert comparison.unled(table, ["C", "llp"], "tuned") == {("A", 1.0)}
    top = comparison.leaders(
        table, ["C", "llp"], "tuned", comparison.paired_tests(comparison.counted(runs, DESIGNS), "tuned", DESIGNS)
    )
    majority = table[table.method == "h0_star"].set_index("dataset")["mean"]
    lines = comparison.leaders_table(top, ["A"], "tuned", ["C", "llp"], {("A", 1.0)}, majority)
    assert lines[4] == "| A | no lead: LLP (65.0) ≤ h0* (70.0) | C-ExPriL (80.0) |"
    assert lines[5] == "| ★ / ▲ | 0 / 0 of 0, no lead 1 | 0 / 0 of 1 |"


def test_every_tuned_cell_keeps_its_as_configured_column(tmp_path):
    runs = _runs({("A", "C", 1.0): [0.6, 0.7], ("A", "llp", 1.0): [0.6, 0.7]})
    configured = _runs({("A", "C", 1.0): [0.6, 0.7]}, column="as configured")
    table = _table(comparison.counted(pd.concat([runs, configured]), DESIGNS))
    assert comparison.missing_configured(table) == [("A", "llp", 1.0)]
    assert comparison.missing_configured(_table(comparison.counted(configured, DESIGNS))) == []


def test_compare_refuses_a_tuned_cell_without_its_as_configured_column(tmp_path):
    """The study's runs without DP-SGD's as-configured run: compare() stops before writing anything,
    naming the cell and the key."""
    runs, reference, _ = _study(tmp_path)
    kept = [r for r in runs if (r["method"], r["column"]) != ("dpsgd", "as configured")]
    out = {"runs": tmp_path / "out" / "runs.csv"}
    with pytest.raises(ValueError, match=r"e\.g\. \[\('A', 'dpsgd', 1\.0\)\].*columns: \[tuned, as configured\]"):
        comparison.compare(kept, reference, ["C", "I", "llp", "dpsgd"], ["A"], 2, DESIGNS, out)
    assert not (tmp_path / "out").exists()


def test_every_fall_from_one_eps_to_the_next_is_listed_with_its_confidence_interval():
    """Fresh data (A, 100 test records): the 4 runs' differences from eps 1 to 3 are -10, -6, -8,
    -4 points (mean -7, sd 2.58), Student's 95 % interval -7 +- 3.182 * 2.58 / 2 = [-11.11, -2.89];
    3 -> 10 rises (left out); 10 -> inf falls by 1 everywhere (sd 0: [-1, -1]). On a resampled
    pool (CTG: n_test/n_train = 100/150) the interval widens by sqrt((1/4 + 2/3) / (1/4)). On E (1,250
    test records) 3,000 correct records at eps 1 and at 3 (by +3, -1, -2 a run) are no fall, though
    the float mean of the differences comes out at -9e-18."""
    c1, c3 = [0.80, 0.76, 0.78, 0.74], [0.70, 0.70, 0.70, 0.70]
    runs = _runs(
        {
            ("A", "C", 1.0): c1,
            ("A", "C", 3.0): c3,
            ("A", "C", 10.0): [0.9] * 4,
            ("A", "C", INF): [0.89] * 4,
            ("CTG", "C", 1.0): c1,
            ("CTG", "C", 3.0): c3,
            ("E", "C", 1.0): [0.8] * 3,
            ("E", "C", 3.0): [0.8024, 0.7992, 0.7984],
        }
    )
    falls = comparison.drops(comparison.counted(runs, DESIGNS), ["C"], "tuned", DESIGNS)
    assert falls[["dataset", "eps", "next_eps"]].values.tolist() == [
        ["A", 1.0, 3.0],
        ["A", 10.0, INF],
        ["CTG", 1.0, 3.0],
    ]
    half = stats.t.ppf(0.975, 3) * np.std([-10, -6, -8, -4], ddof=1) / 2
    first = falls.iloc[0]
    assert (first["mean"], first.next_mean, first.change) == pytest.approx((77.0, 70.0, -7.0))
    assert (first.ci_low, first.ci_high) == pytest.approx((-7 - half, -7 + half))
    assert (falls.iloc[1].change, falls.iloc[1].ci_low, falls.iloc[1].ci_high) == pytest.approx((-1, -1, -1))
    widened = half * math.sqrt((1 / 4 + 100 / 150) / (1 / 4))
    assert falls.iloc[2].ci_high == pytest.approx(-7 + widened)
    lines = comparison.drops_table(falls, "tuned")
    assert lines[4] == "| A | C-ExPriL | 1 → 3 | 77.0 → 70.0 | -7.0 [-11.1, -2.9] | `configured` → `configured` |"


def test_a_noiseless_run_shared_between_currencies_is_named_by_the_tables_currency(tmp_path):
    """At eps = inf the pure table reads the approx currency's run (currency.home): its ledger says
    gaussian-counts with delta 1e-5; the table names pure's `counts`, at eps 1 the ledger's own."""
    for eps, name in ((INF, "gaussian-counts"), (1.0, "counts")):
        plan = mechanisms.get(name)(eps, 1e-5 if math.isinf(eps) else 0.0, 2, 2, False)
        ledger.record(tmp_path / f"eps{eps}.ledger.csv", None, "A", SEEDS, "marginals", "oracle_marginals", plan)
    runs = [
        {"method": "C", "dataset": "A", "eps": eps, "column": "tuned", "ledger": str(tmp_path / f"eps{eps}.ledger.csv")}
        for eps in (INF, 1.0)
    ]
    pure = Currency("pure", 0.0, mechanisms.RECORD, {"C": "counts"})
    spent, rows = comparison.privacy(runs, pure)
    assert spent.set_index("eps").mechanisms.to_dict() == {INF: "counts", 1.0: "counts"}
    assert set(rows[rows.eps == INF].mechanism) == {"gaussian-counts"}  # the rows as written
    spent, _ = comparison.privacy(runs)
    assert spent.set_index("eps").mechanisms.to_dict() == {INF: "gaussian-counts", 1.0: "counts"}
    # a currency's own run keeps every name its ledger gives (by MMD: its embedding's beside the chain's)
    gaussian = mechanisms.get("gaussian-counts")(INF, 1e-5, 10, 2, True)
    embedding = mechanisms.get("zcdp-embedding")(INF, 1e-5, 400, 2)
    book = ledger.record(tmp_path / "mmd.ledger.csv", None, "A", SEEDS, "embedding", "oracle_embedding", embedding)
    ledger.record(tmp_path / "mmd.ledger.csv", book, "A", SEEDS, "errors_t0", "mmd_errors", gaussian)
    run = runs[0] | {"method": "C-mmd", "ledger": str(tmp_path / "mmd.ledger.csv")}
    approx = Currency("approx", 1e-5, mechanisms.RECORD, {"C-mmd": "gaussian-counts"})
    spent, _ = comparison.privacy([run], approx)
    assert spent.mechanisms.tolist() == ["gaussian-counts; zcdp-embedding"]
