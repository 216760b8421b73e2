"""A seed block's files, as every step reads and writes them, and what steps of every role share.

A block's arrays are stacked along a first axis of seeds. Oracle answers, whose length varies per
seed (de-duplicated edges), are padded with NaN and carry their lengths; bins are packed flat
with their per-feature edge counts (binning.pack).
"""

import functools
import logging
import time

import numpy as np

from expril.io import load_npz, save_npz
from expril.method import binning
from expril.seeds import seed_int

log = logging.getLogger("expril")


def timed(step):
    """Log the step's own time (method and file I/O, without process start-up and imports):
    benchmarks/pipeline.py compares it with the job's wall time."""

    @functools.wraps(step)
    def run(*args, **kwargs):
        start = time.perf_counter()
        result = step(*args, **kwargs)
        log.info("step seconds: %.3f", time.perf_counter() - start)
        return result

    return run


def pad(rows):
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), np.nan)
    for b, r in enumerate(rows):
        out[b, : len(r)] = r
    return out, np.array([len(r) for r in rows])


def save_answers(path, answers, seeds):
    padded, n_bins = pad(answers)
    save_npz(path, answers=padded, n_bins=n_bins, seeds=seeds)


def answers(data, b, key="answers"):
    """Seed b's released answers (`key`) without their padding."""
    return data[key][b, : data["n_bins"][b]]


def load_block(path, keys, seeds=None):
    data = load_npz(path, required=("seeds",) + tuple(keys))
    if seeds is not None and not np.array_equal(data["seeds"], seeds):
        raise ValueError(f"{path}: holds seeds {data['seeds'].tolist()}, expected {list(seeds)}")
    return data


def load_bins(path, seeds):
    return binning.unpack(load_block(path, ("edges", "edge_counts"), seeds))


def train_networks(x, y, w, network, training, init_seeds, device, threads):
    """The block's networks, of architecture `network` ({"hidden": widths, "activation": "relu" or
    "tanh"}, ReLU if absent), trained on `y` (labels or bags) with `training`'s settings."""
    from expril.method.training import train_mlps  # torch is imported only by the steps that train

    return train_mlps(
        x,
        y,
        w,
        network["hidden"],
        init_seeds,
        training["epochs"],
        training["batch_size"],
        training["lr"],
        holdout=training["holdout"],
        patience=training["patience"],
        device=device,
        threads=threads,
        log=log.info,
        activation=network.get("activation", "relu"),
    )


def save_runs(out_paths, seeds, model):
    """Each run's networks of a model trained for several runs of the block (len(seeds) networks
    each, in the order of `out_paths`), in the run's own file."""
    n = len(seeds)
    for i, path in enumerate(out_paths):
        save_npz(path, seeds=seeds, **{k: v[i * n : (i + 1) * n] if v.ndim else v for k, v in model.items()})


def train_on_records(x, y, keys, network, training, device, threads):
    """Networks trained on released or synthetic labelled records, unweighted, each initialised from
    its run's key ("network", *key)."""
    seeds = [seed_int("network", *key) for key in keys]
    return train_networks(x, y, np.ones(y.shape), network, training, seeds, device, threads)
