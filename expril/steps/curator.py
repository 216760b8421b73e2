"""The curator's steps: the only ones, with the evaluator's, that read the target. Each release
applies a registered mechanism (expril.privacy.mechanisms) and records it in the run's ledger
before anything is written (expril.privacy.ledger); the taint audit (expril.privacy.taint) checks
that only these rules read curator/ files."""

import math

import numpy as np

from expril import datasets
from expril.io import save_npz
from expril.method import binning, mlp, rff
from expril.privacy import ledger, mechanisms, noise
from expril.rivals import aim, dpmerf, llp
from expril.seeds import rng, seed_int
from expril.steps.blocks import load_bins, load_block, log, pad, save_answers, timed


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


def _answer_block(val, edges, name, queries, mechanism, release, per_seed=None):
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
        generator = noise.stream(secret, name, int(seed), queries[b], edges[b], mechanism.stream_scale)
        extra = () if per_seed is None else (per_seed[b],)
        answers.append(release(ids, n_bins, *extra, generator))
    return answers


@timed
def oracle_marginals(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """The bin counts query (the target's bin marginals under `paper`, noisy counts under
    `counts`): the first query. `mechanism` is the rule's param (mechanisms.Mechanism.param)."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x",))
    answers = _answer_block(
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
    answers = _answer_block(
        val, load_bins(bins_path, val["seeds"]), name, queries, mechanism, mechanism.release_errors, errors
    )
    ledger.record(ledger_path, ledger.load(previous_ledger), name, val["seeds"], query, "oracle_errors", mechanism)
    save_answers(out_path, answers, val["seeds"])


@timed
def oracle_proportions(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """LLP's one release (expril.rivals.llp): the noisy counts and negatives of every bin, the bin counts
    query and the error query on h_0 = 1, accounted as the run's two queries."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    edges = load_bins(bins_path, seeds)
    counts = _answer_block(val, edges, name, [llp.QUERIES[0]] * len(seeds), mechanism, mechanism.release_counts)
    negatives = _answer_block(
        val, edges, name, [llp.QUERIES[1]] * len(seeds), mechanism, mechanism.release_errors, val["y"] != 1
    )
    book = None
    for query in llp.QUERIES:
        book = ledger.record(ledger_path, book, name, seeds, query, "oracle_proportions", mechanism)
    (counts, n_bins), (negatives, _) = pad(counts), pad(negatives)
    save_npz(out_path, counts=counts, negatives=negatives, n_bins=n_bins, seeds=seeds)


@timed
def train_dpsgd(
    val_path, source_path, out_path, ledger_path, name, network, recipe, mechanism, init_key, setting, threads
):
    """The curator's networks trained on its validation split with DP-SGD (expril.rivals.dpsgd),
    the block's together, and released; inputs standardised with the public source's mean and std
    (the validation split's would be unaccounted statistics of the private data). `network` and
    `recipe` (optimizer, momentum, lr) are the tuning setting's; its rate, epochs and clipping are
    the mechanism's. The curator's randomness (sampling and noise) is keyed by its secret, as the
    oracle's noise, and by the setting (its suffix, '' as configured): two settings never share a
    draw."""
    import torch

    from expril.rivals.dpsgd import stack, train

    torch.set_num_threads(threads)
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    mean, std = mlp.fit_standardisation(load_block(source_path, ("x",), seeds)["x"])
    secret, keyed = noise.secret(), [setting] if setting else []
    streams = {
        part: [seed_int("dpsgd", part, secret, name, int(seed), repr(mechanism.eps), *keyed) for seed in seeds]
        for part in ("sampling", "noise")
    }
    layers, taken = train(
        mlp.standardise(val["x"], mean, std),
        val["y"],
        network["hidden"],
        sample_rate=mechanism.sample_rate,
        epochs=mechanism.epochs,
        lr=recipe["lr"],
        max_grad_norm=mechanism.max_grad_norm if mechanism.private else math.inf,
        noise_multiplier=mechanism.noise_multiplier,
        init_seeds=[seed_int(*init_key, int(seed)) for seed in seeds],
        sampling_seeds=streams["sampling"],
        noise_seeds=streams["noise"],
        optimizer=recipe["optimizer"],
        momentum=recipe["momentum"],
        activation=network["activation"],
    )
    # The accountant charges the steps taken, not those planned.
    spent, planned = mechanism.spent(taken) if mechanism.private else math.inf, mechanism.query_cost()[0]
    if spent > planned:
        raise ledger.BudgetError(f"{name}: {taken} DP-SGD steps spend eps {spent}, the plan {planned}")
    log.info(
        "%d networks trained, %d steps, eps spent %.4g (noise multiplier %.4g)",
        len(seeds),
        taken,
        spent,
        mechanism.noise_multiplier,
    )
    ledger.record(ledger_path, None, name, seeds, "dpsgd", "train_dpsgd", mechanism)
    model = stack(layers, mean, std) | mlp.activation_entry(network["activation"])
    save_npz(out_path, seeds=seeds, **model)


def _release_gaussian(val, maps_path, name, query, mechanism, exact):
    """exact(map, b) released with the mechanism's Gaussian noise, for every seed of the block,
    the noise keyed by the secret, the query, the map and the noise's std."""
    maps = load_block(maps_path, ("mean", "std", "omega"), val["seeds"])
    secret, released = noise.secret(), []
    for b, seed in enumerate(val["seeds"]):
        feature_map = rff.unstack(maps, b)
        generator = noise.stream(secret, name, int(seed), query, list(feature_map.values()), mechanism.stream_scale)
        released.append(mechanism.release(exact(feature_map, b), generator))
    return np.stack(released)


@timed
def oracle_embedding(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """Pb. 1's query in the runs by MMD (eps<e>-mmd/): the mean embedding of the target's features
    in the learner's random features, with Gaussian noise (mechanisms.MeanEmbedding); the run's
    first query."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x",))
    released = _release_gaussian(
        val,
        maps_path,
        name,
        "embedding",
        mechanism,
        lambda feature_map, b: rff.mean_embedding(feature_map, val["x"][b], mechanism.n_val),
    )
    ledger.record(ledger_path, None, name, val["seeds"], "embedding", "oracle_embedding", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])


@timed
def dpmerf_release(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """DP-MERF's one release: the class-conditional embedding of the curator's labelled records
    (expril.rivals.dpmerf), with Gaussian noise (mechanisms.DPMERF)."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    released = _release_gaussian(
        val,
        maps_path,
        name,
        "dp-merf",
        mechanism,
        lambda feature_map, b: dpmerf.embedding(feature_map, val["x"][b], val["y"][b], mechanism.n_val),
    )
    ledger.record(ledger_path, None, name, val["seeds"], "dp-merf", "dpmerf_release", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])


@timed
def aim_release(val_path, bins_path, out_path, ledger_path, history_path, name, mechanism, rows, threads):
    """Marginal-based synthetic data (expril.rivals.aim): the curator's validation split
    discretised on the learner's bins, a graphical model fitted by AIM or MST (the mechanism's
    name) with the run's eps in pure DP, and `rows` labelled records (bin indices) drawn from it
    and released. OpenDP's noise is not seeded: every release is also appended to the split's
    history (`history_path`), reruns included."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    edges = load_bins(bins_path, seeds)
    secret, ids, y = noise.secret(), [], []
    for b, seed in enumerate(seeds):
        model, spent = aim.fit(val["x"][b], val["y"][b], edges[b], mechanism.eps, mechanism.name, threads)
        if not spent <= mechanism.eps:
            raise ledger.BudgetError(
                f"{name} seed {seed}: OpenDP accounts eps {spent} for {mechanism.name}, above the run's {mechanism.eps}"
            )
        sizes = binning.bin_counts(edges[b]).tolist() + [2]
        records = aim.synthesize(model, sizes, rows, rng("synthesis", secret, name, int(seed), repr(mechanism.eps)))
        log.info(
            "seed %d: %s model on cliques %s, eps %.6g accounted; positive rate of the records %.3f",
            seed,
            mechanism.name,
            model.cliques,
            spent,
            records[1].mean(),
        )
        ids.append(records[0])
        y.append(records[1])
    ledger.record(ledger_path, None, name, seeds, mechanism.name, "aim_release", mechanism, history_path)
    save_npz(out_path, ids=np.stack(ids), y=np.stack(y), seeds=seeds)
