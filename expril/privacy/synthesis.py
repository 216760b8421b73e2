"""Marginal-based synthetic data (AIM, MST from OpenDP): one release, in pure DP (`aim`, `mst`) or
in OpenDP's native zero-concentrated DP (`aim-zcdp`, `mst-zcdp`)."""

from functools import cached_property

from expril.privacy.base import RECORD, Mechanism, register
from expril.privacy.zcdp import ZCDP


class MarginalSynthesis(Mechanism):
    """One release of records synthesised by OpenDP's `opendp.extras.mbi` (expril.rivals.aim) in pure DP,
    with the run's eps, which OpenDP splits between its measurements and accounts for; the step
    checks the library's account against it. eps = inf: the exact marginals, no noise."""

    neighbours = RECORD
    planned_queries = 1
    keyed_noise = False  # OpenDP draws its measurements' noise itself
    algorithm: str  # expril.rivals.aim.ALGORITHMS

    @property
    def budget(self):
        """(OpenDP's privacy measure, the amount the release may spend in it)."""
        return "epsilon", self.eps

    def query_cost(self, query=None):
        return self.eps, 0.0

    @classmethod
    def exact_release(cls):
        """The algorithm on the exact marginals: the same in pure DP and in zCDP."""
        return f"synthesis of {cls.algorithm}"


class ZCDPSynthesis(ZCDP, MarginalSynthesis):
    """The same release in OpenDP's zero-concentrated DP (Gaussian measurements): the rho of the
    run's (eps, delta) (expril.privacy.zcdp), all of it to the one release; OpenDP splits it between
    its measurements and accounts for it."""

    @cached_property
    def rho(self):
        return self.rho_share

    @property
    def budget(self):
        return "rho", self.rho


@register
class AIM(MarginalSynthesis):
    name, algorithm = "aim", "aim"


@register
class MST(MarginalSynthesis):
    name, algorithm = "mst", "mst"


@register
class AIMzCDP(ZCDPSynthesis):
    name, algorithm = "aim-zcdp", "aim"


@register
class MSTzCDP(ZCDPSynthesis):
    name, algorithm = "mst-zcdp", "mst"
