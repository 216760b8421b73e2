"""ExPriL's h_t of several runs of a block trained as one stacked job (learner.train_hypotheses,
rules/stacked.smk): each run's file is the one its own train_hypothesis job writes."""

import numpy as np

from expril.io import save_npz
from expril.steps import learner

TRAINING = {"epochs": 4, "batch_size": 16, "lr": 0.01, "holdout": 0.25, "patience": 2}


def test_stacked_runs_write_the_files_their_own_jobs_write(tmp_path):
    rng = np.random.default_rng(0)
    seeds = np.array([3, 4])
    x = rng.normal(size=(2, 60, 5))
    save_npz(tmp_path / "source.npz", x=x, seeds=seeds)
    runs = []
    for r, key in enumerate(
        [["learner", "A", "1", "both", 1], ["learner", "A", "10", "both", 1], ["learner", "A", "1", "C", 2]]
    ):
        weights, labels = tmp_path / f"weights{r}.npz", tmp_path / f"labels{r}.npz"
        save_npz(weights, weights=rng.uniform(0.5, 2, size=(2, 60)), seeds=seeds)
        save_npz(labels, relaxed=rng.uniform(size=(2, 60)), seeds=seeds)
        runs.append((weights, labels, key))
    common = {"network": {"hidden": [16], "activation": "tanh"}, "training": TRAINING, "device": "cpu", "threads": 1}
    for r, (weights, labels, key) in enumerate(runs):
        learner.train_hypothesis(
            tmp_path / "source.npz", weights, labels, tmp_path / f"alone{r}.npz", init_key=key, **common
        )
    stacked = [
        {"weights_path": w, "labels_path": y, "out_path": tmp_path / f"stacked{r}.npz", "init_key": key}
        for r, (w, y, key) in enumerate(runs)
    ]
    learner.train_hypotheses(stacked, tmp_path / "source.npz", **common)
    for r in range(len(runs)):
        alone, together = np.load(tmp_path / f"alone{r}.npz"), np.load(tmp_path / f"stacked{r}.npz")
        assert sorted(alone.files) == sorted(together.files)
        assert all(np.array_equal(alone[k], together[k]) for k in alone.files)
    # the runs differ (their own labels, weights and keys): the test compares networks, not one copied
    assert not np.array_equal(np.load(tmp_path / "stacked0.npz")["W0"], np.load(tmp_path / "stacked1.npz")["W0"])
