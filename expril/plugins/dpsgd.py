"""DP-SGD (Abadi et al. 2016, with Opacus; expril.rivals.dpsgd, docs/comparison.md) as a plug-in: the
curator trains the network on its validation split and releases it, one step that is the release.
No early stopping, which would read private held-out data: a fixed number of epochs."""

import math

import numpy as np

from expril import settings
from expril.io import save_npz
from expril.method import mlp
from expril.plugins import gate
from expril.plugins.base import POSITIVE, POSITIVE_INT, Method, Step, settings_schema
from expril.plugins.registry import register
from expril.privacy import dpsgd, ledger, mechanisms, noise
from expril.seeds import seed_int
from expril.steps.blocks import load_block, log, timed


@timed
def train_dpsgd(
    val_path, source_path, out_path, ledger_path, name, network, recipe, mechanism, init_key, setting, rows, threads
):
    """The curator's networks trained on its validation split with DP-SGD (expril.rivals.dpsgd),
    the block's together, and released; inputs standardised with the public source's mean and std
    (the validation split's would be unaccounted statistics of the private data). `network` and
    `recipe` (optimizer, momentum, lr) are the tuning setting's; its rate, epochs and clipping are
    the mechanism's. Each step's noisy sum is divided by the expected batch of the public n' (`rows`),
    not of the realised number of records. The curator's randomness (sampling and noise) is keyed by its secret, as the
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
        records=rows,
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


AUDIT_HIDDEN = [16]
# A training of the plan's steps takes about 0.1 s per 600 steps (1170 on the study's largest
# datasets): the gate's budget allows these.
AUDIT_DRAWS = 100


def audit_training(mechanism, x, y, keys):
    """The release on the gate's records (expril.plugins.gate.audited): one network of AUDIT_HIDDEN
    per noise key, trained by the release's trainer at the plan's rate, epochs, clipping and noise
    (the key seeds its batches and its noise), the noisy sums divided by the gate's public n'; its
    weights flattened."""
    from expril.rivals.dpsgd import train

    keys = [int(k) for k in keys]
    layers, _ = train(
        np.repeat(x[None], len(keys), axis=0),
        np.repeat(y[None], len(keys), axis=0),
        AUDIT_HIDDEN,
        records=gate.AUDIT_RECORDS,
        sample_rate=mechanism.sample_rate,
        epochs=mechanism.epochs,
        lr=1e-2,
        max_grad_norm=mechanism.max_grad_norm,
        noise_multiplier=mechanism.noise_multiplier,
        init_seeds=[0] * len(keys),
        sampling_seeds=[seed_int("audit-sampling", k) for k in keys],
        noise_seeds=[seed_int("audit-noise", k) for k in keys],
    )
    return np.concatenate([w.reshape(len(keys), -1) for w in layers.values()], axis=1)


def recipe(ctx):
    """DP-SGD's knobs: as configured, the training's optimiser, lr and batch with
    comparison.dpsgd's epochs and clipping; a setting's recipe overrides them."""
    configured = {
        "optimizer": "adam",
        "momentum": 0.0,
        "lr": ctx.config["training"]["lr"],
        "batch_size": ctx.config["training"]["batch_size"],
        "epochs": ctx.config["comparison"]["dpsgd"]["epochs"],
        "max_grad_norm": ctx.config["comparison"]["dpsgd"]["max_grad_norm"],
    }
    return ctx.recipe("recipe", configured)


def sample_rate(ctx):
    """A recipe's `sampling` share of n', else Opacus's rate for the configured batch size."""
    knobs = recipe(ctx)
    if "sampling" in knobs:
        return knobs["sampling"]
    return settings.sample_rate(ctx.n_val, knobs["batch_size"])


class DPSGD(Method):
    name = "dpsgd"
    display = "DP-SGD"
    config_schema = settings_schema(epochs=POSITIVE_INT, max_grad_norm=POSITIVE)
    # On the CPU, whatever `device` says (expril/rivals/dpsgd.py).
    steps = (
        Step(
            "train_dpsgd",
            train_dpsgd,
            "model.npz",
            {"val_path": "target_val", "source_path": "source"},
            release=True,
            params=lambda ctx: {"recipe": recipe(ctx)},
            audit=audit_training,
            audit_draws=AUDIT_DRAWS,
        ),
    )

    def mechanism(self, ctx):
        """Poisson batches on the validation split, at the setting's rate, epochs and clipping."""
        knobs = recipe(ctx)
        return dpsgd.DPSGD(ctx.eps, ctx.delta, sample_rate(ctx), knobs["epochs"], knobs["max_grad_norm"])


register(DPSGD())
