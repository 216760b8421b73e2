"""One function per workflow step: load the step's input files, run the method over the seeds
of a block, write the outputs. The Snakemake scripts only map rule inputs/params onto these.

A block's arrays are stacked along a first axis of seeds. Oracle answers, whose length varies per
seed (de-duplicated edges), are padded with NaN and carry their lengths; bins are packed flat
with their per-feature edge counts (binning.pack).
"""
import functools
import logging
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import aim, binning, datasets, dpmerf, labels, ledger, llp, mechanisms, mlp, oracle, reweight, rff
from .io import load_npz, save_csv, save_npz
from .seeds import rng, seed_int

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


def _pad(rows):
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), np.nan)
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out, np.array([len(r) for r in rows])


def _save_answers(path, answers, seeds):
    padded, n_bins = _pad(answers)
    save_npz(path, answers=padded, n_bins=n_bins, seeds=seeds)


def _answers(data, b):
    return data["answers"][b, :data["n_bins"][b]]


def _load_block(path, keys, seeds=None):
    data = load_npz(path, required=("seeds",) + tuple(keys))
    if seeds is not None and not np.array_equal(data["seeds"], seeds):
        raise ValueError(f"{path}: holds seeds {data['seeds'].tolist()}, expected {list(seeds)}")
    return data


def _load_bins(path, seeds):
    return binning.unpack(_load_block(path, ("edges", "edge_counts"), seeds))


# --- world and curator -----------------------------------------------------------------------

@timed
def generate_data(source_path, target_path, name, spec, seeds, redraw, ctg_csv=None, ctg_sha256=None):
    ctg = datasets.load_ctg(ctg_csv, ctg_sha256) if spec["generator"] == "ctg" else None
    block = datasets.generate_block(name, spec, seeds, redraw, ctg)
    save_npz(source_path, x=block["source_x"], seeds=block["seeds"])
    save_npz(target_path, x=block["target_x"], y=block["target_y"], seeds=block["seeds"])
    log.info("%s seeds %s: source %s, target %s", name, list(seeds), block["source_x"].shape,
             block["target_x"].shape)


@timed
def split_target(target_path, val_path, test_path, name, val_fraction):
    target = _load_block(target_path, ("x", "y"))
    parts = [datasets.split_target(x, y, val_fraction, name, int(s))
             for x, y, s in zip(target["x"], target["y"], target["seeds"])]
    val_x, val_y, test_x, test_y = (np.stack(p) for p in zip(*parts))
    save_npz(val_path, x=val_x, y=val_y, seeds=target["seeds"])
    save_npz(test_path, x=test_x, y=test_y, seeds=target["seeds"])


# --- oracle (the only steps that read target_val) ---------------------------------------------

def _answer_block(val, edges, name, queries, mechanism, release, per_seed=None):
    """Answer one query for every seed of a block: release(ids, n_bins, [per_seed[b],] noise);
    queries[b] names seed b's query in its noise stream."""
    secret = oracle.secret()
    answers = []
    for b, seed in enumerate(val["seeds"]):
        if len(edges[b]) != mechanism.features:
            raise ValueError(f"{name} seed {seed}: the bins cover {len(edges[b])} features, but the noise "
                             f"was set for d = {mechanism.features}")
        n_bins = binning.bin_counts(edges[b]).sum()
        ids = binning.bin_ids(edges[b], val["x"][b])
        noise = oracle.noise_generator(secret, name, int(seed), queries[b], edges[b], mechanism.noise_key)
        extra = () if per_seed is None else (per_seed[b],)
        answers.append(release(ids, n_bins, *extra, noise))
    return answers


@timed
def oracle_marginals(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """The bin counts query (the target's bin marginals under `paper`, noisy counts under
    `counts`): the first query. `mechanism` is the rule's param (mechanisms.Mechanism.param)."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x",))
    answers = _answer_block(val, _load_bins(bins_path, val["seeds"]), name,
                            [mechanisms.COUNTS_QUERY] * len(val["seeds"]), mechanism, mechanism.release_counts)
    # Accounted (and checked) once the answers exist, before any is released.
    ledger.record(ledger_path, None, name, val["seeds"], mechanisms.COUNTS_QUERY, "oracle_marginals", mechanism)
    _save_answers(out_path, answers, val["seeds"])


@timed
def oracle_errors(val_path, bins_path, model_path, out_path, ledger_path, name, query, mechanism,
                  previous_ledger=None):
    """Score the learner's submitted models on the target validation split and release, per bin,
    the mechanism's answer about their errors (noisy fraction under `paper`, count under `counts`)."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x", "y"))
    model = _load_block(model_path, (), val["seeds"])
    errors = mlp.predict(model, val["x"]) != val["y"]
    # The submitted network is part of the query: another model gets fresh noise.
    queries = [f"{query}/{mlp.digest(model, b)}" for b in range(len(val["seeds"]))]
    answers = _answer_block(val, _load_bins(bins_path, val["seeds"]), name, queries, mechanism,
                            mechanism.release_errors, errors)
    ledger.record(ledger_path, ledger.load(previous_ledger), name, val["seeds"], query, "oracle_errors", mechanism)
    _save_answers(out_path, answers, val["seeds"])


# --- learner ----------------------------------------------------------------------------------

@timed
def make_bins(source_path, out_path, q):
    source = _load_block(source_path, ("x",))
    save_npz(out_path, seeds=source["seeds"], **binning.pack([binning.make_bins(x, q) for x in source["x"]]))


@timed
def reweight_source(source_path, weights_path, bins_out, q, solver, mechanism, bins_path=None,
                    marginals_path=None, embedding_path=None, maps_path=None):
    """Pb. 1 when the target was queried for the IS step (its bin marginals, or its features'
    mean embedding in the runs by MMD, eps<e>-mmd/), else uniform weights; then the error-query
    bins: quantiles of the weighted source, so each holds about n'/q target samples, or, for a
    mechanism whose rates divide by released counts, the bins whose counts were released."""
    mechanism = mechanisms.from_param(mechanism)
    source = _load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    weights = np.ones(x.shape[:2])
    edges = _load_bins(bins_path, seeds) if bins_path else None
    if embedding_path is not None:
        released = _load_block(embedding_path, ("answers",), seeds)["answers"]
        maps = _load_block(maps_path, ("mean", "std", "omega"), seeds)
        for b in range(len(seeds)):
            features = rff.features(rff.unstack(maps, b), x[b])
            weights[b], taken = reweight.mmd_weights(features, released[b], **solver)
            _log_weights(seeds[b], taken, weights[b])
    if marginals_path is not None:
        marginals = _load_block(marginals_path, ("answers", "n_bins"), seeds)
        for b in range(len(seeds)):
            weights[b] = _importance_weights(x[b], edges[b], _answers(marginals, b), mechanism, solver, seeds[b])
    save_npz(weights_path, weights=weights, seeds=seeds)
    if edges is None or not mechanism.uses_counts:
        edges = [binning.make_bins(x[b], q, weights[b]) for b in range(len(seeds))]
    save_npz(bins_out, seeds=seeds, **binning.pack(edges))


def _importance_weights(x, edges, released_counts, mechanism, solver, seed):
    """Pb. 1 for one seed: the source's weights matching the target's bin masses, as the
    mechanism reads them from its bin counts release."""
    counts = binning.bin_counts(edges)
    masses = mechanism.bin_masses(released_counts, counts)
    weights, taken = reweight.importance_weights(binning.bin_ids(edges, x), counts.sum(), masses, **solver)
    _log_weights(seed, taken, weights)
    return weights


def _log_weights(seed, taken, weights):
    log.info("seed %d: %d solver steps, weights min %.3g max %.3g, effective sample size %.0f of %d",
             seed, taken, weights.min(), weights.max(), weights.sum() ** 2 / (weights ** 2).sum(), len(weights))


@timed
def init_hypothesis(out_path, seeds):
    """h_0 = 1 everywhere (Algorithm 1)."""
    save_npz(out_path, seeds=np.array(seeds), **mlp.constant_model(1, len(seeds)))


@timed
def estimate_labels(source_path, weights_path, bins_path, model_paths, answer_paths, out_path, solver,
                    mechanism, counts_path=None, n_val=None):
    """Pb. 2 from the submitted hypotheses and their error answers (one block of equations each),
    read as error rates by the mechanism (with the released bin counts where it divides by them;
    where none were released, as in the runs by MMD, with the weighted source's bin masses
    times n', the configured target size)."""
    mechanism = mechanisms.from_param(mechanism)
    source = _load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    weights = _load_block(weights_path, ("weights",), seeds)["weights"]
    edges = _load_bins(bins_path, seeds)
    predictions = [mlp.predict(_load_block(p, (), seeds), x) for p in model_paths]
    answers = [_load_block(p, ("answers", "n_bins"), seeds) for p in answer_paths]
    counts = _load_block(counts_path, ("answers", "n_bins"), seeds) if counts_path else None
    relaxed = np.empty(x.shape[:2])
    for b in range(len(seeds)):
        n_bins = binning.bin_counts(edges[b]).sum()
        ids = binning.bin_ids(edges[b], x[b])
        released_counts = None if counts is None else _answers(counts, b)
        if released_counts is None and mechanism.uses_counts:
            released_counts = n_val * binning.bin_sums(ids, n_bins, weights[b]) / weights[b].sum()
        rates = [mechanism.error_rates(_answers(a, b), released_counts) for a in answers]
        blocks = [(h[b].astype(float), r) for h, r in zip(predictions, rates)]
        relaxed[b], taken = labels.estimate_labels(ids, n_bins, weights[b], blocks, **solver)
        log.info("seed %d: %d blocks, %d solver steps, estimated positive rate %.3f", seeds[b], len(blocks),
                 taken, labels.threshold(relaxed[b]).mean())
    save_npz(out_path, relaxed=relaxed, seeds=seeds)


def _train(x, y, w, hidden, training, init_seeds, device, threads):
    from .training import train_mlps   # torch is imported only by the steps that train
    return train_mlps(x, y, w, hidden, init_seeds, training["epochs"], training["batch_size"], training["lr"],
                      holdout=training["holdout"], patience=training["patience"], device=device,
                      threads=threads, log=log.info)


@timed
def train_hypothesis(source_path, weights_path, labels_path, out_path, hidden, training, init_key,
                     device, threads):
    """h_t: the network trained on the source with the thresholded estimated labels, weighted by
    the importance weights."""
    source = _load_block(source_path, ("x",))
    seeds = source["seeds"]
    weights = _load_block(weights_path, ("weights",), seeds)["weights"]
    y = labels.threshold(_load_block(labels_path, ("relaxed",), seeds)["relaxed"])
    init_seeds = [seed_int(*init_key, int(s)) for s in seeds]
    model = _train(source["x"], y, weights, hidden, training, init_seeds, device, threads)
    save_npz(out_path, seeds=seeds, **model)


# --- evaluation (the only steps, with the reference, that read target_test) --------------------

def _accuracy(model, data):
    return (mlp.predict(model, data["x"]) == data["y"]).mean(axis=1)


@timed
def evaluate_hypotheses(test_path, models, out_path, name, eps):
    """Accuracy of every h_t on the target test split; `models` maps (variant, t) to a model file."""
    test = _load_block(test_path, ("x", "y"))
    rows = []
    for (variant, t), path in models.items():
        for seed, acc in zip(test["seeds"], _accuracy(_load_block(path, (), test["seeds"]), test)):
            rows.append({"dataset": name, "seed": int(seed), "eps": eps, "variant": variant, "t": t,
                         "accuracy": acc})
    save_csv(out_path, pd.DataFrame(rows))


@timed
def reference_models(val_path, test_path, out_csv, out_model, name, hidden, training, device, threads):
    """h*: the same architecture trained on the target validation split with its true labels;
    h0*: the validation split's majority class (a tie goes to 1), both scored on the test split."""
    val = _load_block(val_path, ("x", "y"))
    test = _load_block(test_path, ("x", "y"), val["seeds"])
    init_seeds = [seed_int("reference", name, int(s)) for s in val["seeds"]]
    model = _train(val["x"], val["y"], np.ones(val["y"].shape), hidden, training, init_seeds, device, threads)
    save_npz(out_model, seeds=val["seeds"], **model)
    majority = (val["y"].mean(axis=1) >= 0.5).astype(np.int8)
    frame = pd.DataFrame({"dataset": name, "seed": val["seeds"], "h_star": _accuracy(model, test),
                          "h0_star": (test["y"] == majority[:, None]).mean(axis=1)})
    save_csv(out_csv, frame)


# --- identification (docs/identification.md): the world and reference steps under one reading ---

@timed
def calibrate_reference(out_csv, name, spec, seeds, trainings, hidden, device, threads, ctg_csv=None,
                        ctg_sha256=None):
    """h* and h0* of benchmark `name` read as `spec` (with its redraw and val_fraction), on the
    calibration `seeds`, under each training reading ({label: training settings}): the steps
    above run into a scratch folder, of which only the accuracies are kept."""
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_csv).parent) as scratch:
        files = {part: Path(scratch) / f"{part}.npz" for part in ("source", "target", "val", "test")}
        generate_data(files["source"], files["target"], name, spec, seeds, spec["redraw"], ctg_csv, ctg_sha256)
        split_target(files["target"], files["val"], files["test"], name, spec["val_fraction"])
        frames = []
        for label, training in trainings.items():
            accuracy = Path(scratch) / f"{label}.csv"
            reference_models(files["val"], files["test"], accuracy, Path(scratch) / f"{label}_model.npz", name,
                             hidden, training, device, threads)
            frames.append(pd.read_csv(accuracy).assign(training=label))
    save_csv(out_csv, pd.concat(frames, ignore_index=True), exact=True)


# --- the rivals at equal privacy (docs/comparison.md) --------------------------------------------

def _load_answers(data, key, b):
    return data[key][b, :data["n_bins"][b]]


@timed
def oracle_proportions(val_path, bins_path, out_path, ledger_path, name, mechanism):
    """LLP's one release (expril.llp): the noisy counts and negatives of every bin, the bin counts
    query and the error query on h_0 = 1, accounted as the run's two queries."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    edges = _load_bins(bins_path, seeds)
    counts = _answer_block(val, edges, name, [llp.QUERIES[0]] * len(seeds), mechanism, mechanism.release_counts)
    negatives = _answer_block(val, edges, name, [llp.QUERIES[1]] * len(seeds), mechanism, mechanism.release_errors,
                              val["y"] != 1)
    book = None
    for query in llp.QUERIES:
        book = ledger.record(ledger_path, book, name, seeds, query, "oracle_proportions", mechanism)
    (counts, n_bins), (negatives, _) = _pad(counts), _pad(negatives)
    save_npz(out_path, counts=counts, negatives=negatives, n_bins=n_bins, seeds=seeds)


@timed
def train_llp(source_path, bins_path, release_path, out_path, hidden, training, solver, mechanism, init_key,
              device, threads):
    """The learner's network trained from LLP's release: on the source, weighted by Pb. 1 from the
    released bin counts where the dataset has an IS step (uniformly otherwise), with the loss of
    label proportions on the bags the bins form."""
    from .training import Bags   # torch is imported only by the steps that train
    mechanism = mechanisms.from_param(mechanism)
    source = _load_block(source_path, ("x",))
    x, seeds = source["x"], source["seeds"]
    edges = _load_bins(bins_path, seeds)
    release = _load_block(release_path, ("counts", "negatives", "n_bins"), seeds)
    weights = np.ones(x.shape[:2])
    bags, proportions = np.empty(x.shape, dtype=np.int64), np.empty(x.shape)
    for b in range(len(seeds)):
        counts = _load_answers(release, "counts", b)
        if mechanism.importance_sampling:
            weights[b] = _importance_weights(x[b], edges[b], counts, mechanism, solver, seeds[b])
        bags[b], proportions[b] = llp.bags(edges[b], x[b], mechanism, counts, _load_answers(release, "negatives", b))
    init_seeds = [seed_int(*init_key, int(s)) for s in seeds]
    model = _train(x, Bags(bags, proportions), weights, hidden, training, init_seeds, device, threads)
    save_npz(out_path, seeds=seeds, **model)


@timed
def train_dpsgd(val_path, source_path, out_path, ledger_path, name, hidden, lr, batch_size, mechanism, init_key,
                threads):
    """The curator's network trained on its validation split with DP-SGD (expril.dpsgd), one seed
    after the other, and released; inputs standardised with the public source's mean and std
    (the validation split's would be unaccounted statistics of the private data)."""
    import torch

    from .dpsgd import stack, train_private
    torch.set_num_threads(threads)
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    mean, std = mlp.fit_standardisation(_load_block(source_path, ("x",), seeds)["x"])
    inputs = mlp.standardise(val["x"], mean, std)
    secret, planned = oracle.secret(), mechanism.query_cost()[0]
    networks = []
    for b, seed in enumerate(seeds):
        # The curator's randomness (sampling and noise) is keyed by its secret, as the oracle's noise.
        sampling, noise = (seed_int("dpsgd", part, secret, name, int(seed), repr(mechanism.eps)) for part in ("sampling", "noise"))
        layers, spent = train_private(inputs[b], val["y"][b], hidden, lr, batch_size, mechanism,
                                      seed_int(*init_key, int(seed)), sampling, noise)
        if spent != planned:
            raise ledger.BudgetError(f"{name} seed {seed}: Opacus's accountant spent eps {spent}, the plan {planned}")
        log.info("seed %d: trained, eps spent %.4g (noise multiplier %.4g)", seed, spent, mechanism.noise_multiplier)
        networks.append(layers)
    ledger.record(ledger_path, None, name, seeds, "dpsgd", "train_dpsgd", mechanism)
    save_npz(out_path, seeds=seeds, **stack(networks, mean, std))


@timed
def evaluate_rival(test_path, model_path, out_path, name, method, eps):
    """Accuracy of a rival's networks on the target test split."""
    test = _load_block(test_path, ("x", "y"))
    acc = _accuracy(_load_block(model_path, (), test["seeds"]), test)
    save_csv(out_path, pd.DataFrame({"dataset": name, "seed": test["seeds"], "eps": eps, "method": method,
                                     "accuracy": acc}))


# --- random features, synthetic data and MMD reweighting (docs/synthetic.md) --------------------

@timed
def feature_maps(source_path, out_path, name, n_features):
    """The learner's random Fourier feature map of each run (expril.rff), from its source and a
    public stream: handed to the curator as the bins are."""
    source = _load_block(source_path, ("x",))
    maps = [rff.make_map(x, n_features, rng("rff", name, int(s))) for x, s in zip(source["x"], source["seeds"])]
    save_npz(out_path, seeds=source["seeds"], **rff.stack(maps))


def _release_gaussian(val, maps_path, name, query, mechanism, exact):
    """exact(map, b) released with the mechanism's Gaussian noise, for every seed of the block,
    the noise keyed by the secret, the query, the map and the noise's std."""
    maps = _load_block(maps_path, ("mean", "std", "omega"), val["seeds"])
    secret, released = oracle.secret(), []
    for b, seed in enumerate(val["seeds"]):
        feature_map = rff.unstack(maps, b)
        noise = oracle.noise_generator(secret, name, int(seed), query, list(feature_map.values()), mechanism.noise_key)
        released.append(mechanism.release(exact(feature_map, b), noise))
    return np.stack(released)


@timed
def oracle_embedding(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """Pb. 1's query in the runs by MMD (eps<e>-mmd/): the mean embedding of the target's features
    in the learner's random features, with Gaussian noise (mechanisms.MeanEmbedding); the run's
    first query."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x",))
    released = _release_gaussian(val, maps_path, name, "embedding", mechanism,
                                 lambda feature_map, b: rff.mean_embedding(feature_map, val["x"][b], mechanism.n_val))
    ledger.record(ledger_path, None, name, val["seeds"], "embedding", "oracle_embedding", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])


@timed
def dpmerf_release(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """DP-MERF's one release: the class-conditional embedding of the curator's labelled records
    (expril.dpmerf), with Gaussian noise (mechanisms.DPMERF)."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x", "y"))
    released = _release_gaussian(
        val, maps_path, name, "dp-merf", mechanism,
        lambda feature_map, b: dpmerf.embedding(feature_map, val["x"][b], val["y"][b], mechanism.n_val))
    ledger.record(ledger_path, None, name, val["seeds"], "dp-merf", "dpmerf_release", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])


@timed
def train_dpmerf(maps_path, release_path, out_path, samples_path, generator, hidden, training, init_key, rows,
                 device, threads):
    """The learner's side of DP-MERF: a generator trained on the release (expril.generator), `rows`
    records drawn from it, and the network trained on them as h* is on the true records."""
    from .generator import generate, train_generators   # torch is imported only by the steps that train
    maps = _load_block(maps_path, ("mean", "std", "omega"))
    seeds = maps["seeds"]
    released = _load_block(release_path, ("answers",), seeds)["answers"]
    feature_maps = {k: maps[k] for k in ("mean", "std", "omega")}
    keys = [[*init_key, int(s)] for s in seeds]
    model, loss = train_generators(released, feature_maps, generator["hidden"], generator["noise_dim"],
                                   generator["steps"], generator["batch_size"], generator["lr"],
                                   [seed_int("generator", *k) for k in keys], device, threads, log.info)
    x, y = generate(model, feature_maps, released, rows, [seed_int("codes", *k) for k in keys],
                    [rng("labels", *k) for k in keys])
    log.info("generators: final loss / |F|^2 median %.4f, max %.4f; positive rate of the samples %.3f",
             np.median(loss), loss.max(), y.mean())
    save_npz(samples_path, x=x, y=y, seeds=seeds)
    network = _train(x, y, np.ones(y.shape), hidden, training, [seed_int("network", *k) for k in keys], device,
                     threads)
    save_npz(out_path, seeds=seeds, **network)


@timed
def aim_release(val_path, bins_path, out_path, ledger_path, name, mechanism, rows, threads):
    """Marginal-based synthetic data (expril.aim): the curator's validation split discretised on
    the learner's bins, a graphical model fitted by AIM or MST (the mechanism's name) with the
    run's eps in pure DP, and `rows` labelled records (bin indices) drawn from it and released."""
    mechanism = mechanisms.from_param(mechanism)
    val = _load_block(val_path, ("x", "y"))
    seeds = val["seeds"]
    edges = _load_bins(bins_path, seeds)
    secret, ids, y = oracle.secret(), [], []
    for b, seed in enumerate(seeds):
        model, spent = aim.fit(val["x"][b], val["y"][b], edges[b], mechanism.eps, mechanism.name, threads)
        if not spent <= mechanism.eps:
            raise ledger.BudgetError(f"{name} seed {seed}: OpenDP accounts eps {spent} for {mechanism.name}, "
                                     f"above the run's {mechanism.eps}")
        sizes = binning.bin_counts(edges[b]).tolist() + [2]
        records = aim.synthesize(model, sizes, rows, rng("synthesis", secret, name, int(seed), repr(mechanism.eps)))
        log.info("seed %d: %s model on cliques %s, eps %.6g accounted; positive rate of the records %.3f",
                 seed, mechanism.name, model.cliques, spent, records[1].mean())
        ids.append(records[0])
        y.append(records[1])
    ledger.record(ledger_path, None, name, seeds, mechanism.name, "aim_release", mechanism)
    save_npz(out_path, ids=np.stack(ids), y=np.stack(y), seeds=seeds)


@timed
def train_aim(source_path, bins_path, release_path, out_path, hidden, training, init_key, device, threads):
    """The learner's network trained on AIM's (or MST's) records, their bins turned into values by
    drawing source records from the same bins (aim.debin)."""
    source = _load_block(source_path, ("x",))
    seeds = source["seeds"]
    edges = _load_bins(bins_path, seeds)
    release = _load_block(release_path, ("ids", "y"), seeds)
    keys = [[*init_key, int(s)] for s in seeds]
    x = np.stack([aim.debin(release["ids"][b], source["x"][b], edges[b], rng("debin", *keys[b]))
                  for b in range(len(seeds))])
    network = _train(x, release["y"], np.ones(release["y"].shape), hidden, training,
                     [seed_int("network", *k) for k in keys], device, threads)
    save_npz(out_path, seeds=seeds, **network)
