"""The comparison's tables, tests and figure (expril.reports.comparison) on small frames written by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from expril import settings
from expril.privacy import ledger, mechanisms
from expril.reports import comparison

INF = math.inf
C_RUNS = [0.70, 0.72, 0.74, 0.76, 0.78, 0.80]  # 6 runs: the smallest two-sided Wilcoxon p is 2/64


def _frames():
    """Dataset A, eps 1 and inf, 6 runs: I equals C, LLP is 5 points above C in every run, DP-SGD 10
    below; ExPriL's intermediate iterations hold a decoy 0.1."""
    expril = pd.DataFrame(
        [
            {"dataset": "A", "seed": s, "eps": eps, "variant": v, "t": t, "accuracy": 0.1 if t < 2 else acc}
            for eps in (1.0, INF)
            for s, acc in enumerate(C_RUNS)
            for v in "CI"
            for t in range(3)
        ]
    )
    rivals = pd.DataFrame(
        [
            {"dataset": "A", "seed": s, "eps": eps, "method": m, "accuracy": acc + shift}
            for eps in (1.0, INF)
            for s, acc in enumerate(C_RUNS)
            for m, shift in (("llp", 0.05), ("dpsgd", -0.10))
        ]
    )
    reference = pd.DataFrame({"dataset": "A", "seed": range(6), "h_star": 0.9, "h0_star": 0.5})
    return expril, rivals, reference


def _runs(methods=("C", "I", "llp", "dpsgd")):
    return comparison.runs_table(*_frames(), list(methods), iterations=2)


def _ledger(tmp_path):
    """Every method's ledger rows for dataset A at eps 1, as the workflow writes them."""
    rows, book = [], None
    plan = mechanisms.Counts(1.0, 1e-5, 2, 2, False)
    for query, rule in [
        ("marginals", "oracle_marginals"),
        ("errors_t0", "oracle_errors"),
        ("errors_t1", "oracle_errors"),
    ]:
        book = ledger.record(tmp_path / "expril.csv", book, "A", range(6), query, rule, plan)
    rows.append(book)
    llp, book = mechanisms.Counts(1.0, 1e-5, 2, 1, False), None
    for query in ("llp/counts", "llp/negatives"):
        book = ledger.record(tmp_path / "llp.csv", book, "A", range(6), query, "oracle_proportions", llp)
    rows.append(book)
    dp = mechanisms.DPSGD(1.0, 1e-5, settings.sample_rate(1250, 64), 2, 1.0)
    rows.append(ledger.record(tmp_path / "dp.csv", None, "A", range(6), "dpsgd", "train_dpsgd", dp))
    return pd.concat(rows, ignore_index=True), dp.query_cost()[0]


def test_runs_hold_the_final_hypothesis_the_rivals_and_the_references():
    runs = _runs()
    assert list(runs.columns) == comparison.RUN_COLUMNS
    assert len(runs) == 2 * 4 * 6 + 2 * 6 and 0.1 not in set(runs.accuracy)
    assert list(runs.method.unique()) == ["C", "I", "llp", "dpsgd", "h_star", "h0_star"]
    assert set(runs[runs.method.isin(comparison.REFERENCES)].eps) == {INF}
    assert set(_runs(["llp"]).method) == {"llp", "h_star", "h0_star"}


def test_the_table_has_each_methods_accuracy_and_privacy(tmp_path):
    book, dp_eps = _ledger(tmp_path)
    table = comparison.comparison_table(_runs(), comparison.privacy(book)).set_index(["method", "eps"])
    assert list(table.reset_index().columns) == ["method", "eps"] + [
        c for c in comparison.TABLE_COLUMNS if c not in ("method", "eps")
    ]
    assert table.loc[("C", 1.0), "mean"] == pytest.approx(75.0) and table.loc[("C", 1.0), "n_runs"] == 6
    assert table.loc[("C", 1.0), "std"] == pytest.approx(100 * np.std(C_RUNS, ddof=1))
    assert table.loc[("llp", 1.0), "mean"] == pytest.approx(80.0)
    assert table.loc[("dpsgd", INF), "mean"] == pytest.approx(65.0)
    for method, eps_spent, delta in [("C", 1.0, 0.0), ("I", 1.0, 0.0), ("llp", 1.0, 0.0), ("dpsgd", dp_eps, 1e-5)]:
        row = table.loc[(method, 1.0)]
        assert (row.eps_spent, row.delta, row.neighbours) == (pytest.approx(eps_spent), delta, mechanisms.RECORD)
    assert [table.loc[(m, 1.0), "mechanisms"] for m in ("C", "llp", "dpsgd")] == ["counts", "counts", "dpsgd"]
    assert table.loc[("h_star", INF), "neighbours"].startswith("none")
    assert np.isnan(table.loc[("C", INF), "eps_spent"])  # no ledger given for eps = inf here


def test_paired_tests_say_where_c_expril_wins_and_loses():
    tests = comparison.paired_tests(_runs()).set_index(["method", "eps"])
    assert len(tests) == 6 and set(tests.n_pairs) == {6}
    assert tests.loc[("llp", 1.0)].verdict == "C-ExPriL loses"
    assert tests.loc[("llp", 1.0)].difference == pytest.approx(5.0)
    assert tests.loc[("llp", 1.0)].p_value == pytest.approx(2 / 64)
    assert tests.loc[("dpsgd", INF)].verdict == "C-ExPriL wins"
    assert tests.loc[("I", 1.0)].verdict == "no significant difference" and tests.loc[("I", 1.0)].p_value == 1.0
    assert comparison.paired_tests(_runs(["I", "llp"])).empty  # no C-ExPriL to compare with


def test_markdown_marks_significant_cells_and_lists_privacy(tmp_path):
    book, _ = _ledger(tmp_path)
    runs = _runs()
    table = comparison.comparison_table(runs, comparison.privacy(book))
    md = comparison.markdown(table, comparison.paired_tests(runs), ["C", "I", "llp", "dpsgd"], ["A", "B"])
    assert "| Dataset | ε | C-ExPriL | I-ExPriL | LLP | DP-SGD |" in md
    assert "| A | 1 | 75.0 ± 3.7 | 75.0 ± 3.7 | 80.0 ± 3.7 ▲ | 65.0 ± 3.7 ▼ |" in md
    assert "| A | ∞ |" in md and "| B |" not in md
    assert "| A | 90.0 ± 0.0 | 50.0 ± 0.0 |" in md
    assert "| Dataset | 1 | ∞ |\n|---|---|---|\n| A | LLP (80.0) | LLP (80.0) |" in md  # the highest means
    assert "| DP-SGD | dpsgd | add/remove one record | 1 |" in md and "over 6 runs" in md and "6 tests" in md


def test_leaders_are_the_highest_means_with_ties(tmp_path):
    runs = _runs(["C", "I", "dpsgd"])
    table = comparison.comparison_table(runs, comparison.privacy(_ledger(tmp_path)[0]))
    top = comparison.leaders(table, ["C", "I", "dpsgd"])
    assert top.loc[("A", 1.0)].tolist() == ["C-ExPriL, I-ExPriL", pytest.approx(75.0)]


def test_eps_positions_put_no_privacy_beyond_the_largest_eps():
    assert comparison._positions([0.1, 1.0, 10.0, INF]) == {0.1: 0.1, 1.0: 1.0, 10.0: 10.0, INF: 30.0}
    assert comparison._positions([INF]) == {INF: 1.0}


def test_compare_writes_every_output(tmp_path):
    expril, rivals, reference = _frames()
    files = {}
    for name, frame in [("expril", expril), ("rivals", rivals), ("reference", reference)]:
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        files[name] = [tmp_path / f"{name}.csv"]
    book, _ = _ledger(tmp_path)
    book.to_csv(tmp_path / "ledger.csv", index=False)
    out = {
        key: tmp_path / "out" / name
        for key, name in [
            ("comparison_csv", "comparison.csv"),
            ("comparison_md", "comparison.md"),
            ("runs", "runs.csv"),
            ("tests", "tests.csv"),
            ("figure_pdf", "privacy_utility.pdf"),
            ("figure_png", "privacy_utility.png"),
        ]
    }
    comparison.compare(
        files["expril"],
        files["rivals"],
        files["reference"],
        [tmp_path / "ledger.csv"],
        ["C", "I", "llp", "dpsgd"],
        ["A"],
        2,
        out,
    )
    assert all(path.stat().st_size > 0 for path in out.values())
    assert list(pd.read_csv(out["comparison_csv"]).columns) == comparison.TABLE_COLUMNS
    assert b"CreationDate" not in out["figure_pdf"].read_bytes()


def test_expril_by_mmd_has_its_own_runs_and_ledger(tmp_path):
    expril, rivals, reference = _frames()
    mmd = expril.assign(accuracy=expril.accuracy + 0.01)
    runs = comparison.runs_table(expril, rivals, reference, ["C", "C-mmd"], 2, mmd)
    assert set(runs.method) == {"C", "C-mmd", "h_star", "h0_star"}
    assert np.allclose(runs[runs.method == "C-mmd"].accuracy.values - runs[runs.method == "C"].accuracy.values, 0.01)
    # Its ledger: the embedding (eps / 3 and delta) then the two error queries, all for C-mmd.
    book = ledger.record(
        tmp_path / "0.csv",
        None,
        "A",
        range(6),
        "embedding",
        "oracle_embedding",
        mechanisms.MeanEmbedding(1.0, 1e-5, 1250, 2),
    )
    errors = mechanisms.Counts(1.0, 1e-5, 2, 2, True)
    for t in range(2):
        book = ledger.record(
            tmp_path / f"{t + 1}.csv", book, "A", range(6), f"eps1-mmd/both/errors_t{t}", "oracle_errors", errors
        )
    spent = comparison.privacy(book, ["C-mmd"])
    assert spent[["method", "eps", "eps_spent", "delta", "mechanisms"]].values.tolist() == [
        ["C-mmd", 1.0, 1.0, 1e-5, "counts; rff-embedding"]
    ]
