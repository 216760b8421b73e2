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

# ExPriL's bin counts query's name in the ledger and in its noise stream; other queries are error
# queries, but those a plan names as bin counts queries of its own (Histogram's `counts_queries`).
COUNTS_QUERY = "marginals"


class Histogram(Mechanism):
    """The oracle's answers on the learner's bins (ExPriL): the bin counts query and error queries
    on submitted hypotheses, with Laplace noise of scale lambda = d (T+1) / eps (Eq. 14) on
    histograms of sensitivity 1 per feature; lambda = 0 (eps = inf) gives exact answers.

    `split` (a tuning axis, config/tuning.yaml) is the share of eps the bin counts query spends,
    the T error queries sharing the rest equally: lambda_counts = d / (split eps), lambda_errors =
    d T / ((1 - split) eps), so that the run still spends exactly eps. None (as configured) is
    Eq. 14's equal shares, 1 / (T+1) each, computed as Eq. 14 computes it. `counts_queries`: the
    names of a plug-in method's queries that are its bin counts query (its plan names them), beside
    ExPriL's COUNTS_QUERY."""

    neighbours = RECORD
    # The learner divides released error counts by released bin counts: every run then asks the
    # bin counts first, and the error queries use the same bins.
    uses_counts = False

    def __init__(self, eps, delta, features, iterations, importance_sampling, split=None, counts_queries=()):
        super().__init__(eps, delta)
        self.features, self.iterations = int(features), int(iterations)
        self.importance_sampling = bool(importance_sampling)
        if split is not None and not (0 < float(split) < 1 and self.iterations >= 1):
            raise ValueError(
                f"{self.name}: split is the counts query's share of eps, in (0, 1), for a plan of at "
                f"least one error query; got {split} with T = {self.iterations}"
            )
        self.split = None if split is None else float(split)
        self.counts_queries = tuple(counts_queries)

    def param(self):
        """As configured (equal shares) the plan's param has no `split`, and ExPriL's no
        `counts_queries`, as before they existed."""
        param = super().param()
        for key, default in (("split", None), ("counts_queries", ())):
            if key in param and param[key] == default:
                del param[key]
        return param

    def is_counts_query(self, query):
        """Whether `query` names a bin counts query (COUNTS_QUERY or one of `counts_queries`); any
        other query is an error query."""
        return query == COUNTS_QUERY or query in self.counts_queries

    def share(self, query):
        """The share of the run's budget `query` gets (the split's), None for Eq. 14's equal shares."""
        if self.split is None:
            return None
        return self.split if self.is_counts_query(query) else (1 - self.split) / self.iterations

    @cached_property
    def scale(self):
        """The error queries' noise scale, Laplace's lambda = d (T+1) / eps as configured (d T /
        ((1 - split) eps) with a split); 0 means no noise."""
        if self.split is None:
            return calibration.laplace_scale(self.features, self.iterations, self.eps)
        return calibration.laplace_scale(self.features, 0, self.share("errors") * self.eps)

    @cached_property
    def counts_scale(self):
        """The bin counts query's noise scale: `scale` as configured, d / (split eps) with a split."""
        if self.split is None:
            return self.scale
        return calibration.laplace_scale(self.features, 0, self.split * self.eps)

    def query_scale(self, query):
        """The noise scale of `query` (the bin counts query's or an error query's)."""
        return self.counts_scale if self.is_counts_query(query) else self.scale

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

    @classmethod
    def bins_std(cls, eps, delta, features, iterations):
        """The noise std of one released count that a run's bins are sized for
        (settings.bins_per_feature), at an equal share of the budget whatever the split; None: the
        paper's rule, Laplace's sqrt(2) lambda with Eq. 14's lambda (Section 4.2)."""
        return None

    def planned_costs(self):
        """The bin counts query's cost where the run asks it, then the T error queries'."""
        counts = [self.cost(COUNTS_QUERY)] * (self.planned_queries - self.iterations)
        return counts + [self.cost()] * self.iterations

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

    def query_stream_scale(self, query):
        """Keys `query`'s noise stream: `stream_scale` as configured, the query's own scale with a
        split, so that another split draws fresh noise."""
        return self.stream_scale if self.split is None else self.query_scale(query)

    @classmethod
    def at_scale(cls, scale, features=1):
        """The mechanism at a given noise scale, for audits and tests (runs derive it from eps)."""
        mechanism = cls(1.0, 0.0, features, 0, False)
        mechanism.scale = float(scale)
        return mechanism

    def noise(self, generator, size, query=None):
        """`size` draws of `query`'s noise (an error query's by default)."""
        return noise.laplace(generator, self.query_scale(query), size)

    @property
    def sensitivity(self):
        """A query's L1 sensitivity: d histograms, one count of each moved by 1."""
        return self.features

    def query_cost(self, query=None):
        scale = self.query_scale(query)
        return (math.inf if scale == 0 else self.sensitivity / scale), 0.0

    def ledger_fields(self, query=None):
        return {"sensitivity": self.sensitivity, "scale": self.query_scale(query)}


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
        return np.clip((counts + self.noise(generator, n_bins, COUNTS_QUERY)) / ids.shape[0], 0.0, 1.0)

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

    @classmethod
    def exact_release(cls):
        """The exact counts: gaussian-counts' too."""
        return "counts"

    def release_counts(self, ids, n_bins, generator):
        return bin_sums(ids, n_bins) + self.noise(generator, n_bins, COUNTS_QUERY)

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
    added or removed: L2 sensitivity sqrt(d). Each query gets an equal share of the run's rho (or,
    with a `split`, that share to the bin counts query and the rest equally to the error queries),
    with std sqrt(d) / sqrt(2 rho_q); no noise at eps = inf.

    zCDP composes by adding rho, tighter than adding each query's (eps, delta): the run's total
    is its queries' rho summed and converted once (`compose`), NOT the sum of the per-query
    eps_spent and delta_spent the ledger shows, which are each query's own (eps, delta) at the
    run's delta."""

    name = "gaussian-counts"

    @property
    def sensitivity(self):
        """L2: one count of each of the d histograms moved by 1."""
        return math.sqrt(self.features)

    @classmethod
    def bins_std(cls, eps, delta, features, iterations):
        """The Gaussian's std on one count at an equal share of the run's rho (the noise it draws as
        configured): the bins follow the noise drawn, not Laplace's (docs/comparison.md, "Bins");
        0 at eps = inf."""
        return cls(eps, delta, features, iterations, importance_sampling=True).scale

    def _std(self, query):
        """`query`'s noise std: rho_share as configured, its split's share of the run's rho with one."""
        share = None if self.split is None else self.share(query)
        return calibration.zcdp_std(self.rho_portion(share), self.sensitivity)

    @cached_property
    def scale(self):
        """The error queries' noise std."""
        return self._std("errors")

    @cached_property
    def counts_scale(self):
        """The bin counts query's noise std: `scale` as configured, its split's share with one."""
        return self.scale if self.split is None else self._std(COUNTS_QUERY)

    @cached_property
    def rho(self):
        """An error query's rho, as OpenDP's privacy map states it for the noise drawn."""
        return calibration.gaussian_rho(self.scale, self.sensitivity)

    def query_rho(self, query=None):
        return calibration.gaussian_rho(self.query_scale(query), self.sensitivity)

    def noise(self, generator, size, query=None):
        return noise.gaussian(np.zeros(size), generator, self.query_scale(query))
