"""The curator's steps: the only ones, with the evaluator's and the plug-in methods' releases
(expril.plugins, which share answer_block and release_gaussian), that read the target. Each release
applies a registered mechanism (expril.privacy.mechanisms) and records it in the run's ledger
before anything is written (expril.privacy.ledger); the taint audit (expril.privacy.taint) checks
that only these rules read curator/ files."""

import numpy as np

from expril import datasets
from expril.io import save_npz
from expril.method import binning, mlp, rff
from expril.privacy import ledger, mechanisms, noise
from expril.steps.blocks import load_bins, load_block, save_answers, timed


@timed
def split_target(target_path, val_path, test_path, name, val_fraction):
    target = load_block(target_path, ("x", "y"))
    parts = [
        datasets.split_target(x, y, val_fraction, name, int(s))
        for x, y, s in zip(target["x"], target["y"], target["seeds"])
    ]
    val_x, val_y, test_x, test_y = (np.stack(p) for p in zip(*parts))
    save_npz(val_path, x=val_x, y=val_y, seeds=target["seeds"])
    save_npz(test_path, x=test_x, y=test_y, seeds=target["seeds"])


def answer_block(val, edges, name, queries, mechanism, release, per_seed=None):
    """Answer one query for every seed of a block: release(ids, n_bins, [per_seed[b],] noise);
    queries[b] names seed b's query in its noise stream."""
    secret = noise.secret()
    answers = []
    for b, seed in enumerate(val["seeds"]):
        if len(edges[b]) != mechanism.features:
            raise ValueError(
                f"{name} seed {seed}: the bins cover {len(edges[b])} features, but the noise "
                f"was set for d = {mechanism.features}"
            )
        n_bins = binning.bin_counts(edges[b]).sum()
        ids = binning.bin_ids(edges[b], val["x"][b])
        scale = mechanism.query_stream_scale(queries[b])
        generator = noise.stream(secret, name, int(seed), queries[b], edges[b], scale)
        extra = () if per_seed is None else (per_seed[b],)
        answers.append(release(ids, n_bins, *extra, generator))
    return answers


@timed
def oracle_marginals(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """The bin counts query (the target's bin marginals under `paper`, noisy counts under
    `counts`): the first query. `mechanism` is the rule's param (mechanisms.Mechanism.param)."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x",))
    answers = answer_block(
        val,
        load_bins(bins_path, val["seeds"]),
        name,
        [mechanisms.COUNTS_QUERY] * len(val["seeds"]),
        mechanism,
        mechanism.release_counts,
    )
    # Accounted (and checked) once the answers exist, before any is released.
    ledger.record(ledger_path, None, name, val["seeds"], mechanisms.COUNTS_QUERY, "oracle_marginals", mechanism)
    save_answers(out_path, answers, val["seeds"])


@timed
def oracle_errors(val_path, bins_path, model_path, out_path, ledger_path, name, query, mechanism, previous_ledger=None):
    """Score the learner's submitted models on the target validation split and release, per bin,
    the mechanism's answer about their errors (noisy fraction under `paper`, count under `counts`)."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    model = load_block(model_path, (), val["seeds"])
    errors = mlp.predict(model, val["x"]) != val["y"]
    # The submitted network is part of the query: another model gets fresh noise.
    queries = [f"{query}/{mlp.digest(model, b)}" for b in range(len(val["seeds"]))]
    answers = answer_block(
        val, load_bins(bins_path, val["seeds"]), name, queries, mechanism, mechanism.release_errors, errors
    )
    ledger.record(ledger_path, ledger.load(previous_ledger), name, val["seeds"], query, "oracle_errors", mechanism)
    save_answers(out_path, answers, val["seeds"])


def feature_maps(maps_path, seeds):
    """The block's feature maps, one per seed."""
    maps = load_block(maps_path, ("mean", "std", "omega"), seeds)
    return [rff.unstack(maps, b) for b in range(len(seeds))]


def release_gaussian(val, maps, name, query, mechanism, exact):
    """exact(map, b) released with the mechanism's Gaussian noise, for every seed b of the block
    with its feature map maps[b], the noise keyed by the secret, the query, the map and the
    noise's std."""
    secret, released = noise.secret(), []
    for b, seed in enumerate(val["seeds"]):
        feature_map = maps[b]
        generator = noise.stream(secret, name, int(seed), query, list(feature_map.values()), mechanism.stream_scale)
        released.append(mechanism.release(exact(feature_map, b), generator))
    return np.stack(released)


def embedding_answers(val, maps, name, mechanism):
    """Pb. 1's embedding query answered for every seed of the block (`release_gaussian`)."""
    return release_gaussian(
        val,
        maps,
        name,
        "embedding",
        mechanism,
        lambda feature_map, b: rff.mean_embedding(feature_map, val["x"][b], mechanism.n_val),
    )


@timed
def oracle_embedding(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """Pb. 1's query in the runs by MMD (eps<e>-mmd/): the mean embedding of the target's features
    in the learner's random features, with Gaussian noise (mechanisms.MeanEmbedding); the run's
    first query."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x",))
    released = embedding_answers(val, feature_maps(maps_path, val["seeds"]), name, mechanism)
    ledger.record(ledger_path, None, name, val["seeds"], "embedding", "oracle_embedding", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])
