import math

import numpy as np
import pandas as pd
import pytest

from expril import io
from expril.privacy import ledger, mechanisms
from expril.reports import reproduction
from harness import CTG_FILE

INF = math.inf
T = 2


def _accuracy(runs):
    """Accuracy rows from {(dataset, seed, eps, variant): [acc at t=0..T]}."""
    rows = [
        {"dataset": ds, "seed": seed, "eps": eps, "variant": variant, "t": t, "accuracy": acc}
        for (ds, seed, eps, variant), curve in runs.items()
        for t, acc in enumerate(curve)
    ]
    return pd.DataFrame(rows)


def _reference(values):
    """Reference rows from {(dataset, seed): (h_star, h0_star)}."""
    return pd.DataFrame(
        [{"dataset": ds, "seed": seed, "h_star": h, "h0_star": h0} for (ds, seed), (h, h0) in values.items()]
    )


def _long(eps_values=(1, INF)):
    """Dataset A, seeds 0 and 1: no-DP C ends at 0.8 and 0.9, I at 0.7 and 0.8; each finite eps
    lowers both by 0.1. Intermediate iterations hold a decoy 0.1 that must not enter Table 2."""
    runs = {}
    for eps in eps_values:
        drop = 0.0 if math.isinf(eps) else 0.1
        for seed, (c, i) in enumerate([(0.8, 0.7), (0.9, 0.8)]):
            runs[("A", seed, eps, "C")] = [0.5, 0.1, c - drop]
            runs[("A", seed, eps, "I")] = [0.5, 0.1, i - drop]
    ref = _reference({("A", 0): (0.9, 0.5), ("A", 1): (0.9, 0.6)})
    return reproduction.long_table(_accuracy(runs), ref)


def _value(t2, method, column="mean"):
    return t2.set_index("method").loc[method, column]


def test_long_table_keeps_every_row():
    acc = _accuracy({("A", 0, 1.0, "C"): [0.5, 0.6, 0.7], ("B", 3, INF, "I"): [0.4, 0.5, 0.6]})
    ref = _reference({("A", 0): (0.9, 0.5), ("B", 3): (0.8, 0.6)})
    long = reproduction.long_table(acc, ref)
    assert list(long.columns) == reproduction.LONG_COLUMNS
    assert len(long) == len(acc) + 2 * len(ref)
    assert (long.method == "expril").sum() == len(acc)
    assert set(long.method) == {"expril", "h_star", "h0_star"}
    assert long[long.method != "expril"][["eps", "variant", "t"]].isna().all().all()
    assert long.equals(reproduction.long_table(acc.iloc[::-1], ref.iloc[::-1]))


def test_long_table_survives_csv_round_trip(tmp_path):
    long = _long()
    path = tmp_path / "accuracies.csv"
    io.save_csv(path, long)
    back = pd.read_csv(path)
    assert len(back) == len(long)
    assert np.isinf(back.eps).sum() == np.isinf(long.eps).sum()
    t2_back = reproduction.table2(back, ["A"], T)
    pd.testing.assert_frame_equal(t2_back, reproduction.table2(long, ["A"], T))


def test_table2_stats_from_final_iteration():
    t2 = reproduction.table2(_long(), ["A"], T)
    assert _value(t2, "C") == pytest.approx(85.0)
    assert _value(t2, "C", "std") == pytest.approx(7.0711, abs=1e-4)
    assert _value(t2, "C", "n_runs") == 2
    assert _value(t2, "I") == pytest.approx(75.0)
    assert _value(t2, "1DP-C") == pytest.approx(75.0)
    assert _value(t2, "1DP-I") == pytest.approx(65.0)
    assert _value(t2, "h_star") == pytest.approx(90.0)
    assert _value(t2, "h_star", "std") == pytest.approx(0.0)
    assert _value(t2, "h0_star") == pytest.approx(55.0)


def test_table2_method_order():
    t2 = reproduction.table2(_long((1, INF)), ["A"], T)
    assert list(t2.method) == ["h_star", "C", "I", "1DP-C", "1DP-I", "h0_star", "ratio"]
    t2 = reproduction.table2(_long((2, INF, 0.5)), ["A"], T)
    assert list(t2.method) == ["h_star", "C", "I", "0.5DP-C", "0.5DP-I", "2DP-C", "2DP-I", "h0_star", "ratio"]


def test_table2_ratio_prefers_no_dp_and_falls_back_to_largest_eps():
    t2 = reproduction.table2(_long((1, INF)), ["A"], T)
    assert _value(t2, "ratio") == pytest.approx((90 - 85) / 90)
    assert np.isnan(_value(t2, "ratio", "std"))
    assert _value(t2, "ratio", "n_runs") == 2
    t2 = reproduction.table2(_long((1,)), ["A"], T)
    assert list(t2.method) == ["h_star", "1DP-C", "1DP-I", "h0_star", "ratio"]
    assert _value(t2, "ratio") == pytest.approx((90 - 75) / 90)


def test_table2_single_run_and_dataset_order():
    acc = _accuracy({("B", 0, INF, "C"): [0.5, 0.5, 0.6], ("A", 0, INF, "C"): [0.5, 0.5, 0.7]})
    ref = _reference({("A", 0): (0.9, 0.5), ("B", 0): (0.8, 0.5)})
    t2 = reproduction.table2(reproduction.long_table(acc, ref), ["B", "A", "Z"], T)
    assert list(t2.dataset.unique()) == ["B", "A"]
    assert t2.loc[(t2.dataset == "B") & (t2.method == "C"), "std"].isna().all()


def test_table2_markdown():
    md = reproduction.table2_markdown(reproduction.table2(_long(), ["A"], T))
    assert "| Dataset | ĥ* | C-ExPriL | I-ExPriL | 1DP-C-ExPriL | 1DP-I-ExPriL | h0* | ratio |" in md
    assert "| A | 90.0 ± 0.0 | 85.0 ± 7.1 | 75.0 ± 7.1 |" in md
    assert "| 5.6e-2 |" in md
    assert "over 2 runs" in md


def _config():
    return {
        "datasets": ["A", "C", "CTG-B"],
        "runs": 4,
        "epsilons": [1, "inf"],
        "iterations": 2,
        "mechanism": "paper",
        "val_fraction": 0.5,
        "bins": {"snr": 4, "noiseless": "sqrt"},
        "benchmarks": {
            "A": {
                "generator": "clusters",
                "dim": 2,
                "clusters": 15,
                "n_source": 2500,
                "n_target": 2500,
                "importance_sampling": False,
                "hidden": [16, 256, 256, 16],
            },
            "C": {
                "generator": "latent",
                "latent_dim": 3,
                "dim": 10,
                "components": 3,
                "n_source": 5000,
                "n_target": 5000,
                "importance_sampling": True,
                "hidden": [32, 32],
            },
            "CTG-B": {
                **CTG_FILE,
                "shift": "LB",
                "n_source": 700,
                "n_target": 700,
                "importance_sampling": True,
                "hidden": [16, 256, 256, 16],
            },
        },
    }


def test_table1_counts_mechanism_adds_the_counts_query_without_is_step():
    t1 = reproduction.table1(_config() | {"mechanism": "counts"}).set_index("dataset")
    assert list(t1["queries"]) == [3, 3, 3]
    assert t1.loc["A"].lambda_eps1 == pytest.approx(2 * 3 / 1)


def test_table1():
    t1 = reproduction.table1(_config()).set_index("dataset")
    a, c, ctg = t1.loc["A"], t1.loc["C"], t1.loc["CTG-B"]
    assert (a.queries, a.is_step, a.n_val, a.n_test, a.d) == (2, "No", 1250, 1250, 2)
    assert a.lambda_eps1 == pytest.approx(6.0)  # Eq. 14: d (T+1) / eps, also without IS step
    assert a.q_eps1 == round(1250 / (4 * math.sqrt(2) * 6)) == 37
    assert a.lambda_epsinf == 0 and a.q_epsinf == math.ceil(math.sqrt(1250))
    assert a.parameters == "15 clusters, d_i = 2" and a.hidden == "[16,256,256,16]"
    assert (c.queries, c.is_step, c.lambda_eps1) == (3, "Yes", 30.0)
    assert c.parameters == "d_l = 3, d_i = 10"
    assert (ctg.d, ctg.lambda_eps1, ctg.parameters) == (21, 63.0, "CTG, shift on LB")


def test_table1_with_a_benchmark_split_and_matched_noiseless_bins():
    config = _config()
    config["bins"] = {"snr": 4, "noiseless": "matched"}
    config["benchmarks"]["CTG-B"] = {**config["benchmarks"]["CTG-B"], "n_target": 950, "val_fraction": 5 / 19}
    t1 = reproduction.table1(config).set_index("dataset")
    a, ctg = t1.loc["A"], t1.loc["CTG-B"]
    assert a.n_val == 1250 and (ctg.n_val, ctg.n_test) == (250, 700)
    assert a.q_epsinf == a.q_eps1 == 37 and ctg.q_epsinf == ctg.q_eps1 == 2


def test_figure1_files(tmp_path):
    pdf, png = tmp_path / "fig" / "figure1.pdf", tmp_path / "fig" / "figure1.png"
    reproduction.figure1(_long(), T, pdf, png)
    assert pdf.stat().st_size > 0 and png.stat().st_size > 0
    assert sorted(p.name for p in pdf.parent.iterdir()) == ["figure1.pdf", "figure1.png"]
    assert b"CreationDate" not in pdf.read_bytes()  # the same results give the same file


def test_write_all(tmp_path):
    long = _long()
    acc = long[long.method == "expril"].drop(columns="method")
    ref = pd.DataFrame({"dataset": "A", "seed": [0, 1], "h_star": 0.9, "h0_star": [0.5, 0.6]})
    config = _config() | {"datasets": ["A"]}
    out = {
        key: tmp_path / name
        for key, name in [
            ("accuracies", "accuracies.csv"),
            ("table2_csv", "table2.csv"),
            ("table2_md", "table2.md"),
            ("table1", "table1.csv"),
            ("figure_pdf", "figure1.pdf"),
            ("figure_png", "figure1.png"),
            ("privacy_ledger", "privacy_ledger.csv"),
        ]
    }
    privacy = mechanisms.Paper(1.0, 0.0, 2, 1, True)  # lambda = 4: eps 1/2 per query
    book = None
    for query in ["errors_t0", "errors_t1"]:
        book = ledger.record(tmp_path / "chain.csv", book, "A", [0, 1], query, "oracle_errors", privacy)
    reproduction.write_all(acc, ref, book, config, out)
    assert all(path.stat().st_size > 0 for path in out.values())
    assert len(pd.read_csv(out["accuracies"])) == len(long)
    assert len(pd.read_csv(out["privacy_ledger"])) == 4
    md = out["table2_md"].read_text()
    assert "85.0 ± 7.1" in md and "| A | paper | 1 | 2 | 1 |" in md


def test_figure1_band_is_one_sample_std_around_the_mean():
    """seaborn's errorbar='sd' band: mean ± std (ddof 1) over runs, in points from mean h*."""
    import matplotlib.pyplot as plt

    long = _long()
    fig, ax = plt.subplots()
    runs = long[(long.method == "expril") & (long.eps == 1)]
    reproduction._panel(ax, runs, 0.9, T)
    band = ax.collections[0].get_paths()[0].vertices  # C-ExPriL's band
    at_t2 = band[band[:, 0] == 2, 1]
    c = 100 * (np.array([0.7, 0.8]) - 0.9)  # C at eps 1 ends at 0.7 and 0.8
    assert sorted(set(np.round(at_t2, 6))) == pytest.approx([c.mean() - c.std(ddof=1), c.mean() + c.std(ddof=1)])
    plt.close(fig)
