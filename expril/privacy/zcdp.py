"""Accounting in zero-concentrated DP (Bun and Steinke 2016), shared by the mechanisms that spend a
run's (eps, delta) as rho: `gaussian-counts` (a histogram oracle's counts), `zcdp-embedding` (an
embedding query beside them) and the marginal-synthesis releases in OpenDP's native zCDP
(expril.privacy.synthesis).

The run's (eps, delta) becomes a total rho, the largest whose conversion back at delta gives at
most eps (calibration.zcdp_budget, OpenDP's), split equally over the run's planned queries. zCDP
composes by adding rho, for adaptively chosen queries too, so a run's queries, whichever of these
mechanisms asked them, compose by summing their rho and converting the sum once (`compose`)."""

import math
from functools import cached_property

from expril.privacy import calibration


class ZCDP:
    """A mixin before a Mechanism subclass: the run's rho split over its planned queries
    (`rho_share`), each query's cost its rho (`rho`, which the subclass states) converted at the
    run's delta, and the composition of a run's queries in rho. No pure-eps guarantee: a finite eps
    needs delta > 0."""

    needs_delta = True
    # The share of rho each query gets is this much below rho / Q, so that the rounding of the
    # float arithmetic (OpenDP's maps round up) never lifts Q queries above the run's eps.
    ROUNDING = 1e-12

    def rho_portion(self, share=None):
        """`share` of the run's rho (by default an equal share, zcdp_budget(eps, delta) /
        planned_queries), a relative ROUNDING below; inf at eps = inf (no noise)."""
        budget = calibration.zcdp_budget(self.eps, self.delta)
        return (budget / self.planned_queries if share is None else budget * share) * (1 - self.ROUNDING)

    @cached_property
    def rho_share(self):
        """One query's equal share of the run's rho."""
        return self.rho_portion()

    def query_rho(self, query=None):
        """`query`'s rho: `rho` for every query, unless the subclass sizes its queries apart."""
        return self.rho

    def query_cost(self, query=None):
        """One query's own (eps, delta): its rho converted at the run's delta."""
        return calibration.zcdp_epsilon(self.query_rho(query), self.delta)

    def compose(self, costs):
        """The rho of the run's zCDP queries added up and converted once to (eps, delta); a query
        without rho (a pure or approximate DP mechanism's in the same chain) adds its (eps, delta)
        by basic composition."""
        rhos = [rho for *_, rho in costs if not math.isnan(rho)]
        others = [(e, d) for e, d, rho in costs if math.isnan(rho)]
        zcdp = calibration.zcdp_epsilon(sum(rhos), self.delta) if rhos else (0.0, 0.0)
        return super().compose([zcdp, *others])

    def ledger_fields(self, query=None):
        return super().ledger_fields(query) | {"rho": self.query_rho(query)}
