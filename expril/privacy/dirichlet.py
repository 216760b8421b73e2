"""The Dirichlet mechanism (Iyer, Nath, Sarawagi, KDD 2016, Section 3), two classes per set: label
privacy for ExPriL's error queries. Its parameter search is in expril.privacy.calibration."""

import logging
import math

import numpy as np

from expril.method.binning import bin_sums
from expril.privacy import noise
from expril.privacy.base import LABEL, register
from expril.privacy.calibration import search_sigma
from expril.privacy.histogram import COUNTS_QUERY, Histogram, Paper, noisy_rate

log = logging.getLogger("expril")


@register
class Dirichlet(Histogram):
    """Label privacy for the error query: per bin, the error fraction is drawn from
    Beta(sigma E_k, sigma (N_k - E_k)), sigma the largest meeting the bin's (eps, delta) share
    (Section 3). A bin for which no sigma does falls back to Eq. 7's Laplace release at the same
    eps. The bin counts query, on features only, is `paper`'s. sigma and the fallback depend on
    the counts, so the (eps, delta) is the paper's claim, not a guarantee (docs/privacy.md)."""

    name = "dirichlet"
    neighbours = LABEL

    def __init__(self, eps, delta, features, iterations, importance_sampling):
        super().__init__(eps, delta, features, iterations, importance_sampling)
        self.marginals = Paper(eps, delta, features, iterations, importance_sampling)
        # Each query gets Eq. 14's share eps / Q (the counts query's Laplace noise spends exactly
        # that with Q = T + 1) and each error query delta / T (none for exact answers, eps = inf);
        # one label change moves one record in one bin per feature, so a bin gets 1/d of its
        # query's (basic composition).
        self.query_eps = self.eps / self.planned_queries
        self.query_delta = 0.0 if math.isinf(self.eps) else self.delta / self.iterations
        self.bin_eps, self.bin_delta = self.query_eps / self.features, self.query_delta / self.features

    def release_counts(self, ids, n_bins, generator):
        return self.marginals.release_counts(ids, n_bins, generator)

    def release_errors(self, ids, n_bins, errors, generator):
        wrong, total = bin_sums(ids, n_bins, errors), bin_sums(ids, n_bins)
        if math.isinf(self.bin_eps):
            return wrong / np.maximum(total, 1.0)
        sigma = search_sigma(self.bin_eps, self.bin_delta, wrong, total - wrong)
        fallback = np.isnan(sigma)
        # Both draws for every bin, so the stream's layout does not depend on which bins fall back.
        theta = generator.beta(np.where(fallback, 1.0, sigma * wrong), np.where(fallback, 1.0, sigma * (total - wrong)))
        laplace = noisy_rate(wrong, total, noise.laplace(generator, 1.0 / self.bin_eps, n_bins))
        drawn = sigma[~fallback]
        log.info(
            "dirichlet: %d of %d bins fell back to Laplace (per bin eps %.4g, delta %.3g); sigma %s",
            fallback.sum(),
            n_bins,
            self.bin_eps,
            self.bin_delta,
            f"min {drawn.min():.4g}, median {np.median(drawn):.4g}" if drawn.size else "none",
        )
        return np.where(fallback, laplace, theta)

    def query_cost(self, query=None):
        return self.marginals.query_cost(query) if query == COUNTS_QUERY else (self.query_eps, self.query_delta)

    def ledger_fields(self, query=None):
        """The counts query's Laplace noise; an error query's is per bin and data-dependent (its
        sigmas are in the oracle's log)."""
        return self.marginals.ledger_fields(query) if query == COUNTS_QUERY else {}
