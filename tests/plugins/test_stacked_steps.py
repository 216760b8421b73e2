"""The plug-ins' stacks of several runs (rules/stacked.smk stacks the calibration's): trainings of
several runs at once (Step.per_run) and a release's runs one after another; each run's file is
the one its own job writes, through the runner as the workflow calls it."""

import math

import numpy as np
import pytest

from expril.io import save_npz
from expril.method import binning
from expril.plugins import aim as aim_method
from expril.plugins import gate, registry, runner
from expril.plugins import llp as llp_method
from expril.plugins.base import Step
from expril.privacy import mechanisms
from expril.steps import learner

TRAINING = {"epochs": 4, "batch_size": 16, "lr": 0.01, "holdout": 0.25, "patience": 2}
SHARED = {"network": {"hidden": [8], "activation": "tanh"}, "training": TRAINING, "device": "cpu", "threads": 1}
SEEDS = np.array([3, 4])


def assert_alone_equals_stacked(tmp_path, rule, runs):
    """Each run alone, then all of them as one stack: the files are equal, byte for byte, and the
    runs' networks differ (the test compares networks, not one copied)."""
    _, step = registry.step(rule)
    for r, run in enumerate(runs):
        runner.call(step, [run | {"out_path": tmp_path / f"alone{r}.npz"}])
    runner.call(step, [run | {"out_path": tmp_path / f"stacked{r}.npz"} for r, run in enumerate(runs)])
    for r in range(len(runs)):
        assert (tmp_path / f"alone{r}.npz").read_bytes() == (tmp_path / f"stacked{r}.npz").read_bytes()
    assert (tmp_path / "stacked0.npz").read_bytes() != (tmp_path / "stacked1.npz").read_bytes()


def source(tmp_path, rng, n=60, d=3):
    x = rng.uniform(size=(len(SEEDS), n, d))
    save_npz(tmp_path / "source.npz", x=x, seeds=SEEDS)
    return x


def bins(tmp_path, x, q):
    path = tmp_path / f"bins{q}.npz"
    save_npz(path, seeds=SEEDS, **binning.pack([binning.make_bins(s, q) for s in x]))
    return path


@pytest.mark.bitexact
def test_llp_runs_of_other_bins_and_budgets_train_as_one_stack(tmp_path):
    rng = np.random.default_rng(0)
    x = source(tmp_path, rng)
    val = rng.uniform(size=x.shape)
    save_npz(tmp_path / "val.npz", x=val, y=(val.sum(axis=2) > 1.5).astype(np.int8), seeds=SEEDS)
    runs = []
    for r, (q, eps) in enumerate([(2, math.inf), (4, 1.0), (2, 10.0)]):
        plan = mechanisms.Counts(eps, 0.0, 3, 1, False).param()
        release = tmp_path / f"release{r}.npz"
        llp_method.oracle_proportions(
            tmp_path / "val.npz", bins(tmp_path, x, q), release, tmp_path / f"l{r}.csv", "A", plan
        )
        runs.append(
            {
                "bins_path": tmp_path / f"bins{q}.npz",
                "release_path": release,
                "mechanism": plan,
                "init_key": ["llp", "A", str(eps)],
            }
        )
    shared = {"source_path": tmp_path / "source.npz", "solver": None} | SHARED
    assert_alone_equals_stacked(tmp_path, "train_llp", [run | shared for run in runs])


@pytest.mark.bitexact
def test_aim_runs_of_other_releases_train_as_one_stack(tmp_path):
    rng = np.random.default_rng(1)
    x = source(tmp_path, rng)
    runs = []
    for r, q in enumerate([2, 4, 4]):
        release = tmp_path / f"records{r}.npz"
        ids = rng.integers(0, q, size=(len(SEEDS), 50, x.shape[2]))
        save_npz(release, ids=ids, y=rng.integers(0, 2, size=(len(SEEDS), 50)), seeds=SEEDS)
        key = ["aim", "A", str(r)]
        runs.append({"bins_path": bins(tmp_path, x, q), "release_path": release, "init_key": key})
    shared = {"source_path": tmp_path / "source.npz"} | SHARED
    assert_alone_equals_stacked(tmp_path, "train_aim", [run | shared for run in runs])


@pytest.mark.bitexact
def test_dpmerf_runs_of_other_records_train_as_one_stack(tmp_path):
    rng = np.random.default_rng(2)
    runs = []
    for r in range(3):
        samples = tmp_path / f"samples{r}.npz"
        save_npz(samples, x=rng.normal(size=(2, 50, 3)), y=rng.integers(0, 2, size=(2, 50)), seeds=SEEDS)
        runs.append({"samples_path": samples, "init_key": ["dpmerf", "A", "1" if r < 2 else "10"]} | SHARED)
    assert_alone_equals_stacked(tmp_path, "train_dpmerf", runs)


def test_a_releases_runs_as_one_stack_each_write_their_own_jobs_file_and_ledger(tmp_path):
    """LLP's release of two runs (other bins and eps) through the runner: as one stack, one run after
    another in one process (a step without Step.per_run), each file and ledger is the one its own
    job writes, and each ledger is checked against its own run's budget."""
    rng = np.random.default_rng(3)
    x = source(tmp_path, rng)
    val = rng.uniform(size=x.shape)
    save_npz(tmp_path / "val.npz", x=val, y=(val.sum(axis=2) > 1.5).astype(np.int8), seeds=SEEDS)

    def jobs(folder):
        (tmp_path / folder).mkdir()
        return [
            {
                "inputs": {"val_path": tmp_path / "val.npz", "bins_path": bins(tmp_path, x, q)},
                "outputs": {
                    "out_path": tmp_path / folder / f"release{r}.npz",
                    "ledger": tmp_path / folder / f"release{r}.ledger.csv",
                },
                "params": {"mechanism": mechanisms.Counts(eps, 0.0, 3, 1, False).param(), "budget": [eps, 0.0]},
                "wildcards": {"dataset": "A", "seeds": "3-4", "setting": ""},
            }
            for r, (q, eps) in enumerate([(2, 1.0), (4, 10.0)])
        ]

    for job in jobs("alone"):
        runner.run("oracle_proportions", **job, threads=1)
    runner.run_stack("oracle_proportions", jobs("stacked"), threads=1)
    files = [f"release{r}{ext}" for r in range(2) for ext in (".npz", ".ledger.csv")]
    for f in files:
        assert (tmp_path / "alone" / f).read_bytes() == (tmp_path / "stacked" / f).read_bytes()
    assert (tmp_path / "stacked/release0.npz").read_bytes() != (tmp_path / "stacked/release1.npz").read_bytes()
    # a run whose ledger exceeds its own budget is refused in the stack as alone
    over = jobs("over")
    over[1]["params"]["budget"] = [1.0, 0.0]
    with pytest.raises(gate.Refused, match="above the run's"):
        runner.run_stack("oracle_proportions", over, threads=1)


def test_a_stack_whose_runs_differ_in_a_shared_argument_is_refused(tmp_path):
    """The network is the stack's: runs of two shapes are two stacks, never one."""
    _, step = registry.step("train_dpmerf")
    runs = [{"samples_path": "a.npz", "out_path": "a", "init_key": [1]} | SHARED] * 2
    runs[1] = runs[1] | {"network": {"hidden": [4]}}
    with pytest.raises(ValueError, match="train_dpmerf: the stacked runs differ in network"):
        runner.call(step, runs)


def test_the_gate_refuses_per_run_arguments_on_a_release_or_without_runs():
    def release(val_path, out_path, ledger_path, mechanism):
        pass

    class Stacked(aim_method.AIM):
        name = "stackedrelease"
        steps = (
            Step("r", release, "r.npz", {"val_path": "target_val"}, release=True, per_run=("out_path",), audit=print),
        )

    def train(source_path, out_path, init_key):  # per-run arguments, but no `runs` to take them
        pass

    class WithoutRuns(aim_method.AIM):
        name = "withoutruns"
        steps = (
            aim_method.AIM.steps[0],
            Step("t", train, "t.npz", {"source_path": "source"}, per_run=("out_path", "init_key")),
        )

    for method in (Stacked(), WithoutRuns()):
        with pytest.raises(gate.Refused, match="names per-run arguments: only a learner step may"):
            gate.declared(method, {"families": {method.name: {}}})


@pytest.mark.bitexact
def test_exprils_runs_of_other_eps_and_iterations_train_as_one_stack(tmp_path):
    """ExPriL's h_t (learner.train_hypotheses: rules/stacked.smk's train_hypotheses_*) and ExPriL by
    MMD's (mmd_train, the same function through the runner): each file the one-run step's
    (learner.train_hypothesis, ExPriL's train_hypothesis jobs)."""
    rng = np.random.default_rng(3)
    source(tmp_path, rng)
    runs = []
    for r, key in enumerate(
        [["learner", "C", "1", "both", 1], ["learner", "C", "10", "both", 1], ["learner", "C", "1", "I", 2]]
    ):
        weights, labels = tmp_path / f"weights{r}.npz", tmp_path / f"labels{r}.npz"
        save_npz(weights, weights=rng.uniform(0.5, 2, size=(2, 60)), seeds=SEEDS)
        save_npz(labels, relaxed=rng.uniform(size=(2, 60)), seeds=SEEDS)
        runs.append({"weights_path": weights, "labels_path": labels, "init_key": key})
    shared = {"source_path": tmp_path / "source.npz"} | SHARED
    assert_alone_equals_stacked(tmp_path, "mmd_train", [run | shared for run in runs])
    for r, run in enumerate(runs):
        learner.train_hypothesis(out_path=tmp_path / f"expril{r}.npz", **run, **shared)
        assert (tmp_path / f"expril{r}.npz").read_bytes() == (tmp_path / f"stacked{r}.npz").read_bytes()
