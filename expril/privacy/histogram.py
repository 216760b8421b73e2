"""The oracle's histogram mechanisms (ExPriL): the bin counts query and error queries on the
learner's bins, answered with Laplace noise (Gaussian noise in zCDP for `gaussian-counts`); the
learner reads them as post-processing."""

import math
from abc import abstractmethod
from functools import cached_property

import numpy as np

from expril.method.binning import bin_sums
from expril.privacy import calibration, noise
from expril.privacy.base import RECORD, Mechanism, register
from expril.privacy.zcdp import ZCDP

# The bin counts query's name in the ledger and in its noise stream; other queries are error queries.
COUNTS_QUERY = "marginals"


class Histogram(Mechanism):
    """The oracle's answers on the learner's bins (ExPriL): the bin counts query and error queries
    on submitted hypotheses, with Laplace noise of scale lambda = d (T+1) / eps (Eq. 14) on
    histograms of sensitivity 1 per feature; lambda = 0 (eps = inf) gives exact answers."""

    neighbours = RECORD
    # The learner divides released error counts by released bin counts: every run then asks the
    # bin counts first, and the error queries use the same bins.
    uses_counts = False

    def __init__(self, eps, delta, features, iterations, importance_sampling):
        super().__init__(eps, delta)
        self.features, self.iterations = int(features), int(iterations)
        self.importance_sampling = bool(importance_sampling)

    @cached_property
    def scale(self):
        """The noise's scale, Laplace's lambda = d (T+1) / eps; 0 means no noise."""
        return calibration.laplace_scale(self.features, self.iterations, self.eps)

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

    @property
    def stream_scale(self):
        """Keys the noise stream (noise.stream) with the run's eps: the paper's lambda,
        so that another eps draws fresh noise."""
        return self.scale

    @classmethod
    def at_scale(cls, scale, features=1):
        """The mechanism at a given noise scale, for audits and tests (runs derive it from eps)."""
        mechanism = cls(1.0, 0.0, features, 0, False)
        mechanism.scale = float(scale)
        return mechanism

    def noise(self, generator, size):
        return noise.laplace(generator, self.scale, size)

    @property
    def sensitivity(self):
        """A query's L1 sensitivity: d histograms, one count of each moved by 1."""
        return self.features

    def query_cost(self, query=None):
        return (math.inf if self.scale == 0 else self.sensitivity / self.scale), 0.0

    def ledger_fields(self, query=None):
        return {"sensitivity": self.sensitivity, "scale": self.scale}


def noisy_rate(errors, counts, drawn):
    """Eq. 7: clip((E_k + drawn noise) / N_k, 0, 1), an empty bin divided by 1."""
    return np.clip((errors + drawn) / np.maximum(counts, 1.0), 0.0, 1.0)


@register
class Paper(Histogram):
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
        return noisy_rate(bin_sums(ids, n_bins, errors), bin_sums(ids, n_bins), self.noise(generator, n_bins))


@register
class Counts(Histogram):
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


@register
class GaussianCounts(ZCDP, Counts):
    """`counts`' releases (noisy counts only, every ratio computed by the learner) with Gaussian
    noise calibrated in zero-concentrated DP (expril.privacy.zcdp), for runs at (eps, delta) as
    DP-SGD's and DP-MERF's. One query's d histograms move by 1 in one bin each when a record is
    added or removed: L2 sensitivity sqrt(d). Each query gets an equal share of the run's rho, with
    std sqrt(d) / sqrt(2 rho_q); no noise at eps = inf.

    zCDP composes by adding rho, tighter than adding each query's (eps, delta): the run's total
    is its queries' rho summed and converted once (`compose`), NOT the sum of the per-query
    eps_spent and delta_spent the ledger shows, which are each query's own (eps, delta) at the
    run's delta."""

    name = "gaussian-counts"

    @property
    def sensitivity(self):
        """L2: one count of each of the d histograms moved by 1."""
        return math.sqrt(self.features)

    @cached_property
    def scale(self):
        """The noise's std, sqrt(d) / sqrt(2 rho_q), rho_q the query's share of the run's rho."""
        return calibration.zcdp_std(self.rho_share, self.sensitivity)

    @cached_property
    def rho(self):
        """One query's rho, as OpenDP's privacy map states it for the noise drawn."""
        return calibration.gaussian_rho(self.scale, self.sensitivity)

    def noise(self, generator, size):
        return noise.gaussian(np.zeros(size), generator, self.scale)
