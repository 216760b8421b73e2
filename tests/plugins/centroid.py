"""Noisy class centroids: docs/extending.md's second worked example, a method whose release is a
noisy model under a mechanism of its own, in one module that may live outside the package
(`comparison: plugins`; tests/plugins/test_outside.py keeps it in a temporary folder).

The curator releases, for each class, the sum and the count of its records with Gaussian noise,
their features first scaled to [-1, 1] by the box the learner's public source spans: the noisy
centroids, a nearest-centroid classifier. The learner labels its source by the nearest centroid
and trains its network on those labels."""

import math
from functools import cached_property

import numpy as np

from expril.io import save_npz
from expril.plugins.base import Method, Step
from expril.plugins.registry import register
from expril.privacy import calibration, ledger, mechanisms, noise
from expril.privacy.base import RECORD, Mechanism
from expril.privacy.base import register as register_mechanism
from expril.steps.blocks import load_block, train_on_records

QUERY = "centroid/class-sums"


@register_mechanism
class ClassSums(Mechanism):
    """Each class's sum and count of records in [-1, 1]^d, with Gaussian noise: adding or removing
    one record moves one class's (sum, count) by at most sqrt(d + 1) in L2, the release's
    sensitivity. One release, with the run's (eps, delta)."""

    name = "class-sums"
    neighbours = RECORD
    needs_delta = True
    planned_queries = 1

    def __init__(self, eps, delta, features):
        super().__init__(eps, delta)
        self.features = int(features)

    @property
    def sensitivity(self):
        return math.sqrt(self.features + 1)

    @cached_property
    def noise_std(self):
        return calibration.gaussian_noise_std(self.eps, self.delta, self.sensitivity)

    def query_cost(self, query=None):
        return (self.eps, self.delta) if math.isfinite(self.eps) else (math.inf, 0.0)

    def ledger_fields(self, query=None):
        return {"sensitivity": self.sensitivity, "scale": self.noise_std}

    def release(self, exact, generator):
        return noise.gaussian(exact, generator, self.noise_std)


def box(source_x):
    """The public box the learner's source spans: each feature's (low, high)."""
    return [source_x.min(axis=0), source_x.max(axis=0)]


def scaled(x, bounds):
    """x in the box's coordinates, clipped to [-1, 1] (a constant feature at 0)."""
    low, high = bounds
    half = np.where(high > low, (high - low) / 2, 1.0)
    return np.clip((x - (high + low) / 2) / half, -1.0, 1.0)


def class_sums(z, y):
    """Each class's (sum of its records, count): a row per class, 0 then 1."""
    return np.stack([np.append(z[y == k].sum(axis=0), (y == k).sum()) for k in (0, 1)])


def noisy_sums(x, y, bounds, name, seed, mechanism, secret):
    """One run's noisy class sums, from the query's own noise stream."""
    generator = noise.stream(secret, name, int(seed), QUERY, bounds, mechanism.noise_std)
    return mechanism.release(class_sums(scaled(x, bounds), y), generator)


def release(val_path, source_path, out_path, ledger_path, name, mechanism):
    """The curator's side: every seed's noisy class sums, the release in the ledger."""
    mechanism = mechanisms.from_param(mechanism)
    val = load_block(val_path, ("x", "y"))
    seeds, secret = val["seeds"], noise.secret()
    source = load_block(source_path, ("x",), seeds)
    released = [
        noisy_sums(val["x"][b], val["y"][b], box(source["x"][b]), name, seed, mechanism, secret)
        for b, seed in enumerate(seeds)
    ]
    ledger.record(ledger_path, None, name, seeds, QUERY, "centroid_release", mechanism)
    save_npz(out_path, sums=np.stack(released), seeds=seeds)


def audit_release(mechanism, x, y, keys):
    """The release on the gate's records, once per noise key (expril.plugins.gate): in a public box
    of +-3 in every feature, the gate's canaries at its corners."""
    bounds = [np.full(x.shape[1], -3.0), np.full(x.shape[1], 3.0)]
    secret = noise.secret()
    return np.stack([noisy_sums(x, y, bounds, f"audit{k}", 0, mechanism, secret).ravel() for k in keys])


def nearest(z, sums):
    """The label of each record of z by the nearest noisy centroid."""
    centroids = sums[:, :-1] / np.maximum(sums[:, -1:], 1.0)
    return ((z[:, None, :] - centroids[None]) ** 2).sum(axis=2).argmin(axis=1).astype(np.int8)


def train(source_path, release_path, out_path, network, training, init_key, device, threads):
    """The learner's side: its source labelled by the nearest centroid, the network trained on them."""
    source = load_block(source_path, ("x",))
    seeds, x = source["seeds"], source["x"]
    sums = load_block(release_path, ("sums",), seeds)["sums"]
    y = np.stack([nearest(scaled(x[b], box(x[b])), sums[b]) for b in range(len(seeds))])
    model = train_on_records(x, y, [[*init_key, int(s)] for s in seeds], network, training, device, threads)
    save_npz(out_path, seeds=seeds, **model)


class NoisyCentroids(Method):
    name = "centroid"
    display = "Noisy centroids"
    steps = (
        Step(
            "centroid_release",
            release,
            "sums.npz",
            {"val_path": "target_val", "source_path": "source"},
            release=True,
            axes=(),
            audit=audit_release,
        ),
        Step(
            "centroid_train",
            train,
            "model.npz",
            {"source_path": "source", "release_path": "centroid_release"},
            trains=True,
        ),
    )

    def mechanism(self, ctx):
        return ClassSums(ctx.eps, ctx.delta, ctx.features)


register(NoisyCentroids())
