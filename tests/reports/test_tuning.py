"""Tuning (expril.workflow.grids, expril.reports.tuning, rules/compare.smk `tune`): the grids'
settings and their names in paths, the selection with known answers, and that nothing the
reported runs write can reach the choice."""

import math
import re
import types

import pandas as pd
import pytest
import yaml
from snakemake.utils import update_config

from expril import settings
from expril.plugins import registry
from expril.reports import tuning
from expril.workflow import grids
from expril.workflow.config import planned_config
from expril.workflow.currency import choice_file, tuning_folder
from harness import ROOT, TUNING, plan, snakemake

GRID = grids.load(ROOT / "config" / "tuning.yaml")
EXTENDED = ["--configfile", "config/extended.yaml"]
SMOKE = [*EXTENDED, "tests/extended_smoke.yaml"]


def _study():
    """The extended study's configuration: config/extended.yaml over config.yaml, as the workflow merges them."""
    study = planned_config(ROOT)
    update_config(study, yaml.safe_load((ROOT / "config" / "extended.yaml").read_text()))
    return study


def test_every_grid_starts_as_configured_and_every_compared_method_has_the_grids_effort_at_every_calibrated_eps():
    """Equal effort (#36): every family a method of the extended study chooses from (its plug-in's,
    or ExPriL's) has the grid's `effort` (12) distinct settings, each calibrated at every finite
    calibrated eps, all of them eps the extended study reports (the others take the nearest's
    choice, one rule for every method); ExPriL's T and budget split are knobs of its axes."""
    study = _study()
    families = {registry.family(m) for m in study["comparison"]["methods"]}
    assert GRID["effort"] == 12 and grids.family("C") in families
    assert {family: len(grids.settings(GRID, family)) for family in families} == dict.fromkeys(families, 12)
    grids.check_effort(GRID, families, "config/tuning.yaml")
    for family in GRID["families"]:
        first = grids.settings(GRID, family)[0]
        assert set(first.values()) == {grids.CONFIGURED} and grids.suffix(GRID, family, first) == ""
        suffixes = [grids.suffix(GRID, family, s) for s in grids.settings(GRID, family)]
        assert len(set(suffixes)) == len(suffixes)
    assert GRID["calibration"]["first_seed"] >= 10000 and GRID["calibration"]["runs"] == 5
    assert {str(e) for e in GRID["calibration"]["epsilons"]} <= {str(e) for e in study["epsilons"]}
    expril = grids.family("C")
    knobs = set().union(*(grids.knobs_of(GRID, a, v) for s in grids.settings(GRID, expril) for a, v in s.items()))
    assert {"iterations", "split", "snr"} <= knobs
    # Round 3's bins (#49) go 4x finer as well as 4x coarser in every family with bins, each moved
    # apart from the family's other axis: its own four are as configured, snr 16, snr 1, the other.
    own = {"expril": "~budget=T1", "mmd": "~bandwidth=0.5", "llp": "~split=0.3"}
    for family, other in own.items():
        assert GRID["families"][family]["snr"] == ["configured", 16, 1]
        suffixes = {grids.suffix(GRID, family, s) for s in grids.settings(GRID, family) if s["model"] == "configured"}
        assert suffixes == {"", "~snr=16", "~snr=1", other}


def test_a_settings_name_round_trips_and_names_the_axes_a_file_depends_on():
    for family in GRID["families"]:
        for setting in grids.settings(GRID, family):
            assert grids.parse(GRID, family, grids.suffix(GRID, family, setting)) == setting
    setting = grids.parse(GRID, "expril", "~model=tanh32~snr=16")
    assert setting == {"model": "tanh32", "snr": 16, "budget": "configured"}
    assert grids.suffix(GRID, "expril", setting, ["snr"]) == "~snr=16"  # the bins depend on snr alone
    assert grids.suffix(GRID, "dpmerf", grids.parse(GRID, "dpmerf", "~model=logreg"), ["generator"]) == ""
    with pytest.raises(ValueError, match=r"'~snr=8' is no setting of expril's grid"):
        grids.parse(GRID, "expril", "~snr=8")


def test_expril_s_budget_sets_t_and_the_split_and_names_the_files_that_depend_on_them():
    """`~budget=T1`: T = 1 and 0.3 of eps on the bin counts query; the bins (snr, T) and the bin
    counts query (snr, T, split) carry the budget axis, a model change carries nothing there; as
    configured, T is config `iterations` and the split Eq. 14's (None)."""
    t1 = grids.parse(GRID, "expril", "~model=logreg~budget=T1")
    assert grids.knob(GRID, t1, "iterations", 2) == 1 and grids.knob(GRID, t1, "split", None) == 0.3
    assert grids.knob(GRID, t1, "snr", 4) == 4
    configured = grids.parse(GRID, "expril", "~model=logreg")
    assert grids.knob(GRID, configured, "iterations", 2) == 2 and grids.knob(GRID, configured, "split", None) is None
    bins, counts = ["snr", "iterations"], ["snr", "iterations", "split"]
    for chosen, bins_suffix in [
        (t1, "~budget=T1"),
        (configured, ""),
        (grids.parse(GRID, "expril", "~snr=16"), "~snr=16"),
    ]:
        assert grids.suffix(GRID, "expril", chosen, grids.depends(GRID, "expril", chosen, bins)) == bins_suffix
        assert grids.suffix(GRID, "expril", chosen, grids.depends(GRID, "expril", chosen, counts)) == bins_suffix
    # LLP's split is an axis of its own; the knob of another family's axis is the configured value.
    llp = grids.parse(GRID, "llp", "~split=0.3")
    assert grids.knob(GRID, llp, "split", None) == 0.3 and grids.knob(GRID, llp, "iterations", 1) == 1
    aim = grids.parse(GRID, "aim", "~oneway=0.0625~rounds=4")
    assert (grids.knob(GRID, aim, "oneway", None), grids.knob(GRID, aim, "rounds", None)) == (0.0625, 4)


def test_at_eps_inf_settings_that_differ_in_noise_knobs_alone_are_not_calibrated():
    """Without noise the bins' snr, a split and AIM's budget knobs change nothing: those settings
    would repeat another's run. T still changes the run (T1 is kept)."""
    kept = {
        family: [
            grids.suffix(GRID, family, s)
            for s in grids.settings(GRID, family)
            if not grids.noiseless_duplicate(GRID, s, registry.noise_knobs(family))
        ]
        for family in GRID["families"]
    }
    assert kept["expril"] == [
        "",
        "~budget=T1",
        "~model=tanh32",
        "~model=tanh32~budget=T1",
        "~model=logreg",
        "~model=logreg~budget=T1",
    ]
    assert kept["llp"] == kept["aim"] == ["", "~model=tanh32", "~model=logreg"]
    assert len(kept["dpsgd"]) == len(kept["dpmerf"]) == 12 and len(kept["mmd"]) == 6


def test_the_knobs_of_a_setting():
    assert grids.network(GRID, {"model": "configured"}, [16, 32]) == {"hidden": [16, 32], "activation": "relu"}
    assert grids.network(GRID, {"model": "tanh32"}, [16, 32]) == {"hidden": [32], "activation": "tanh"}
    configured = {"optimizer": "adam", "lr": 1e-3, "epochs": 30}
    assert grids.recipe(GRID, {"recipe": "configured"}, "recipe", configured) == configured
    assert grids.recipe(GRID, {"recipe": "sgd"}, "recipe", configured)["optimizer"] == "sgd"


def test_a_grid_must_start_with_the_configured_value(tmp_path):
    bad = tmp_path / "grid.yaml"
    bad.write_text(yaml.safe_dump({"families": {"aim": {"model": ["tanh32", "configured"]}}}))
    with pytest.raises(ValueError, match="aim: model: the first value must be 'configured'"):
        grids.load(bad)


MODELS = ["configured", "tanh32", "logreg"]


def test_a_plug_ins_own_grid_joins_the_grid_files_and_an_entry_there_wins(tmp_path):
    """Method.grid and Method.recipes, for a method without an entry in the grid file; a bad one is
    refused naming the plug-in."""
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({"families": {"kept": {"model": ["configured"]}}, "recipes": {}}))
    own = types.SimpleNamespace(
        name="own", grid={"model": MODELS, "recipe": ["configured", "fast"]}, recipes={"recipe": {"fast": {"lr": 0.1}}}
    )
    kept = types.SimpleNamespace(name="kept", grid={"model": MODELS}, recipes={})
    grid = grids.load(path, [own, kept])
    assert len(grids.settings(grid, "own")) == 6 and grid["families"]["kept"] == {"model": ["configured"]}
    assert grids.knob(grid, grids.parse(grid, "own", "~recipe=fast"), "lr", 0.001) == 0.1
    bad = types.SimpleNamespace(name="bad", grid={"model": ["tanh32"]}, recipes={})
    with pytest.raises(ValueError, match=r"plug-in types: grid: families: bad: model: the first value must be"):
        grids.load(path, [bad])


def test_one_at_a_time_axes_never_leave_their_configured_value_together():
    """`one_at_a_time`: a 3 x 2 product less the two settings that move both axes; the models and an
    axis not listed still cross every value."""
    families = {"binned": {"model": MODELS, "snr": ["configured", 16, 1], "split": ["configured", 0.3]}}
    grid = {"families": families, "one_at_a_time": ["snr", "split"]}
    assert [grids.suffix(grid, "binned", s) for s in grids.settings(grid, "binned")][:4] == [
        "",
        "~split=0.3",
        "~snr=16",
        "~snr=1",
    ]
    assert len(grids.settings(grid, "binned")) == 12 and len(grids.settings({"families": families}, "binned")) == 18
    grids.check_effort({**grid, "effort": 12}, ["binned"], "grid.yaml")
    # the models apart too: (3 snr + 2 models) x 2 splits
    assert len(grids.settings({**grid, "one_at_a_time": ["snr", "model"]}, "binned")) == 10
    # an axis no family has constrains nothing (a grid may drop it: the effort check still counts)
    assert len(grids.settings({**grid, "one_at_a_time": ["snr", "bandwith"]}, "binned")) == 18


def test_a_compared_method_short_of_the_studys_effort_is_told_what_to_add():
    grid = {
        "effort": 12,
        "families": {
            "full": {"model": MODELS, "knob": ["configured", 1, 2, 3]},
            "short": {"model": MODELS},
            "odd": {"model": MODELS, "knob": ["configured", 1, 2, 3, 4]},
        },
    }
    grids.check_effort(grid, ["full", "unknown"], "grid.yaml")  # no grid at all: the gate's to refuse
    with pytest.raises(
        ValueError,
        match=r"grid.yaml: equal effort: every compared method has 12 settings .* short's "
        r"grid has 3: add an axis of 4 values \(its first 'configured'\)",
    ):
        grids.check_effort(grid, ["full", "short"], "grid.yaml")
    with pytest.raises(ValueError, match="odd's grid has 15: change its axes so that their values' product is 12"):
        grids.check_effort(grid, ["odd"], "grid.yaml")
    grids.check_effort({**grid, "effort": None}, ["short", "odd"], "grid.yaml")  # a grid without `effort`


@pytest.mark.slow
def test_the_plan_of_a_tuned_study_refuses_a_method_short_of_the_effort(tmp_path):
    """LLP with its models alone beside the others' 12: planning stops, saying what to add; as
    configured only, the same grid plans."""
    grid = yaml.safe_load((ROOT / "config" / "tuning.yaml").read_text())
    grid["families"]["llp"] = {"model": MODELS}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    config = [*EXTENDED, "--config", "results=results/plan", "datasets=[A]", "epsilons=[1]"]
    methods = f'"methods": [C, llp], "grid": "{tmp_path / "grid.yaml"}"'
    refused = snakemake("--dry-run", "tune", *config, f"comparison={{{methods}}}", check=False)
    assert refused.returncode != 0
    assert "llp's grid has 3: add an axis of 4 values" in refused.stdout + refused.stderr
    snakemake("--dry-run", "compare", *config, f'comparison={{{methods}, "columns": [as configured]}}')


def _table(rows):
    return pd.DataFrame([dict(zip(("method", "dataset", "eps", "setting", "seed", "accuracy"), r)) for r in rows])


def test_selection_takes_the_highest_mean_and_a_tie_goes_to_the_earlier_setting():
    table = _table(
        [
            ("dpsgd", "A", 1.0, "configured", 10000, 0.6),
            ("dpsgd", "A", 1.0, "configured", 10001, 0.6),
            ("dpsgd", "A", 1.0, "~recipe=sgd", 10000, 0.9),
            ("dpsgd", "A", 1.0, "~recipe=sgd", 10001, 0.5),
            ("dpsgd", "A", 1.0, "~model=logreg", 10000, 0.8),
            ("dpsgd", "A", 1.0, "~model=logreg", 10001, 0.6),
            ("dpsgd", "A", math.inf, "configured", 10000, 0.9),
            ("dpsgd", "A", math.inf, "~recipe=sgd", 10000, 0.9),
        ]
    )
    order = {"dpsgd": ["configured", "~recipe=sgd", "~model=logreg"]}
    choice = tuning.select(table, order, ["0.3", "1", "3", "inf"])
    # eps 1: logreg's mean 0.7 beats 0.6 and sgd's 0.7 ties with it: sgd comes first in the grid
    assert choice == {"dpsgd": {"A": {"0.3": "~recipe=sgd", "1": "~recipe=sgd", "3": "~recipe=sgd", "inf": ""}}}
    reordered = {"dpsgd": ["configured", "~model=logreg", "~recipe=sgd"]}
    assert tuning.select(table, reordered, ["1"])["dpsgd"]["A"]["1"] == "~model=logreg"


def test_a_resampled_dataset_takes_the_best_average_rank_and_reads_none_of_its_records():
    # Accuracy means would pick Y (0.817 against X's 0.767); ranks over the datasets pick X (1.33
    # against 1.67): one dataset where Y is far ahead does not outweigh two where X leads.
    rows = [("A", 0.9, 0.8, 0.7), ("B", 0.6, 0.95, 0.5), ("C", 0.8, 0.7, 0.6)]
    table = _table(
        [
            ("llp", d, 1.0, s, 10000, a)
            for d, *accuracies in rows
            for s, a in zip(["configured", "~snr=16", "~model=logreg"], accuracies)
        ]
    )
    order = {"llp": ["configured", "~snr=16", "~model=logreg"]}
    choice = tuning.select(table, order, ["1", "3"], resampled={"llp": ["CTG"]})
    assert choice["llp"]["CTG"] == {"1": "", "3": ""}
    assert choice["llp"]["B"] == {"1": "~snr=16", "3": "~snr=16"}  # the calibrated datasets keep their own
    # A tie in the average rank goes to the grid's earlier setting.
    tied = _table([("llp", "A", 1.0, "configured", 10000, 0.5), ("llp", "A", 1.0, "~snr=16", 10000, 0.5)])
    assert tuning.select(tied, {"llp": ["~snr=16", "configured"]}, ["1"], {"llp": ["CTG"]})["llp"]["CTG"] == {
        "1": "~snr=16"
    }
    # Calibration runs on the resampled dataset itself are refused, whatever they score.
    with pytest.raises(ValueError, match=r"calibration runs on \['CTG'\]"):
        tuning.select(
            pd.concat([table, _table([("llp", "CTG", 1.0, "~snr=16", 10000, 1.0)])]), order, ["1"], {"llp": ["CTG"]}
        )
    assert "CTG: no calibration run" in tuning.markdown(table, choice)
    # Alone, with no calibrated dataset, it has nothing to transfer from.
    with pytest.raises(ValueError, match="llp: no calibrated dataset to transfer the choice on"):
        tuning.select(table.iloc[0:0], order, ["1"], {"llp": ["CTG"]})


def test_an_uncalibrated_eps_takes_the_nearest_calibrated_on_a_log_scale():
    calibrated = [0.1, 1.0, 10.0, math.inf]
    assert [grids.nearest(e, calibrated) for e in (0.1, 0.3, 1, 3, 10, math.inf)] == [0.1, 0.1, 1, 1, 10, math.inf]


def test_the_calibration_table_refuses_a_reported_runs_seed(tmp_path):
    path = tmp_path / "eval.csv"
    pd.DataFrame(
        {"dataset": "A", "seed": [10000, 3], "eps": 1.0, "method": "llp", "accuracy": 0.7, "positive_share": 0.5}
    ).to_csv(path, index=False)
    runs = [{"method": "llp", "dataset": "A", "eps": 1.0, "column": "", "setting": "", "evaluation": str(path)}]
    with pytest.raises(ValueError, match="seeds below 10000"):
        tuning.calibration_table(runs, 2, 10000)


def test_a_currency_without_a_method_to_calibrate_writes_an_empty_choice(tmp_path):
    """A user's method run in one currency against the published study: the other currency's
    selection has no run (it crashed on concatenating none)."""
    out = {name: tmp_path / name for name in ("calibration", "choice", "markdown", "finalists")}
    for selection in (None, GRID["selection"]):
        tuning.write([], {}, 2, 10000, 5, [0.1, 1.0], set(), out, selection)
        assert yaml.safe_load(out["choice"].read_text()) == {}
        assert pd.read_csv(out["calibration"]).empty
        assert "nothing was calibrated" in out["markdown"].read_text()
        assert yaml.safe_load(out["finalists"].read_text()) == []


@pytest.mark.slow
def test_the_tune_plan_reads_calibration_runs_only():
    """`snakemake tune`: every job of its plan is on the calibration seeds (or is the selection),
    and the selection reads their evaluations alone: no reported run can reach the choice."""
    jobs = plan("tune", *SMOKE, "--config", "results=results/plan")
    calibration = f"{GRID['calibration']['first_seed']}-"
    rules = {j["rule"] for j in jobs}
    # The calibration's trainings and the plug-ins' releases run in stacked jobs (rules/stacked.smk).
    assert rules >= {"select_settings", "train_dpsgd_approx", "aim_release_approx"}
    assert any(r.startswith("train_hypotheses_") for r in rules)
    assert not rules & {"train_hypothesis", "train_dpsgd", "aim_release"}
    blocks = {m[1] for j in jobs for f in j["output"] if (m := re.search(r"/(\d+-\d+)[/.]", f))}
    assert blocks and all(b.startswith(calibration) for b in blocks)
    select = next(j for j in jobs if j["rule"] == "select_settings")
    assert all(f"/{calibration}" in f for f in select["input"] if f.startswith("results/plan/eval/"))
    # CTG-B's runs resample one record pool: no calibration job reads its records.
    assert not any("/CTG-B/" in f for j in jobs for f in j["output"])


def test_the_comparison_reads_the_users_published_choice_else_the_studys(tmp_path):
    """A user's `publish_tuning` writes under their results folder; the comparison reads that choice
    where it exists, the published study's elsewhere, and a configured `choice` in any case."""
    results = tmp_path / "res"
    config = {"results": str(results), "comparison": {"choice": None, "publish_study": False}}
    assert tuning_folder(config) == f"{results}/tuning"
    assert choice_file(config, "approx") == "data/tuning/approx/choice.yaml"
    (results / "tuning" / "approx").mkdir(parents=True)
    (results / "tuning" / "approx" / "choice.yaml").write_text("{}\n")
    assert choice_file(config, "approx") == f"{results}/tuning/approx/choice.yaml"
    assert choice_file(config, "pure") == "data/tuning/pure/choice.yaml"
    config["comparison"] = {"choice": "mine/{currency}.yaml", "publish_study": True}
    assert choice_file(config, "pure") == "mine/pure.yaml" and tuning_folder(config) == "data/tuning"


@pytest.mark.slow
def test_publish_tuning_writes_under_the_results_folder_unless_publishing_the_study():
    """The tracked data/tuning/ is publish_tuning's output only with `comparison: publish_study`."""
    config = [*SMOKE, "--config", "results=results/plan"]
    outputs = {f for j in plan("publish_tuning", *config) if j["rule"] == "publish_tuning" for f in j["output"]}
    files = {f"{c}/{f}" for c in ("approx", "pure") for f in ("calibration.csv", "choice.yaml", "tuning.md")}
    assert outputs == {f"results/plan/tuning/{f}" for f in files}
    study = plan("publish_tuning", *config, 'comparison={"publish_study": true}')
    assert {f for j in study if j["rule"] == "publish_tuning" for f in j["output"]} == {
        f"data/tuning/{f}" for f in files
    }


def test_the_committed_choice_is_the_selection_from_the_committed_calibration_table():
    """data/tuning/ (snakemake publish_tuning): recomputing the choice from the committed table
    gives the committed choice."""
    table = pd.read_csv(TUNING / "calibration.csv")
    committed = yaml.safe_load((TUNING / "choice.yaml").read_text())
    order = {}
    for method in committed:
        family = registry.family(method)
        order[method] = [grids.suffix(GRID, family, s) or "configured" for s in grids.settings(GRID, family)]
    epsilons = list(next(iter(next(iter(committed.values())).values())))
    assert tuning.select(table, order, epsilons) == committed


def _round3_choice_check(folder):
    """Round 3's committed tuning in `folder` (data/tuning/<currency>/, `publish_tuning`): the
    choice recomputes from the committed table by round 3's rules (select_round3 on its first pass,
    the finalists' extra seeds included), and no chosen setting collapsed in more first-pass runs
    than the fewest of its cell; on a dataset whose choice is transferred (no calibration run), none
    collapsed in more over the calibrated datasets than the fewest of its method and eps. Returns
    the number of calibrated cells checked."""
    table = pd.read_csv(folder / "calibration.csv")
    committed = yaml.safe_load((folder / "choice.yaml").read_text())
    order = {
        m: [grids.suffix(GRID, registry.family(m), s) or "configured" for s in grids.settings(GRID, registry.family(m))]
        for m in committed
    }
    epsilons = list(next(iter(next(iter(committed.values())).values())))
    resampled = {m: sorted(set(committed[m]) - set(table[table.method == m].dataset)) for m in committed}
    first = tuning.first_pass(table, GRID["calibration"]["first_seed"], GRID["calibration"]["runs"])
    assert len(first) < len(table)  # the finalists ran their extra seeds
    simpler = GRID["selection"]["simpler"]
    assert tuning.select_round3(table, first, order, epsilons, resampled, simpler) == committed
    cells = tuning._cells(first)
    for (method, dataset, eps), cell in cells.groupby(level=[0, 1, 2], sort=False):
        chosen = committed[method][dataset][settings.format_eps(eps)] or "configured"
        assert cell.droplevel([0, 1, 2]).at[chosen, "collapsed"] == cell.collapsed.min(), (method, dataset, eps)
    totals = cells.groupby(level=["method", "eps", "setting"]).collapsed.sum()
    for method, datasets in resampled.items():
        for dataset in datasets:
            for eps in set(first[first.method == method].eps):
                chosen = committed[method][dataset][settings.format_eps(eps)] or "configured"
                assert totals[method, eps, chosen] == totals[method, eps].min(), (method, dataset, eps)
    return cells.index.droplevel(3).nunique()


@pytest.mark.parametrize("currency", ["approx", "pure"])
def test_round3s_committed_choice_is_its_rules_on_the_committed_table_and_never_a_setting_that_collapsed_more(
    currency,
):
    assert _round3_choice_check(TUNING / currency) > 0


@pytest.mark.slow
def test_a_t_setting_changes_only_its_own_paths(tmp_path):
    """The smoke calibration planned with ExPriL's budget axis (T1: T = 1, split 0.3) and without:
    every file planned without it is planned with it, at the same path (as configured and the other
    settings keep theirs), and every file the axis adds is in a `~budget=T1` folder, with models
    up to h_1 only (stored once for C and I) and the run's last query errors_t0."""
    smoke = yaml.safe_load((ROOT / "tests" / "tuning_smoke.yaml").read_text())
    smoke["families"]["expril"].pop("budget")
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(smoke))
    results = ["--config", "results=results/plan"]
    without = plan("tune", *SMOKE, *results, f'comparison={{"grid": "{tmp_path / "grid.yaml"}"}}')
    with_t1 = plan("tune", *SMOKE, *results)
    before = {f for j in without for f in j["output"]}
    after = {f for j in with_t1 for f in j["output"]}
    added = after - before
    assert before <= after and added
    assert all("~budget=T1/" in f or "~budget=T1.log" in f for f in added if "/tune/" not in f)
    assert not any(re.search(r"_t2\b|errors_t1", f) for f in added)
    for tag in ("@approx", "@pure"):  # ExPriL runs in both currencies
        assert f"results/plan/learner/A/10000-10001/eps1{tag}~budget=T1/both/model_t1.npz" in added
        assert f"results/plan/oracle/A/10000-10001/eps1{tag}~budget=T1/both/errors_t0.ledger.csv" in added
        assert f"results/plan/oracle/A/10000-10001/eps1{tag}/both/errors_t1.ledger.csv" in before


@pytest.mark.slow
def test_a_tuned_t1_run_is_read_at_its_own_last_iteration(tmp_path):
    """A choice of `~snr=16~budget=T1` for I-ExPriL on A (no IS step: ExPriL by MMD is plain ExPriL
    there and takes I's setting): the comparison reads that run's evaluation and the ledger of its
    last query, errors_t0 (T = 1), and the as-configured run's errors_t1."""
    methods = ["C", "I", "llp", "dpsgd", "aim", "dpmerf", "C-mmd", "I-mmd"]
    choice = {
        m: {d: {"1": "", "inf": ""} for d in (["C", "CTG-B"] if m.endswith("mmd") else ["A", "C", "CTG-B"])}
        for m in methods
    }
    choice["I"]["A"]["1"] = "~snr=16~budget=T1"
    (tmp_path / "choice.yaml").write_text(yaml.safe_dump(choice))
    jobs = plan(
        "compare", *SMOKE, "--config", "results=results/plan", f'comparison={{"choice": "{tmp_path}/choice.yaml"}}'
    )
    # the headline currency's table (the choice file, without {currency}, serves both currencies)
    compare = next(
        j for j in jobs if j["rule"] == "compare_methods" and "approx/comparison.csv" in " ".join(j["output"])
    )
    run = "results/plan/oracle/A/0-1/eps1@approx"
    assert f"{run}~snr=16~budget=T1/both/errors_t0.ledger.csv" in compare["input"]
    assert f"{run}/both/errors_t1.ledger.csv" in compare["input"]
    assert "results/plan/eval/A/0-1/eps1@approx~snr=16~budget=T1/accuracy.csv" in compare["input"]


# ---------------------------------------------------------------- round 3's selection rules


def _runs(cells, method="aim", dataset="A", eps=1.0):
    """A calibration table from {setting: [(accuracy, positive_share), ...]}, seeds from 10000."""
    return pd.DataFrame(
        [
            dict(method=method, dataset=dataset, eps=eps, setting=s, seed=10000 + i, accuracy=a, positive_share=p)
            for s, runs in cells.items()
            for i, (a, p) in enumerate(runs)
        ]
    )


def _cell(cells):
    return tuning._cells(_runs(cells)).droplevel([0, 1, 2])


SIMPLER = {"model": ["logreg", "tanh32", "configured"]}


def test_a_setting_that_collapses_is_chosen_only_where_every_setting_does():
    """Round 2's AIM on A at eps 1: the best mean collapsed in 2 of 5 runs. X's mean is the highest
    (0.9) but one of its runs labels 99.5 % alike; Y never collapses: Y. Where every setting
    collapses, the one that collapses least (Y, 1 run against 2), whatever the means."""
    fine, flat = 0.5, 0.995
    order = ["configured", "~rounds=4"]
    cell = _cell({"configured": [(0.9, fine), (0.9, flat), (0.9, fine)], "~rounds=4": [(0.6, fine)] * 3})
    assert tuning.choose(cell, order, {}) == "~rounds=4"
    cell = _cell(
        {"configured": [(0.9, flat), (0.9, 0.004), (0.9, fine)], "~rounds=4": [(0.6, flat), (0.6, fine), (0.6, fine)]}
    )
    assert tuning.choose(cell, order, {}) == "~rounds=4"


def test_the_one_standard_error_rule_prefers_the_simpler_setting():
    """The leader h* (mean 0.80, runs 0.75 and 0.85: std 0.0707, se 0.05); logreg at 0.76 lies within
    one se (0.75 and up) and is simpler: chosen; tanh32 (0.78) is within too but less simple; at
    0.74, logreg is out: the leader stays."""
    order = ["configured", "~model=tanh32", "~model=logreg"]
    runs = {"configured": [(0.75, 0.5), (0.85, 0.5)], "~model=tanh32": [(0.78, 0.5)] * 2}
    assert tuning.choose(_cell({**runs, "~model=logreg": [(0.76, 0.5)] * 2}), order, SIMPLER) == "~model=logreg"
    assert tuning.choose(_cell({**runs, "~model=logreg": [(0.74, 0.5)] * 2}), order, SIMPLER) == "~model=tanh32"
    assert tuning.choose(_cell({**runs, "~model=logreg": [(0.74, 0.5)] * 2}), order, {}) == "configured"
    assert tuning.simplicity("~model=logreg~snr=16", SIMPLER | {"snr": [16, "configured"]}) == (0, 0)
    assert tuning.simplicity("configured", SIMPLER | {"snr": [16, "configured"]}) == (2, 1)


def test_close_settings_get_more_seeds_and_then_decide():
    """The leader's se is 0.05 (runs 0.75, 0.85): settings within 2 se (0.70 and up) are close.
    0.72 is, 0.69 is not; at most `count` finalists; a leader alone has none. The finalists run the
    15 seeds after the first 5, and the choice is then made among them on all their runs."""
    order = {"aim": ["configured", "~rounds=4", "~oneway=0.0625", "~model=logreg"]}
    runs = {
        "configured": [(0.75, 0.5), (0.85, 0.5)],
        "~rounds=4": [(0.72, 0.5)] * 2,
        "~oneway=0.0625": [(0.71, 0.5)] * 2,
        "~model=logreg": [(0.69, 0.5)] * 2,
    }
    assert tuning.finalists(_runs(runs), order, 3) == {("aim", "A", 1.0): ["configured", "~rounds=4", "~oneway=0.0625"]}
    assert tuning.finalists(_runs(runs), order, 2) == {("aim", "A", 1.0): ["configured", "~rounds=4"]}
    alone = {"configured": [(0.8, 0.5)] * 2, "~rounds=4": [(0.6, 0.5)] * 2}
    assert tuning.finalists(_runs(alone), order, 3) == {}
    hook = tuning.more_runs({("aim", "A", 1.0): ["configured", "~rounds=4"]}, 10000, 5, 15)
    assert hook == {("aim", "A", 1.0, s): list(range(10005, 10020)) for s in ("configured", "~rounds=4")}
    # After the extra seeds: ~rounds=4 (20 runs at 0.8) beats the leader (20 runs at 0.78); logreg
    # (5 runs at 0.95, no finalist) is out.
    more = {"configured": [(0.78, 0.5)] * 20, "~rounds=4": [(0.8, 0.5)] * 20, "~model=logreg": [(0.95, 0.5)] * 5}
    assert tuning.choose(_cell(more), order["aim"], {}) == "~rounds=4"


def test_the_finalists_stay_the_same_once_their_extra_seeds_ran():
    """AIM at eps = inf has 3 settings once its noise knobs drop. On the first 5 seeds the leader's
    se is 0.0224 (runs 0.70, 0.80, 0.70, 0.80, 0.75): 0.74 and 0.72 lie within two, so all three are
    finalists and run 15 more seeds. There the leader scores 0.75, the others 0.70: on all 20 seeds
    the leader would stand alone (se 0.0051) and the finalists, recomputed, be none, so the next
    plan would drop their extra runs. On the first pass they stay all three."""
    order = {"aim": ["configured", "~rounds=4", "~oneway=0.0625"]}
    first = {
        "configured": [(0.70, 0.5), (0.80, 0.5), (0.70, 0.5), (0.80, 0.5), (0.75, 0.5)],
        "~rounds=4": [(0.74, 0.5)] * 5,
        "~oneway=0.0625": [(0.72, 0.5)] * 5,
    }
    extra = {"configured": [(0.75, 0.5)] * 15, "~rounds=4": [(0.70, 0.5)] * 15, "~oneway=0.0625": [(0.70, 0.5)] * 15}
    table = _runs({s: first[s] + extra[s] for s in first}, eps=math.inf)
    every = {("aim", "A", math.inf): order["aim"]}
    assert tuning.finalists(_runs(first, eps=math.inf), order, 3) == every
    assert tuning.finalists(table, order, 3) == {}
    assert tuning.finalists(tuning.first_pass(table, 10000, 5), order, 3) == every


def test_the_transfer_compares_settings_on_their_first_seeds_only():
    """DP-SGD's X leads Y on A and B at eps 1; X alone is a finalist and, in one of its 15 extra seeds
    on A, collapses. Counted over all its runs X would collapse more than Y and lose the transfer to
    CTG; on the first pass, where both ran 5 seeds, neither collapses and X is chosen there, as on
    A and B."""
    order = {"dpsgd": ["X", "Y"]}
    first = {"X": [(0.8, 0.5)] * 5, "Y": [(0.7, 0.5)] * 5}
    table = pd.concat(
        [_runs(first, "dpsgd", d) for d in "AB"]
        + [_runs({"X": [(0.8, 0.5)] * 5 + [(0.8, 0.995 if d == "A" else 0.5)] * 15}, "dpsgd", d).iloc[5:] for d in "AB"]
    )
    assert tuning.transfer_monotone(table, order)["dpsgd", 1.0] == "Y"
    choice = tuning.select_round3(table, tuning.first_pass(table, 10000, 5), order, ["1"], {"dpsgd": ["CTG"]}, {})
    assert choice["dpsgd"] == {"A": {"1": "X"}, "B": {"1": "X"}, "CTG": {"1": "X"}}


def test_the_monotone_transfer_never_takes_a_setting_ranked_below_the_smaller_eps_choice():
    """Three calibrated datasets. eps 0.1: X leads all. eps 1: Y has the best average rank (1.33
    against X's 1.67: first on A and C, second on B) but ranks below X on B: plain transfer takes
    Y, the monotone rule keeps X. eps 10: Z ranks above X everywhere: Z. inf is chosen alone."""
    order = {"dpsgd": ["X", "Y", "Z"]}
    means = {
        0.1: {"A": (0.9, 0.8, 0.7), "B": (0.9, 0.8, 0.7), "C": (0.9, 0.8, 0.7)},
        1.0: {"A": (0.7, 0.9, 0.6), "B": (0.8, 0.7, 0.6), "C": (0.7, 0.9, 0.6)},
        10.0: {"A": (0.7, 0.6, 0.9), "B": (0.7, 0.6, 0.9), "C": (0.7, 0.6, 0.9)},
        math.inf: {"A": (0.7, 0.9, 0.8), "B": (0.7, 0.9, 0.8), "C": (0.7, 0.9, 0.8)},
    }
    table = pd.concat(
        _runs({s: [(m, 0.5)] for s, m in zip("XYZ", row)}, "dpsgd", d, eps)
        for eps, rows in means.items()
        for d, row in rows.items()
    )
    plain = tuning.transfer(tuning._means(table), order)
    assert plain["dpsgd", 1.0] == "Y" and plain["dpsgd", 10.0] == "Z"
    assert tuning.transfer_monotone(table, order) == {
        ("dpsgd", 0.1): "X",
        ("dpsgd", 1.0): "X",
        ("dpsgd", 10.0): "Z",
        ("dpsgd", math.inf): "Y",
    }
    choice = tuning.select_round3(table, table, order, ["0.1", "0.3", "1", "3", "10", "inf"], {"dpsgd": ["CTG"]}, {})
    assert choice["dpsgd"]["CTG"] == {"0.1": "X", "0.3": "X", "1": "X", "3": "X", "10": "Z", "inf": "Y"}
    assert choice["dpsgd"]["B"]["1"] == "X" and choice["dpsgd"]["A"]["1"] == "Y"  # calibrated: their own
    # X collapses in one calibration run at eps 0.1 (on A), where it leads everywhere: Y (second
    # everywhere) is chosen there, Y stays at 1 (X ranks below it on A and C), Z still takes 10.
    collapsed = table.assign(
        positive_share=[
            0.995 if (s, d, e) == ("X", "A", 0.1) else 0.5 for s, d, e in zip(table.setting, table.dataset, table.eps)
        ]
    )
    assert tuning.transfer_monotone(collapsed, order) == {
        ("dpsgd", 0.1): "Y",
        ("dpsgd", 1.0): "Y",
        ("dpsgd", 10.0): "Z",
        ("dpsgd", math.inf): "Y",
    }
    with pytest.raises(ValueError, match=r"calibration runs on \['A'\]"):
        tuning.select_round3(table, table, order, ["1"], {"dpsgd": ["A"]}, {})


def test_the_simpler_orders_name_values_of_the_grids_axes():
    """config/tuning.yaml's `simpler` orders every value of each axis it names, in some family."""
    for axis, ranking in GRID["selection"]["simpler"].items():
        values = {str(v) for axes in GRID["families"].values() for v in axes.get(axis, [])}
        assert values and set(map(str, ranking)) == values, axis


@pytest.mark.slow
def test_the_finalists_of_the_last_tune_run_the_extra_calibration_seeds(tmp_path):
    """The more-seeds rule's plan hook: with a `selection` and the finalists a previous `tune` wrote,
    `snakemake tune` plans those settings, and no other, on the seeds after the first `runs`, and
    the selection reads their evaluations."""
    grid = yaml.safe_load((ROOT / "tests" / "tuning_smoke.yaml").read_text())
    grid["selection"] = {"finalists": 3, "more_runs": 3, "simpler": {}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    (tmp_path / "res" / "tune" / "approx").mkdir(parents=True)
    finalists = [{"method": "llp", "dataset": "A", "eps": "1", "setting": s} for s in ("", "~model=logreg")]
    (tmp_path / "res" / "tune" / "approx" / "finalists.yaml").write_text(yaml.safe_dump(finalists))
    comparison = f'comparison={{"grid": "{tmp_path / "grid.yaml"}", "methods": [C, llp]}}'
    jobs = plan("tune", *SMOKE, "--config", f"results={tmp_path / 'res'}", comparison)
    extra = {f for j in jobs if j["rule"].startswith("evaluate") for f in j["output"] if "/10002-10004/" in f}
    assert extra == {f"{tmp_path}/res/eval/A/10002-10004/eps1@approx/llp{s}.csv" for s in ("", "~model=logreg")}
    select = next(j for j in jobs if j["rule"] == "select_settings" and "approx" in j["output"][0])
    assert {f for f in select["input"] if "/10002-10004/" in f} == extra
