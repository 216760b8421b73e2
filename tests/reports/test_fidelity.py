import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from expril.reports import fidelity, reproduction
from harness import CTG_FILE

INF = math.inf
T = 2
PAPER = Path(__file__).resolve().parents[2] / "data" / "paper"
DIMS = {"A": 2, "B": 4, "C": 10, "D": 15, "E": 25, "CTG-A": 21, "CTG-B": 21}


def _long(curve, seeds=20, eps_values=(1, INF), h0=0.5, datasets=fidelity.PAPER_DATASETS):
    """Long table from curve(dataset, eps, variant, seed) -> accuracies of h_0..h_T, plus a small
    seed-dependent jitter so that paired differences are not all tied."""
    rows = []
    for ds in datasets:
        for seed in range(seeds):
            jitter = 0.001 * ((seed * 7) % 5)
            for eps in eps_values:
                for variant in ("C", "I"):
                    for t, acc in enumerate(curve(ds, eps, variant, seed)):
                        rows.append(
                            {
                                "dataset": ds,
                                "seed": seed,
                                "eps": eps,
                                "variant": variant,
                                "t": t,
                                "accuracy": acc + jitter,
                            }
                        )
    ref = pd.DataFrame(
        [{"dataset": ds, "seed": s, "h_star": 0.95, "h0_star": h0} for ds in datasets for s in range(seeds)]
    )
    return reproduction.long_table(pd.DataFrame(rows), ref)


def _status(verdict):
    return next(s for s in ("holds", "does not hold", "not testable") if verdict.startswith(s))


def test_paper_reference_files_parse():
    t2 = pd.read_csv(PAPER / "table2.csv")
    assert list(t2.columns) == ["dataset", "method", "mean", "std"]
    cells = t2[t2.method != "ratio"]
    assert len(cells) == 42 and cells[["mean", "std"]].notna().all().all()
    assert list(cells.dataset.unique()) == fidelity.PAPER_DATASETS
    assert set(cells.method) == {"h_star", "C", "I", "1DP-C", "1DP-I", "h0_star"}
    ratio = t2[t2.method == "ratio"].set_index("dataset")
    assert list(ratio.index) == fidelity.PAPER_DATASETS and ratio["std"].isna().all()
    means = cells.pivot(index="dataset", columns="method", values="mean")
    recomputed = (means.h_star - means.C) / means.h_star
    assert (ratio["mean"] - recomputed).abs().max() < 0.006  # printed to 2 significant digits
    assert t2.set_index(["dataset", "method"]).loc[("CTG-B", "1DP-I"), "mean"] == 65.1
    t1 = pd.read_csv(PAPER / "table1.csv")
    assert list(t1.dataset) == fidelity.PAPER_DATASETS
    assert list(t1.queries) == [2, 2, 3, 3, 3, 2, 3] and (t1.runs == 100).all()
    assert "hal-03620873" in (PAPER / "SOURCE.md").read_text()


def test_fidelity_within_paper_std():
    paper = pd.DataFrame(
        {
            "dataset": "A",
            "method": ["h_star", "C", "I", "1DP-C", "ratio"],
            "mean": [90.0, 80.0, 70.0, 60.0, 0.1],
            "std": [1.0, 2.0, 2.0, 2.0, np.nan],
        }
    )
    ours = pd.DataFrame(
        {
            "dataset": "A",
            "method": ["h_star", "C", "I", "ratio", "2DP-C"],
            "mean": [91.0, 77.0, 71.5, 0.15, 50.0],
            "std": [0.5, 1.0, 3.0, np.nan, 1.0],
            "n_runs": [5, 5, 5, 5, 5],
        }
    )
    side = fidelity.fidelity(ours, paper)
    assert list(side.columns) == fidelity.COLUMNS
    side = side.set_index("method")
    assert "2DP-C" not in side.index
    assert side.loc["h_star", "within_paper_std"]  # |1.0| <= 1.0: on the boundary
    assert not side.loc["C", "within_paper_std"]  # |-3| > 2
    assert side.loc["I", "within_paper_std"]
    assert side.loc["C", "difference"] == pytest.approx(-3.0)
    assert side.loc["1DP-C", "n_runs"] == 0 and np.isnan(side.loc["1DP-C", "ours_mean"])
    assert side.within_paper_std.isna().tolist() == [False, False, False, True, True]
    assert side.loc["ratio", "paper_recomputed"] == pytest.approx((90 - 80) / 90)
    assert side.loc["ratio", "difference"] == pytest.approx(0.05)
    assert side.paper_recomputed.notna().sum() == 1


def _c_vs_i(gap_elsewhere, gap_b_c):
    def curve(ds, eps, variant, seed):
        gap = gap_b_c * (-1) ** seed if ds in ("B", "C") else gap_elsewhere
        return [0.5, 0.7, 0.75 + (gap if variant == "C" else 0.0)]

    return curve


def test_c_beats_i_holds_on_the_paper_pattern():
    frame, verdict = fidelity.c_beats_i(_long(_c_vs_i(0.05, 0.01)), T)
    assert len(frame) == 14 and (frame.n_pairs == 20).all()
    assert _status(verdict) == "holds" and "14 of 14" in verdict
    assert frame.set_index(["dataset", "eps"]).loc[("A", INF), "p_value"] < 1e-4
    assert (frame[frame.dataset.isin(["B", "C"])].p_value > 0.05).all()


def test_c_beats_i_does_not_hold_when_equal_or_reversed():
    _, verdict = fidelity.c_beats_i(_long(_c_vs_i(-0.05, 0.0)), T)
    assert _status(verdict) == "does not hold" and "A no DP" in verdict and "A eps=1" in verdict
    _, verdict = fidelity.c_beats_i(_long(_c_vs_i(0.0, 0.0)), T)
    assert _status(verdict) == "does not hold" and "4 of 14" in verdict  # only B and C agree


def test_c_beats_i_not_testable_on_few_runs_and_skips_missing_eps():
    frame, verdict = fidelity.c_beats_i(_long(_c_vs_i(0.05, 0.0), seeds=2), T)
    assert frame.significant.isna().all() and _status(verdict) == "not testable"
    frame, verdict = fidelity.c_beats_i(_long(_c_vs_i(0.05, 0.01), eps_values=(INF,), datasets=["A", "B"]), T)
    assert len(frame) == 2 and _status(verdict) == "holds"
    assert "skipped: C not run" in verdict and "skipped: eps=1 not run" in verdict


def _dp_loss(sign):
    def curve(ds, eps, variant, seed):
        loss = 0.0 if math.isinf(eps) else 0.005 * (DIMS[ds] if sign > 0 else 30 - DIMS[ds])
        return [0.5, 0.8, 0.85 - loss]

    return curve


def test_dp_loss_grows_with_d():
    frame, verdict = fidelity.dp_loss_grows_with_d(_long(_dp_loss(+1), seeds=3), T, DIMS)
    assert list(frame.dataset) == fidelity.PAPER_DATASETS
    assert frame.set_index("dataset").loc["E", "loss_C"] == pytest.approx(12.5)
    assert _status(verdict) == "holds" and "rho = 1.00" in verdict
    _, verdict = fidelity.dp_loss_grows_with_d(_long(_dp_loss(-1), seeds=3), T, DIMS)
    assert _status(verdict) == "does not hold" and "rho = -1.00" in verdict
    frame, verdict = fidelity.dp_loss_grows_with_d(_long(_dp_loss(+1), eps_values=(INF,)), T, DIMS)
    assert frame.empty and _status(verdict) == "not testable" and "eps=1 not run" in verdict


def test_ctg_dp_below_h0():
    def curve(ds, eps, variant, seed):
        return [0.5, 0.6, 0.7 if math.isinf(eps) else 0.6]

    frame, verdict = fidelity.ctg_dp_below_h0(_long(curve, h0=0.75), T)
    assert list(frame.dataset) == ["CTG-A", "CTG-A", "CTG-B", "CTG-B"]
    assert np.allclose(frame.difference, -15.0 + 0.2) and (frame.p_value < 0.05).all()  # jitter
    assert _status(verdict) == "holds"
    _, verdict = fidelity.ctg_dp_below_h0(_long(curve, h0=0.5), T)
    assert _status(verdict) == "does not hold" and "CTG-B 1DP-I" in verdict


def test_plateau_rule():
    def paper_like(ds, eps, variant, seed):
        return [0.5, 0.7, 0.85] if ds == "A" else [0.5, 0.8, 0.82]  # 2/30 of the first gain

    frame, verdict = fidelity.plateau(_long(paper_like, seeds=3), T)
    assert len(frame) == 28 and _status(verdict) == "holds"
    a = frame[frame.dataset == "A"].iloc[0]
    assert (a.gain_first, a.gain_later) == pytest.approx((20.0, 15.0)) and not a.plateau

    def flat(ds, eps, variant, seed):
        return [0.8, 0.6, 0.62]  # a drop, then flat: a plateau too

    frame, verdict = fidelity.plateau(_long(flat, seeds=3), T)
    assert frame.plateau.all() and _status(verdict) == "does not hold" and "A no DP C" in verdict
    frame, verdict = fidelity.plateau(_long(flat, seeds=3), 1)
    assert frame.empty and _status(verdict) == "not testable" and "T = 1" in verdict


def test_markdown_and_write_all(tmp_path):
    long = _long(_c_vs_i(0.05, 0.01), seeds=3, datasets=["A", "CTG-A"])
    acc = long[long.method == "expril"].drop(columns="method")
    ref = (
        long[long.method != "expril"]
        .pivot(index=["dataset", "seed"], columns="method", values="accuracy")
        .reset_index()
    )
    config = {
        "datasets": ["A", "CTG-A"],
        "runs": 3,
        "epsilons": [1, "inf"],
        "iterations": T,
        "mechanism": "paper",
        "val_fraction": 0.5,
        "bins": {"snr": 4, "noiseless": "sqrt"},
        "benchmarks": {
            "A": {
                "generator": "clusters",
                "dim": 2,
                "clusters": 15,
                "n_source": 100,
                "n_target": 100,
                "importance_sampling": False,
                "hidden": [8],
            },
            "CTG-A": {
                **CTG_FILE,
                "shift": None,
                "n_source": 100,
                "n_target": 100,
                "importance_sampling": False,
                "hidden": [8],
            },
        },
    }
    names = [
        "accuracies.csv",
        "table2_csv.csv",
        "table2_md.md",
        "table1.csv",
        "figure_pdf.pdf",
        "figure_png.png",
        "fidelity_md.md",
        "fidelity_csv.csv",
        "fidelity_claims.csv",
        "privacy_ledger.csv",
    ]
    out = {name.split(".")[0]: tmp_path / name for name in names}
    book = pd.DataFrame(
        [
            {
                "dataset": "A",
                "seed": 0,
                "eps_budget": 1.0,
                "query": "errors_t0",
                "rule": "oracle_errors",
                "mechanism": "paper",
                "sensitivity": 2,
                "scale": 2.0,
                "noise_key": "public demo secret",
                "eps_spent": 1.0,
                "delta_spent": 0.0,
                "eps_total": 1.0,
                "delta_total": 0.0,
            }
        ]
    )
    reproduction.write_all(acc, ref, book, config, out, pd.read_csv(PAPER / "table2.csv"))
    assert "1 of the 1 releases' noise was keyed by the public demo secret" in out["table2_md"].read_text()
    md = out["fidelity_md"].read_text()
    assert "| Dataset | Method | Paper | Ours (runs) | Ours - paper | Within paper std |" in md
    assert "| A | C | 76.8 ± 4.6 | 80.2 ± 0.2 (3) | 3.4 | yes |" in md
    assert "| B | C | 58.5 ± 2.5 | n/a (0) | n/a | n/a |" in md
    claims_at = md.index("## Claims")
    assert all(md.index(f"### {name}") > claims_at for name in fidelity.CLAIM_TEXT)
    assert "skipped: B not run" in md
    side = pd.read_csv(out["fidelity_csv"])
    assert len(side) == 49 and list(side.columns) == fidelity.COLUMNS
    claims = pd.read_csv(out["fidelity_claims"])
    assert list(claims.claim) == list(fidelity.CLAIM_TEXT)
