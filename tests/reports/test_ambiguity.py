"""The ambiguity report: each reading's configuration and plan, and the report built from
synthetic accuracies with known answers."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from snakemake.utils import validate

from expril.privacy import taint
from expril.reports import ambiguity
from harness import ROOT, plan

PAPER = pd.read_csv(ROOT / "data/paper/table2.csv")
DATASETS = ["A", "B", "C", "D", "E", "CTG-A", "CTG-B"]


@pytest.fixture
def config():
    """config.yaml as the workflow sees it (defaults filled), today's readings throughout."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    validate(config, str(ROOT / "config.schema.yaml"))
    return config


def _family(slug):
    return next(f for f in ambiguity.CHOICES if f.slug == slug)


def test_the_configured_readings_are_recognised(config):
    labels = {f.slug: ambiguity.configured_reading(config, f) for f in ambiguity.choices(config)}
    assert labels == {
        "redraw_clusters": "data",
        "redraw_latent": "data",
        "redraw_ctg": "data",
        "label_gain": "gain1",
        "class_balance": "median",
        "ctg_rows": "v350t350",
        "lb_selects": "lbsource",
        "training": "es10",
        "noiseless_bins": "sqrt",
        "source_means": "independent",
    }
    config["benchmarks"]["CTG-A"]["n_target"] = 950
    assert ambiguity.configured_reading(config, _family("ctg_rows")) is None  # CTG-A and CTG-B disagree


def test_a_reading_changes_its_choice_on_its_benchmarks_only(config):
    family = _family("class_balance")
    out = ambiguity.reading_config(config, "res/ambiguity", family, "share0.1")
    assert out["results"] == "res/ambiguity/class_balance/share0.1"
    assert out["datasets"] == ["C", "D", "E"] and out["runs"] == out["seed_block"] == 10
    for d in "CDE":
        assert out["benchmarks"][d] == config["benchmarks"][d] | {
            "label_threshold": "drawn_quantile",
            "share_spread": 0.1,
        }
    assert out["benchmarks"]["A"] == config["benchmarks"]["A"] and out["training"] == config["training"]
    training = ambiguity.reading_config(config | {"runs": 4}, "r", _family("training"), "fixed100")
    assert training["training"]["patience"] == 0 and training["runs"] == 4
    assert config["training"]["patience"] == 10  # the configuration is not touched
    configured = ambiguity.reading_config(config, "r")
    assert configured["results"] == "r/configured" and configured["datasets"] == config["datasets"]
    # every alternative once, never the configured reading
    readings = ambiguity.readings(config)
    assert len(readings) == sum(len(f.readings) - 1 for f in ambiguity.CHOICES)
    assert (_family("label_gain"), "gain1") not in readings


def _long(shift=None):
    """Accuracies of 10 runs of every dataset: ExPriL's h_0 = 0.5, h_1 and h_2 about 0.8 with C
    above I in every run, 1-DP 0.05 below no DP, h* = 0.9; h0* = 0.7 (0.6 on CTG, so 1-DP lies
    above it there). `shift` = (datasets, amount) lowers 1-DP by `amount` on those."""
    rows = []
    rng = np.random.default_rng(0)
    for dataset in DATASETS:
        for seed in range(10):
            noise, gap = rng.normal(0, 0.01), 0.01 + 0.001 * seed  # distinct gaps: no ties
            for eps in (1.0, math.inf):
                for variant in ("C", "I"):
                    for t in range(3):
                        acc = 0.5 if t == 0 else 0.8 + noise + (gap if variant == "C" else 0)
                        if eps == 1.0 and t > 0:
                            acc -= 0.05 + (shift[1] if shift and dataset in shift[0] else 0)
                        rows.append(
                            {
                                "dataset": dataset,
                                "seed": seed,
                                "method": "expril",
                                "eps": eps,
                                "variant": variant,
                                "t": t,
                                "accuracy": acc,
                            }
                        )
            rows.append({"dataset": dataset, "seed": seed, "method": "h_star", "accuracy": 0.9})
            rows.append(
                {
                    "dataset": dataset,
                    "seed": seed,
                    "method": "h0_star",
                    "accuracy": 0.6 if dataset.startswith("CTG") else 0.7,
                }
            )
    return pd.DataFrame(rows)


def test_report_shows_which_verdicts_a_reading_changes(config):
    """Configured: on CTG, 1-DP (about 0.76) lies above h0* (0.6): the claim does not hold. Under
    the reading v700t250 of the CTG rows, 1-DP drops by 0.3 on CTG: it holds. No other choice has
    a reading that moves it, and the cells show the reading's own numbers."""
    rows = _family("ctg_rows")
    alternatives = [
        (rows, label, _long((("CTG-A", "CTG-B"), 0.3 if label == "v700t250" else 0.0)))
        for label in ("v700t250", "v250t700", "v475t475")
    ]
    alternatives.append((_family("label_gain"), "gain4", _long()))
    cells, claims, markdown = ambiguity.build(_long(), alternatives, config, PAPER)

    outcome = claims.set_index(["choice", "reading", "claim"]).outcome
    assert outcome[rows.name, "v350t350", "ctg_dp_below_h0"] == "does not hold"
    assert outcome[rows.name, "v700t250", "ctg_dp_below_h0"] == "holds"
    assert outcome[rows.name, "v250t700", "ctg_dp_below_h0"] == "does not hold"
    assert set(claims.claim) == set(ambiguity.CLAIMS)
    assert f"- {rows.name}: ctg_dp_below_h0" in markdown
    assert "- label roughness (f' weight gain): none" in markdown

    cell = cells.set_index(["choice", "reading", "dataset", "method"])
    assert cell.loc[(rows.name, "v700t250", "CTG-B", "1DP-C"), "mean"] == pytest.approx(
        100 * _long()[lambda f: (f.dataset == "CTG-B") & (f.eps == 1) & (f.t == 2) & (f.variant == "C")].accuracy.mean()
        - 30
    )
    assert cell.loc[(rows.name, "v350t350", "CTG-B", "h_star"), "mean"] == pytest.approx(90)
    assert cell.loc[(rows.name, "v350t350", "CTG-B", "h_star"), "paper_mean"] == 91.2
    assert set(cells[cells.choice == rows.name].dataset) == {"CTG-A", "CTG-B"}
    assert "| CTG-B | 1DP-C | 70.1 ± 3.8 |" in markdown and "v350t350 (configured)" in markdown


@pytest.mark.slow
def test_ambiguity_plan_runs_each_reading_on_its_own_benchmarks_and_keeps_the_privacy_boundary():
    """On a tiny configuration (A and C, 2 runs): one module per reading, each writing below its
    own folder, on the datasets its choice touches; the report reads every reading's accuracies,
    and publish_ambiguity copies what the report writes into summary/ambiguity/."""
    args = ["ambiguity", "--configfile", "tests/reruns.yaml", "--config", "results=results/plan"]
    jobs = plan("publish_ambiguity", *args[1:])
    audited = taint.plan(args)  # each module's curator/ is tainted; its rules keep their roles
    assert [str(v) for v in taint.audit(audited.jobs, audited.curator)] == []
    assert "results/plan/ambiguity/configured/curator/A/0-1/target_val.npz" in taint.taint(
        audited.jobs, audited.curator
    )
    assert {j.rule: j.base for j in audited.jobs}["oracle_errors_configured"] == "oracle_errors"
    outputs = [f.removeprefix("results/plan/ambiguity/") for job in jobs for f in job["output"]]
    assert not any(f.startswith("results/") for f in outputs)  # all below the report's folder
    datasets = {}
    for f in outputs:
        if f.endswith("/source.npz"):  # <reading folder>/data/<dataset>/<block>/source.npz
            reading, dataset, block = f.rsplit("/", 4)[0], f.split("/")[-3], f.split("/")[-2]
            datasets.setdefault(reading, set()).add(dataset)
            assert block == "0-1"
    assert datasets["configured"] == {"A", "C"}
    chosen = yaml.safe_load((ROOT / "data/identification/choice.yaml").read_text())
    gains = {r for r in datasets if r.startswith("label_gain/")}
    assert gains == {f"label_gain/gain{g}" for g in (1, 2, 4, 8, 16)} - {
        f"label_gain/gain{chosen['benchmarks']['C']['label_gain']}"
    }  # all but the identified one
    assert all(datasets[r] == {"C"} for r in gains) and datasets["redraw_clusters/split"] == {"A"}
    trainings = [r for r in datasets if r.startswith("training/")]
    assert len(trainings) == 1 and datasets[trainings[0]] == datasets["noiseless_bins/matched"] == {"A", "C"}
    assert not any(r.startswith(("redraw_ctg", "ctg_rows", "lb_selects")) for r in datasets)
    report = next(job for job in jobs if job["rule"] == "report_ambiguity")
    assert sorted(report["input"]) == sorted(
        [f"results/plan/ambiguity/{r}/accuracies.csv" for r in datasets] + ["data/paper/table2.csv"]
    )
    published = next(job for job in jobs if job["rule"] == "publish_ambiguity")
    assert sorted(published["input"]) == sorted(report["output"])
    assert sorted(published["output"]) == sorted(f"summary/ambiguity/{f.rsplit('/', 1)[1]}" for f in report["output"])
