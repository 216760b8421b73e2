"""Gaussian releases of mean embeddings in random features: ExPriL's Pb. 1 by MMD and DP-MERF."""

import math
from abc import abstractmethod
from functools import cached_property

from expril.privacy import calibration, noise
from expril.privacy.base import RECORD, Mechanism, register
from expril.privacy.zcdp import ZCDP


class Gaussian(Mechanism):
    """Gaussian noise on a sum of unit-norm per-record vectors divided by the configured n'
    (public): adding or removing one record moves it by 1/n' in L2, its sensitivity."""

    neighbours = RECORD
    needs_delta = True

    def __init__(self, eps, delta, n_val):
        super().__init__(eps, delta)
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
        return calibration.gaussian_noise_std(self.query_eps, self.delta, self.sensitivity)

    def release(self, exact, generator):
        return noise.gaussian(exact, generator, self.noise_std)

    def query_cost(self, query=None):
        return (self.query_eps, self.delta) if math.isfinite(self.query_eps) else (math.inf, 0.0)

    def ledger_fields(self, query=None):
        return {"sensitivity": self.sensitivity, "scale": self.noise_std}

    @property
    def stream_scale(self):
        return self.noise_std


@register
class MeanEmbedding(Gaussian):
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
class ZCDPEmbedding(ZCDP, MeanEmbedding):
    """Pb. 1's embedding query of a run by MMD whose error queries are `gaussian-counts`: the same
    release as `rff-embedding`, its noise sized in zCDP (expril.privacy.zcdp) with the share of the
    run's rho every query of the run gets, rho / (T+1), that of the bin counts query it replaces.
    Its rho joins the error queries' in the ledger, and the run's (eps, delta) is their sum
    converted once: the embedding's delta does not add to theirs (as `rff-embedding`'s would, by
    basic composition)."""

    name = "zcdp-embedding"

    @cached_property
    def noise_std(self):
        return calibration.zcdp_std(self.rho_share, self.sensitivity)

    @cached_property
    def rho(self):
        """The query's rho, as OpenDP's privacy map states it for the noise drawn."""
        return calibration.gaussian_rho(self.noise_std, self.sensitivity)

    @property
    def query_eps(self):
        return self.query_cost()[0]


@register
class DPMERF(Gaussian):
    """DP-MERF's one release, the class-conditional embedding of dpmerf.embedding, with all of
    the run's (eps, delta)."""

    name = "dp-merf"
    planned_queries = 1

    @property
    def query_eps(self):
        return self.eps
