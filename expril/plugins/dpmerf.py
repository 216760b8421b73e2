"""DP-MERF (Harder et al. 2021; expril.rivals.dpmerf, docs/synthetic.md) as a plug-in: the curator's
one release, the class-conditional mean embedding of its records in the learner's random features
with Gaussian noise; the learner's generator trained on it and records drawn from it
(expril.rivals.generator); the final network trained on those records. The release and the records
depend on the setting's generator alone."""

import numpy as np

from expril.io import save_npz
from expril.plugins import gate
from expril.plugins.base import POSITIVE, POSITIVE_INT, Method, Step, settings_schema
from expril.plugins.registry import register
from expril.privacy import gaussian, ledger, mechanisms
from expril.rivals import dpmerf
from expril.seeds import rng, seed_int
from expril.steps.blocks import load_block, log, save_runs, timed, train_on_records
from expril.steps.curator import feature_maps, release_gaussian


@timed
def dpmerf_release(val_path, maps_path, out_path, ledger_path, name, mechanism):
    """DP-MERF's one release: the class-conditional embedding of the curator's labelled records
    (expril.rivals.dpmerf), with Gaussian noise (expril.privacy.gaussian.DPMERF)."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    released = embeddings(val, feature_maps(maps_path, val["seeds"]), name, mechanism)
    ledger.record(ledger_path, None, name, val["seeds"], "dp-merf", "dpmerf_release", mechanism)
    save_npz(out_path, answers=released, seeds=val["seeds"])


def embeddings(val, maps, name, mechanism):
    """The release for every seed of the block, each with its feature map."""
    return release_gaussian(
        val,
        maps,
        name,
        "dp-merf",
        mechanism,
        lambda feature_map, b: dpmerf.embedding(feature_map, val["x"][b], val["y"][b], mechanism.n_val),
    )


def audit_embeddings(mechanism, x, y, keys):
    """The release on the gate's records (expril.plugins.gate.audited), in a public feature map,
    each noise key naming the data set in the noise stream."""
    val, maps = gate.audit_block(x, y), [gate.audit_feature_map(x.shape[1])]
    return np.stack([embeddings(val, maps, f"audit{k}", mechanism)[0] for k in keys])


@timed
def dpmerf_samples(maps_path, release_path, out_path, generator, init_key, rows, device, threads):
    """The learner's side of DP-MERF: a generator trained on the release (expril.rivals.generator,
    with `generator`'s settings) and `rows` records drawn from it."""
    from expril.rivals.generator import generate, train_generators  # torch is imported only by the steps that train

    maps = load_block(maps_path, ("mean", "std", "omega"))
    seeds = maps["seeds"]
    released = load_block(release_path, ("answers",), seeds)["answers"]
    feature_maps = {k: maps[k] for k in ("mean", "std", "omega")}
    keys = [[*init_key, int(s)] for s in seeds]
    generators, loss = train_generators(
        released,
        feature_maps,
        generator["hidden"],
        generator["noise_dim"],
        generator["steps"],
        generator["batch_size"],
        generator["lr"],
        [seed_int("generator", *k) for k in keys],
        device,
        threads,
        log.info,
        balanced=generator["class_weighting"] == "balanced",
    )
    x, y = generate(
        generators,
        feature_maps,
        released,
        rows,
        [seed_int("codes", *k) for k in keys],
        [rng("labels", *k) for k in keys],
    )
    log.info(
        "generators: final loss / |F|^2 median %.4f, max %.4f; positive rate of the samples %.3f",
        np.median(loss),
        loss.max(),
        y.mean(),
    )
    save_npz(out_path, x=x, y=y, seeds=seeds)


@timed
def train_dpmerf(runs, network, training, device, threads):
    """DP-MERF's final networks, trained on the generator's records as h* is on the true records,
    each run's (`runs`: its records, key and file; one run, or the calibration's runs of one network
    shape as one block)."""
    first = load_block(runs[0]["samples_path"], ("x", "y"))
    seeds = first["seeds"]
    samples = [first] + [load_block(run["samples_path"], ("x", "y"), seeds) for run in runs[1:]]
    keys = [[*run["init_key"], int(s)] for run in runs for s in seeds]
    x, y = (np.concatenate([block[k] for block in samples]) for k in ("x", "y"))
    model = train_on_records(x, y, keys, network, training, device, threads)
    save_runs([run["out_path"] for run in runs], seeds, model)


def generator(ctx):
    """DP-MERF's generator and random features: as configured, or the setting's recipe ('width':
    the official tabular generator's hidden widths, 4d and 2d)."""
    configured = ctx.config["comparison"]["dpmerf"] | {
        "class_weighting": "released",
        "random_features": ctx.config["comparison"]["random_features"],
    }
    knobs = ctx.recipe("generator", configured)
    if knobs["hidden"] == "width":
        knobs["hidden"] = [4 * ctx.features, 2 * ctx.features]
    return knobs


def feature_map(ctx):
    return ctx.feature_map(generator(ctx)["random_features"])


class DPMERF(Method):
    name = "dpmerf"
    display = "DP-MERF"
    config_schema = settings_schema(
        hidden={"type": "array", "items": POSITIVE_INT, "minItems": 1},
        noise_dim=POSITIVE_INT,
        steps=POSITIVE_INT,
        batch_size=POSITIVE_INT,
        lr=POSITIVE,
    )
    steps = (
        Step(
            "dpmerf_release",
            dpmerf_release,
            "embedding.npz",
            {"val_path": "target_val", "maps_path": feature_map},
            release=True,
            axes=("generator",),
            audit=audit_embeddings,
        ),
        Step(
            "dpmerf_samples",
            dpmerf_samples,
            "samples.npz",
            {"maps_path": feature_map, "release_path": "dpmerf_release"},
            axes=("generator",),
            params=lambda ctx: {"generator": generator(ctx)},
            trains=True,
        ),
        Step(
            "train_dpmerf",
            train_dpmerf,
            "model.npz",
            {"samples_path": "dpmerf_samples"},
            trains=True,
            per_run=("samples_path", "out_path", "init_key"),
        ),
    )

    def mechanism(self, ctx):
        """One Gaussian release with the run's (eps, delta)."""
        return gaussian.DPMERF(ctx.eps, ctx.delta, ctx.n_val)


register(DPMERF())
