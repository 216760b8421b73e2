"""The oracle's privacy mechanisms: one class each, in a registry (`MECHANISMS`).

A mechanism is the privacy plan of one run (dataset, eps, delta). It owns its neighbour relation,
its noise calibrated from (eps, delta), the oracle's two releases (the bin counts query and the
error query on a submitted hypothesis), the learner's reading of them (post-processing, free),
the cost of one query and the composition of a run's queries. Recording is kept apart:
`expril.ledger` asks the mechanism for costs and writes the rows.

Rules receive a mechanism as one param, `Mechanism.param()`, a plain dict; the steps rebuild the
object with `from_param`. A new mechanism is one subclass decorated with `@register`.
"""
import logging
import math
from abc import ABC, abstractmethod

import numpy as np
from scipy import special

from . import settings
from .binning import bin_sums

RECORD = "add/remove one record"
LABEL = "change one label"
# The bin counts query's name in the ledger and in its noise stream; other queries are error queries.
COUNTS_QUERY = "marginals"

log = logging.getLogger("expril")

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
    def query_cost(self, query):
        """(eps, delta) of one query (COUNTS_QUERY or an error query) under `neighbours`."""

    def compose(self, costs):
        """(eps, delta) of a run's queries together; basic composition, exact for pure eps."""
        return sum(e for e, _ in costs), sum(d for _, d in costs)

    def ledger_fields(self, query):
        """What the ledger records about this mechanism's noise for `query`, beside the cost."""
        return {}

    @property
    def noise_key(self):
        """Keys the noise stream (oracle.noise_generator) with the run's eps: the paper's lambda,
        so that another eps draws fresh noise."""
        return settings.noise_scale(self.features, self.iterations, self.eps)


def noisy_rate(errors, counts, noise):
    """Eq. 7: clip((E_k + noise) / N_k, 0, 1), an empty bin divided by 1."""
    return np.clip((errors + noise) / np.maximum(counts, 1.0), 0.0, 1.0)


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

    def query_cost(self, query):
        return (math.inf if self.scale == 0 else self.features / self.scale), 0.0

    def ledger_fields(self, query):
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
        return noisy_rate(bin_sums(ids, n_bins, errors), bin_sums(ids, n_bins), self.noise(generator, n_bins))


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


# --- Dirichlet mechanism (Iyer, Nath, Sarawagi, KDD 2016, Section 3), two classes per set -----

# Section 3's line search over sigma: 8 points per decade, then bisection between the largest
# point meeting the target and the next. The answer's variance is rho (1 - rho) / (sigma N + 1):
# from answers at 0 or 1 (sigma 1e-6) to those of a bin 1e4 times as large.
SIGMA_GRID = np.geomspace(1e-6, 1e4, 81)
BISECTIONS = 30
# exp(-709) is the smallest positive double: a tail beyond it rounds to 0, not to its value.
_LOG_TINY = math.log(np.finfo(float).tiny)


def _delta_one_way(sigma, eps, a, b):
    """Eq. 9 for one label change: theta ~ Beta(sigma a, sigma b) is the fraction of class i, one
    of its a records moves to class j; P[theta not in Theta_ij] = P[theta / (1 - theta) >
    (Lambda_ij e^eps)^(1/sigma)]. a, b >= 2."""
    log_lambda = (special.gammaln(sigma * a) - special.gammaln(sigma * (a - 1))
                  + special.gammaln(sigma * b) - special.gammaln(sigma * (b + 1)))
    log_c = (log_lambda + eps) / sigma
    # The tail is taken on the side of 1/2 where it is small, so that rounding does not swallow it.
    upper = special.betainc(sigma * b, sigma * a, special.expit(-log_c))     # P[1 - theta < 1/(1+c)]
    lower = special.betaincc(sigma * a, sigma * b, special.expit(log_c))     # P[theta > c/(1+c)]
    tail = np.where(log_c > 0, upper, lower)
    # Where the threshold underflows the tail cannot be computed: counted as missing the target.
    return np.where(-log_c < _LOG_TINY, 1.0, tail)


def dirichlet_delta(sigma, eps, errors, correct):
    """The delta of Beta(sigma E, sigma (N - E)) at eps over both label changes (Eq. 9, exact
    via the Beta distribution). A count below 2 has a neighbour with a zero count, whose Dirichlet
    is a point mass at 0 or 1: delta = 1."""
    errors, correct = np.asarray(errors, dtype=float), np.asarray(correct, dtype=float)
    small = np.minimum(errors, correct) < 2
    e, c = np.where(small, 2.0, errors), np.where(small, 2.0, correct)   # placeholders, not used
    delta = np.maximum(_delta_one_way(sigma, eps, e, c), _delta_one_way(sigma, eps, c, e))
    return np.where(small, 1.0, delta)


def search_sigma(eps, delta, errors, correct):
    """Per set, the largest sigma with dirichlet_delta(sigma) <= delta at eps (Section 3's line
    search); nan where no sigma meets it (a count too small, or delta = 0)."""
    errors, correct = np.asarray(errors, dtype=float)[:, None], np.asarray(correct, dtype=float)[:, None]
    meets = (delta > 0) & (dirichlet_delta(SIGMA_GRID, eps, errors, correct) <= delta)
    top = SIGMA_GRID.size - 1 - np.argmax(meets[:, ::-1], axis=1)
    low, high = SIGMA_GRID[top], SIGMA_GRID[np.minimum(top + 1, SIGMA_GRID.size - 1)]
    for _ in range(BISECTIONS):
        mid = np.sqrt(low * high)
        good = dirichlet_delta(mid, eps, errors[:, 0], correct[:, 0]) <= delta
        low, high = np.where(good, mid, low), np.where(good, high, mid)
    return np.where(meets.any(axis=1), low, np.nan)


@register
class Dirichlet(Mechanism):
    """Label privacy for the error query: per bin, the error fraction is drawn from
    Beta(sigma E_k, sigma (N_k - E_k)), sigma the largest meeting the bin's (eps, delta) share
    (Section 3). A bin for which no sigma does falls back to Eq. 7's Laplace release at the same
    eps. The bin counts query, on features only, is `paper`'s. sigma and the fallback depend on
    the counts, so the (eps, delta) is the paper's claim, not a guarantee (docs/privacy.md)."""

    name = "dirichlet"
    neighbours = LABEL

    def __init__(self, *args):
        super().__init__(*args)
        self.marginals = Paper(*args)
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
        theta = generator.beta(np.where(fallback, 1.0, sigma * wrong),
                               np.where(fallback, 1.0, sigma * (total - wrong)))
        laplace = noisy_rate(wrong, total, generator.laplace(0.0, 1.0 / self.bin_eps, n_bins))
        drawn = sigma[~fallback]
        log.info("dirichlet: %d of %d bins fell back to Laplace (per bin eps %.4g, delta %.3g); sigma %s",
                 fallback.sum(), n_bins, self.bin_eps, self.bin_delta,
                 f"min {drawn.min():.4g}, median {np.median(drawn):.4g}" if drawn.size else "none")
        return np.where(fallback, laplace, theta)

    def query_cost(self, query):
        return self.marginals.query_cost(query) if query == COUNTS_QUERY else (self.query_eps, self.query_delta)

    def ledger_fields(self, query):
        """The counts query's Laplace noise; an error query's is per bin and data-dependent (its
        sigmas are in the oracle's log)."""
        return self.marginals.ledger_fields(query) if query == COUNTS_QUERY else {}
