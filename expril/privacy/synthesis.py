"""Marginal-based synthetic data (AIM, MST from OpenDP): one release in pure DP."""

from expril.privacy.base import RECORD, Mechanism, register


class MarginalSynthesis(Mechanism):
    """One release of records synthesised by OpenDP's `opendp.extras.mbi` (expril.rivals.aim) in pure DP,
    with the run's eps, which OpenDP splits between its measurements and accounts for; the step
    checks the library's account against it. eps = inf: the exact marginals, no noise."""

    neighbours = RECORD
    planned_queries = 1
    keyed_noise = False  # OpenDP draws its measurements' noise itself

    def query_cost(self, query=None):
        return self.eps, 0.0


@register
class AIM(MarginalSynthesis):
    name = "aim"


@register
class MST(MarginalSynthesis):
    name = "mst"
