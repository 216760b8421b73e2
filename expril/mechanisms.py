"""The curator's privacy mechanisms: one class each, in a registry (`MECHANISMS`).

A mechanism is the privacy plan of one run (dataset, eps, delta). It owns its neighbour relation,
its noise calibrated from (eps, delta), its releases, the cost of one query and the composition
of a run's queries. The oracle's histogram mechanisms (`Histogram`: ExPriL's bin counts query and
error queries, read by the learner as post-processing) sit beside DP-SGD (`DPSGD`: the curator
trains a network and releases it), the Gaussian releases of mean embeddings in random features
(`MeanEmbedding`: ExPriL's Pb. 1 by MMD; `DPMERF`) and marginal-based synthetic data (`AIM`,
`MST`). Recording is kept apart: `expril.ledger` asks the mechanism for costs and writes the rows.

Rules receive a mechanism as one param, `Mechanism.param()`, a plain dict; the steps rebuild the
object with `from_param`. A new mechanism is one subclass decorated with `@register`.
"""
import inspect
import logging
import math
from abc import ABC, abstractmethod
from functools import cached_property

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
    cls = get(param["name"])
    return cls(**{key: param[key] for key in inspect.signature(cls).parameters})


class Mechanism(ABC):
    """A run's privacy plan: constructor arguments are its settings, kept as attributes of the
    same names, so that `param()` and `from_param` round-trip."""
    name: str
    neighbours: str

    def __init__(self, eps, delta):
        if not eps > 0:
            raise ValueError(f"epsilon must be positive, got {eps}")
        if not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {delta}")
        self.eps, self.delta = float(eps), float(delta)

    def param(self):
        return {"name": self.name, **{key: getattr(self, key) for key in inspect.signature(type(self)).parameters}}

    @property
    @abstractmethod
    def planned_queries(self):
        """Queries of one run; the ledger refuses one more."""

    @abstractmethod
    def query_cost(self, query=None):
        """(eps, delta) of one query under `neighbours`; `query` names it where a mechanism's
        queries differ (COUNTS_QUERY or an error query of a Histogram)."""

    def compose(self, costs):
        """(eps, delta) of a run's queries together; basic composition, exact for pure eps."""
        return sum(e for e, _ in costs), sum(d for _, d in costs)

    def ledger_fields(self, query=None):
        """What the ledger records about this mechanism's noise for `query`, beside the cost."""
        return {}


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
        self.scale = settings.noise_scale(self.features, self.iterations, self.eps)

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
    def noise_key(self):
        """Keys the noise stream (oracle.noise_generator) with the run's eps: the paper's lambda,
        so that another eps draws fresh noise."""
        return self.scale

    @classmethod
    def at_scale(cls, scale, features=1):
        """The mechanism at a given noise scale, for audits and tests (runs derive it from eps)."""
        mechanism = cls(1.0, 0.0, features, 0, False)
        mechanism.scale = float(scale)
        return mechanism

    def noise(self, generator, size):
        return generator.laplace(0.0, self.scale, size) if self.scale > 0 else np.zeros(size)

    def query_cost(self, query=None):
        return (math.inf if self.scale == 0 else self.features / self.scale), 0.0

    def ledger_fields(self, query=None):
        return {"sensitivity": self.features, "scale": self.scale}


def noisy_rate(errors, counts, noise):
    """Eq. 7: clip((E_k + noise) / N_k, 0, 1), an empty bin divided by 1."""
    return np.clip((errors + noise) / np.maximum(counts, 1.0), 0.0, 1.0)


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
        theta = generator.beta(np.where(fallback, 1.0, sigma * wrong),
                               np.where(fallback, 1.0, sigma * (total - wrong)))
        laplace = noisy_rate(wrong, total, generator.laplace(0.0, 1.0 / self.bin_eps, n_bins))
        drawn = sigma[~fallback]
        log.info("dirichlet: %d of %d bins fell back to Laplace (per bin eps %.4g, delta %.3g); sigma %s",
                 fallback.sum(), n_bins, self.bin_eps, self.bin_delta,
                 f"min {drawn.min():.4g}, median {np.median(drawn):.4g}" if drawn.size else "none")
        return np.where(fallback, laplace, theta)

    def query_cost(self, query=None):
        return self.marginals.query_cost(query) if query == COUNTS_QUERY else (self.query_eps, self.query_delta)

    def ledger_fields(self, query=None):
        """The counts query's Laplace noise; an error query's is per bin and data-dependent (its
        sigmas are in the oracle's log)."""
        return self.marginals.ledger_fields(query) if query == COUNTS_QUERY else {}


# Rényi orders the DP-SGD accountant adds to Opacus's defaults (1.1 to 63): eps converts from
# Rényi DP at a cost of at least ln(1/delta) / (alpha - 1), so with orders up to 63 and
# delta = 1e-5 no eps below 0.19 could be reached; up to 512, eps down to 0.023.
LARGE_ALPHAS = (80, 96, 128, 192, 256, 384, 512)


@register
class DPSGD(Mechanism):
    """DP-SGD (Abadi et al. 2016) as Opacus runs it: Poisson sampling at `sample_rate`, every
    sample's gradient clipped to L2 norm `max_grad_norm`, Gaussian noise of std noise_multiplier x
    max_grad_norm added to each step's sum, for `epochs` x int(1 / sample_rate) steps (Opacus's
    sampler draws that many batches per epoch); one release, the trained model. The noise
    multiplier is the smallest Opacus's calibration finds for (eps, delta) with its Rényi DP
    accountant; eps = inf trains without noise or clipping."""

    name = "dpsgd"
    neighbours = RECORD
    planned_queries = 1

    def __init__(self, eps, delta, sample_rate, epochs, max_grad_norm):
        super().__init__(eps, delta)
        if math.isfinite(self.eps) and self.delta == 0:
            raise ValueError("DP-SGD's guarantee needs delta > 0")
        if not 0 < sample_rate <= 1:
            raise ValueError(f"sample rate must be in (0, 1], got {sample_rate}")
        self.sample_rate, self.epochs, self.max_grad_norm = float(sample_rate), int(epochs), float(max_grad_norm)

    @property
    def private(self):
        return math.isfinite(self.eps)

    @property
    def steps(self):
        return self.epochs * int(1 / self.sample_rate)

    @cached_property
    def noise_multiplier(self):
        """Opacus's calibration, to 1 % of eps below it (0: no noise at eps = inf)."""
        if not self.private:
            return 0.0
        from opacus.accountants.utils import get_noise_multiplier
        return get_noise_multiplier(target_epsilon=self.eps, target_delta=self.delta, sample_rate=self.sample_rate,
                                    steps=self.steps, accountant="rdp", epsilon_tolerance=0.01 * self.eps,
                                    alphas=self.alphas())

    @staticmethod
    def alphas():
        from opacus.accountants import RDPAccountant
        return RDPAccountant.DEFAULT_ALPHAS + list(LARGE_ALPHAS)

    def spent(self, accountant):
        """eps an Opacus RDP accountant has spent at this plan's delta (and its orders)."""
        return accountant.get_epsilon(self.delta, alphas=self.alphas())

    def query_cost(self, query=None):
        """The accountant's eps for the noise multiplier, sample rate and steps of the plan."""
        if not self.private:
            return math.inf, 0.0
        from opacus.accountants import RDPAccountant
        accountant = RDPAccountant()
        accountant.history = [(self.noise_multiplier, self.sample_rate, self.steps)]
        return self.spent(accountant), self.delta

    def ledger_fields(self, query=None):
        if not self.private:
            return {"sensitivity": math.inf, "scale": 0.0}
        return {"sensitivity": self.max_grad_norm, "scale": self.noise_multiplier * self.max_grad_norm}


def gaussian_noise_std(eps, delta, sensitivity):
    """Std of the Gaussian noise that makes a release of L2 `sensitivity` (eps, delta)-DP, from
    OpenDP's accountant: the Gaussian mechanism's zero-concentrated DP, converted to (eps, delta)
    by OpenDP's conversion, the smallest std meeting (eps, delta) by its binary search; 0 at
    eps = inf. About 8 % above the analytic Gaussian mechanism's (Balle and Wang 2018) at
    eps = 1, delta = 1e-5: the conversion is tight for zCDP, not for the Gaussian itself."""
    if math.isinf(eps):
        return 0.0
    import opendp.prelude as dp
    dp.enable_features("contrib")
    domain, metric = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)

    def gaussian(std):
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(domain, metric, std)), delta)

    return dp.binary_search_param(gaussian, d_in=float(sensitivity), d_out=(eps, delta))


class _Gaussian(Mechanism):
    """Gaussian noise on a sum of unit-norm per-record vectors divided by the configured n'
    (public): adding or removing one record moves it by 1/n' in L2, its sensitivity."""

    neighbours = RECORD

    def __init__(self, eps, delta, n_val):
        super().__init__(eps, delta)
        if math.isfinite(self.eps) and self.delta == 0:
            raise ValueError(f"{self.name}: the Gaussian mechanism needs delta > 0")
        self.n_val = int(n_val)

    @property
    def sensitivity(self):
        return 1.0 / self.n_val

    @property
    @abstractmethod
    def query_eps(self):
        """The eps this release spends (its delta is the run's)."""

    @cached_property
    def noise_std(self):
        return gaussian_noise_std(self.query_eps, self.delta, self.sensitivity)

    def release(self, exact, generator):
        return exact + generator.normal(0.0, self.noise_std, exact.shape) if self.noise_std > 0 else exact

    def query_cost(self, query=None):
        return (self.query_eps, self.delta) if math.isfinite(self.query_eps) else (math.inf, 0.0)

    def ledger_fields(self, query=None):
        return {"sensitivity": self.sensitivity, "scale": self.noise_std}

    @property
    def noise_key(self):
        return self.noise_std


@register
class MeanEmbedding(_Gaussian):
    """ExPriL's Pb. 1 query in its runs by MMD (`C-mmd`, `I-mmd`): the target's features' mean
    embedding in random features (rff.mean_embedding) in place of the bin counts query, with the
    share of eps that query has, eps / (T+1) (Eq. 14), and the run's delta: with the T Laplace
    error queries the run is (eps, delta)-DP by basic composition."""

    name = "rff-embedding"

    def __init__(self, eps, delta, n_val, iterations):
        super().__init__(eps, delta, n_val)
        self.iterations = int(iterations)

    @property
    def query_eps(self):
        return self.eps / (self.iterations + 1)

    @property
    def planned_queries(self):
        return self.iterations + 1


@register
class DPMERF(_Gaussian):
    """DP-MERF's one release, the class-conditional embedding of dpmerf.embedding, with all of
    the run's (eps, delta)."""

    name = "dp-merf"
    planned_queries = 1

    @property
    def query_eps(self):
        return self.eps


class _MarginalSynthesis(Mechanism):
    """One release of records synthesised by OpenDP's `opendp.extras.mbi` (expril.aim) in pure DP,
    with the run's eps, which OpenDP splits between its measurements and accounts for; the step
    checks the library's account against it. eps = inf: the exact marginals, no noise."""

    neighbours = RECORD
    planned_queries = 1

    def query_cost(self, query=None):
        return self.eps, 0.0


@register
class AIM(_MarginalSynthesis):
    name = "aim"


@register
class MST(_MarginalSynthesis):
    name = "mst"
