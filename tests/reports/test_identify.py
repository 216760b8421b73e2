"""Identification of the open readings from h* and h0*: the criterion, the selection on known
calibration tables, and that nothing but h* and h0* can reach the choice."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from expril.reports import identify
from harness import ROOT, plan

PAPER = pd.read_csv(ROOT / "data/paper/table2.csv")


def test_distance_is_zero_at_the_paper_and_one_per_std_of_the_mean():
    paper = {"h_star": (90.0, 2.0), "h0_star": (55.0, 3.0)}
    assert identify.distance(paper, paper) == 0
    assert identify.distance({"h_star": (92.0, 2.0), "h0_star": (55.0, 3.0)}, paper) == 1
    # a std twice or half the paper's costs the same
    twice = identify.distance({"h_star": (90.0, 4.0), "h0_star": (55.0, 3.0)}, paper)
    half = identify.distance({"h_star": (90.0, 1.0), "h0_star": (55.0, 3.0)}, paper)
    assert twice == pytest.approx(half) == pytest.approx(math.log(2) ** 2)


def test_members_cover_every_combination_with_todays_readings_first():
    assert list(identify.members("A")) == ["data", "split"]
    c = identify.members("C")
    assert len(c) == 2 * 5 * 7
    assert next(iter(c)) == "data_gain1_median"
    assert c["split_gain4_share0.1"] == {
        "redraw": "split",
        "label_gain": 4,
        "label_threshold": "drawn_quantile",
        "share_spread": 0.1,
    }
    assert len(identify.members("CTG-A")) == 8 and len(identify.members("CTG-B")) == 16
    assert [d for d, _ in identify.groups()] == [("A", "B"), ("C", "D", "E"), ("CTG-A", "CTG-B")]


def test_calibration_spec_ignores_the_configured_choice():
    configured = {
        "generator": "csv",
        "shift": "LB",
        "n_target": 950,
        "val_fraction": 0.3,
        "redraw": "split",
        "shift_selects": "target",
        "hidden": [4],
    }
    spec = identify.calibration_spec(
        "CTG-B", configured, "data_v350t350_lbsource", {"redraw": "split", "val_fraction": 0.9}
    )
    assert spec == {
        "generator": "csv",
        "shift": "LB",
        "hidden": [4],
        "redraw": "data",
        "n_target": 700,
        "val_fraction": 0.5,
        "shift_selects": "source",
    }
    # a key no family of the dataset sets is the configuration's
    a = identify.calibration_spec(
        "A", {"generator": "clusters", "val_fraction": 0.3}, "split", {"redraw": "data", "val_fraction": 0.5}
    )
    assert a == {"redraw": "split", "val_fraction": 0.3, "generator": "clusters"}


def test_calibration_seeds_stay_clear_of_the_reported_runs():
    assert identify.calibration_seeds(100) == list(range(1000, 1020))
    with pytest.raises(ValueError, match="calibration seeds"):
        identify.calibration_seeds(1001)


def _runs(target):
    """Synthetic calibration runs: every member of every dataset far from the paper, except the
    members `target` names ({dataset: member}), whose 20 runs have exactly the paper's mean and std
    (under both training readings, es10 slightly better)."""
    rows = []
    paper = identify.paper_references(PAPER)
    unit = np.array([-1.0, 1.0] * 10) / np.std([-1.0, 1.0] * 10, ddof=1)  # mean 0, sample std 1
    for dataset in identify.TRAINING.datasets:
        for member in identify.members(dataset):
            for training, offset in (("es10", 0.0), ("fixed100", 0.5)):
                good = target.get(dataset) == member
                values = {}
                for m in identify.MEASURES:
                    mean, std = paper[dataset, m]
                    values[m] = (mean + (offset if good else 3 * std) + std * unit) / 100
                for s in range(20):
                    rows.append(
                        {
                            "dataset": dataset,
                            "member": member,
                            "training": training,
                            "seed": 1000 + s,
                            "h_star": values["h_star"][s],
                            "h0_star": values["h0_star"][s],
                        }
                    )
    return pd.DataFrame(rows)


TARGET = {
    "A": "data",
    "B": "data",
    "C": "data_gain8_share0.1",
    "D": "data_gain8_share0.1",
    "E": "data_gain8_share0.1",
    "CTG-A": "split_v250t700",
    "CTG-B": "split_v250t700_lbtarget",
}


def test_select_finds_the_readings_that_reproduce_the_paper():
    table = identify.summarise(_runs(TARGET), PAPER)
    choice = identify.select(table)
    assert choice == {
        "training (early stopping)": "es10",
        "redraw (A, B)": "data",
        "redraw (C, D, E)": "data",
        "label roughness (f' weight gain)": "gain8",
        "class balance (threshold of f')": "share0.1",
        "redraw (CTG-A, CTG-B)": "split",
        "CTG target rows (validation / test)": "v250t700",
        "CTG-B LB split direction": "lbtarget",
    }
    chosen = identify.chosen_rows(table, choice)
    assert list(chosen.member) == [TARGET[d] for d in chosen.dataset]
    assert np.allclose(chosen.distance, 0)
    config = identify.choice_config(choice)
    assert config["training"] == {"patience": 10}
    assert config["benchmarks"]["CTG-B"] == {
        "redraw": "split",
        "n_target": 950,
        "val_fraction": 5 / 19,
        "shift_selects": "target",
    }
    assert yaml.safe_load(identify.choice_yaml(choice)) == config
    profile = identify.family_profile(table, choice)
    assert profile[profile.chosen].distance.max() == pytest.approx(0)
    assert (profile[~profile.chosen].distance > 1).all()
    assert "14 of 14 means lie within the paper's std" in identify.markdown(table, choice)


def test_a_group_choice_is_shared_by_its_benchmarks():
    """C and D fit best with gain 8, E alone with gain 2: the group takes one gain for all three."""
    target = TARGET | {"E": "data_gain2_share0.1"}
    choice = identify.select(identify.summarise(_runs(target), PAPER))
    assert choice["label roughness (f' weight gain)"] == "gain8"


def test_exprils_columns_cannot_reach_the_choice():
    """Only the paper's h* and h0* rows enter: rewriting its ExPriL cells changes nothing, and a
    calibration table with any other column is refused."""
    runs = _runs(TARGET)
    table = identify.summarise(runs, PAPER)
    scrambled = PAPER.copy()
    expril = ~scrambled.method.isin(identify.MEASURES)
    scrambled.loc[expril, "mean"] = 1.0
    scrambled.loc[expril, "std"] = 99.0
    pd.testing.assert_frame_equal(identify.summarise(runs, scrambled), table)
    with pytest.raises(ValueError, match="columns"):
        identify.summarise(runs.assign(C=0.9), PAPER)


@pytest.mark.slow
def test_identification_jobs_read_no_oracle_learner_or_evaluation_file():
    """On Snakemake's own plan for `identify`: every input of every job is the CTG data, the
    paper's table or a calibration file; none lies under oracle/, learner/, eval/ or reference/,
    nor is a curator file of the reported runs."""
    jobs = plan("identify", "--config", "results=results/plan")
    rules = {job["rule"] for job in jobs}
    assert rules == {"calibrate_reference", "select_readings", "identify"}
    inputs = {f for job in jobs for f in job["input"]}
    assert inputs
    for f in inputs:
        assert f.startswith("results/plan/identify/") or f in (
            "data/cardiotocography/CTG.csv",
            "data/paper/table2.csv",
        ), f
        assert not any(part in f.split("/") for part in ("oracle", "learner", "eval", "reference", "curator")), f
    assert sum(job["rule"] == "calibrate_reference" for job in jobs) == sum(
        len(identify.members(d)) for d in identify.TRAINING.datasets
    )


def test_the_committed_choice_is_the_selection_from_the_committed_calibration():
    """data/identification/: choice.yaml, which the Snakefile reads, is what `select` makes of
    calibration.csv, every member of every dataset on the calibration seeds."""
    folder = ROOT / "data/identification"
    table = pd.read_csv(folder / "calibration.csv")
    assert set(zip(table.dataset, table.member)) == {
        (d, m) for d in identify.TRAINING.datasets for m in identify.members(d)
    }
    assert set(table.runs) == {len(identify.CALIBRATION_SEEDS)}
    assert (folder / "choice.yaml").read_text() == identify.choice_yaml(identify.select(table))
