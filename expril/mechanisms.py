"""The oracle's privacy mechanisms: one class each, in a registry (`MECHANISMS`).

A mechanism is the privacy plan of one run (dataset, eps, delta). It owns its neighbour relation,
its noise calibrated from (eps, delta), the oracle's two releases (the bin counts query and the
error query on a submitted hypothesis), the learner's reading of them (post-processing, free),
the cost of one query and the composition of a run's queries. Recording is kept apart:
`expril.ledger` asks the mechanism for costs and writes the rows.

Rules receive a mechanism as one param, `Mechanism.param()`, a plain dict; the steps rebuild the
object with `from_param`. A new mechanism is one subclass decorated with `@register`.
"""
import math
from abc import ABC, abstractmethod

import numpy as np

from . import settings
from .binning import bin_sums

RECORD = "add/remove one record"
LABEL = "change one label"

MECHANISMS = {}


def register(cls):
    MECHANISMS[cls.name] = cls
    return cls


def get(name):
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}, expected one of {sorted(MECHANISMS)}")
    return MECHANISMS[name]


def from_param(param):
    """The mechanism a rule's `mechanism` param describes (other keys, such as the secret's
    digest, are there for Snakemake's rerun triggers only)."""
    return get(param["name"])(param["eps"], param["delta"], param["features"], param["iterations"],
                              param["importance_sampling"])


class Mechanism(ABC):
    name: str
    neighbours: str
    # The learner divides released error counts by released bin counts: every run then asks the
    # bin counts first, and the error queries use the same bins.
    uses_counts = False

    def __init__(self, eps, delta, features, iterations, importance_sampling):
        if not eps > 0:
            raise ValueError(f"epsilon must be positive, got {eps}")
        if not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {delta}")
        self.eps, self.delta, self.features = float(eps), float(delta), int(features)
        self.iterations, self.importance_sampling = int(iterations), bool(importance_sampling)

    def param(self):
        return {"name": self.name, "eps": self.eps, "delta": self.delta, "features": self.features,
                "iterations": self.iterations, "importance_sampling": self.importance_sampling}

    @classmethod
    def asks_counts(cls, importance_sampling):
        """Whether a run starts with the bin counts query: for the IS step (Pb. 1), and always
        for a mechanism whose rates need the counts."""
        return importance_sampling or cls.uses_counts

    @classmethod
    def n_queries(cls, iterations, importance_sampling):
        """Oracle queries of one run: one error query per submitted h_0..h_{T-1}, plus the bin
        counts query (Table 1: 2 without IS step, 3 with, for the paper's mechanism)."""
        return iterations + int(cls.asks_counts(importance_sampling))

    @property
    def planned_queries(self):
        return self.n_queries(self.iterations, self.importance_sampling)

    @abstractmethod
    def release_counts(self, ids, n_bins, generator):
        """The bin counts query on the target samples' bin ids (n, d)."""

    @abstractmethod
    def release_errors(self, ids, n_bins, errors, generator):
        """The error query: `errors` (n,) marks the samples the submitted hypothesis gets wrong."""

    def bin_masses(self, released, bins_per_feature):
        """Per-feature bin masses (Pb. 1's target marginals) from the counts release."""
        return released

    def error_rates(self, released, counts=None):
        """Per-bin error fractions (Eq. 7's p) from an error release (and the counts release)."""
        return released

    @abstractmethod
    def query_cost(self):
        """(eps, delta) of one query under `neighbours`."""

    def compose(self, costs):
        """(eps, delta) of a run's queries together; basic composition, exact for pure eps."""
        return sum(e for e, _ in costs), sum(d for _, d in costs)

    def ledger_fields(self):
        """What the ledger records about this mechanism's noise, beside the cost."""
        return {}

    @property
    def noise_key(self):
        """Keys the noise stream (oracle.noise_generator) with the run's eps: the paper's lambda,
        so that another eps draws fresh noise."""
        return settings.noise_scale(self.features, self.iterations, self.eps)


class _Laplace(Mechanism):
    """Laplace noise of scale lambda = d (T+1) / eps (Eq. 14) on histograms of sensitivity 1 per
    feature; lambda = 0 (eps = inf) gives exact answers."""

    neighbours = RECORD

    def __init__(self, *args):
        super().__init__(*args)
        self.scale = settings.noise_scale(self.features, self.iterations, self.eps)

    @classmethod
    def at_scale(cls, scale, features=1):
        """The mechanism at a given noise scale, for audits and tests (runs derive it from eps)."""
        mechanism = cls(1.0, 0.0, features, 0, False)
        mechanism.scale = float(scale)
        return mechanism

    def noise(self, generator, size):
        return generator.laplace(0.0, self.scale, size) if self.scale > 0 else np.zeros(size)

    def query_cost(self):
        return (math.inf if self.scale == 0 else self.features / self.scale), 0.0

    def ledger_fields(self):
        return {"sensitivity": self.features, "scale": self.scale}


@register
class Paper(_Laplace):
    """Eq. 7: noisy counts divided by the TRUE bin count (or n'), clipped to [0, 1]. The true
    count differs between neighbours, so the Lemma's 1/lambda per feature is a claim, not a
    guarantee (docs/privacy.md)."""

    name = "paper"

    def release_counts(self, ids, n_bins, generator):
        counts = bin_sums(ids, n_bins)
        return np.clip((counts + self.noise(generator, n_bins)) / ids.shape[0], 0.0, 1.0)

    def release_errors(self, ids, n_bins, errors, generator):
        """clip((E_k + Lap) / N_k); the paper leaves an empty bin undefined: it is divided by 1, so
        its answer is clipped noise around 0."""
        noisy = bin_sums(ids, n_bins, errors) + self.noise(generator, n_bins)
        return np.clip(noisy / np.maximum(bin_sums(ids, n_bins), 1.0), 0.0, 1.0)


@register
class Counts(_Laplace):
    """Noisy counts only (bin counts once, error counts per query); every ratio is computed by
    the learner from released numbers, so the Laplace mechanism's guarantee holds as stated."""

    name = "counts"
    uses_counts = True

    def release_counts(self, ids, n_bins, generator):
        return bin_sums(ids, n_bins) + self.noise(generator, n_bins)

    def release_errors(self, ids, n_bins, errors, generator):
        return bin_sums(ids, n_bins, errors) + self.noise(generator, n_bins)

    def bin_masses(self, released, bins_per_feature):
        """Released counts normalised per feature (negative counts read as 0)."""
        positive = np.maximum(released, 0.0)
        totals = [part.sum() for part in np.split(positive, np.cumsum(bins_per_feature)[:-1])]
        return positive / np.maximum(np.repeat(totals, bins_per_feature), 1.0)

    def error_rates(self, released, counts=None):
        return np.clip(released / np.maximum(counts, 1.0), 0.0, 1.0)
