"""The interface every privacy mechanism implements, and the registry it joins.

A mechanism is the privacy plan of one run (dataset, eps, delta). It owns its neighbour relation,
its noise calibrated from (eps, delta) (expril.privacy.calibration), its releases, the cost of one
query and the composition of a run's queries. Recording is kept apart: expril.privacy.ledger asks
the mechanism for costs and writes the rows. A new mechanism is one subclass decorated with
`@register`: ExPriL's own in a module that expril.privacy.mechanisms imports, a compared method's
in a module its plug-in imports or in the plug-in's module itself (docs/extending.md), which every
process that plans or runs the method imports first (expril.plugins.registry) and whose code
digest covers it.
"""

import inspect
import math
from abc import ABC, abstractmethod

RECORD = "add/remove one record"
LABEL = "change one label"

MECHANISMS = {}


def register(cls):
    MECHANISMS[cls.name] = cls
    return cls


class Mechanism(ABC):
    """A run's privacy plan: constructor arguments are its settings, kept as attributes of the
    same names, so that `param()` and `from_param` round-trip."""

    name: str
    neighbours: str
    # Whether its noise is drawn from the oracle's keyed streams (expril.privacy.noise).
    keyed_noise = True
    # Gaussian noise has no pure-eps guarantee: at a finite eps it needs delta > 0.
    needs_delta = False

    @classmethod
    def exact_release(cls):
        """What it releases at eps = inf, where it adds no noise (by default: its own name).
        Mechanisms with the same release there write the same files, so the currencies that name
        them share their eps = inf runs (expril.workflow.currency.home)."""
        return cls.name

    def __init__(self, eps, delta):
        if not eps > 0:
            raise ValueError(f"epsilon must be positive, got {eps}")
        if not 0 <= delta < 1:
            raise ValueError(f"delta must be in [0, 1), got {delta}")
        if self.needs_delta and math.isfinite(eps) and delta == 0:
            raise ValueError(f"{self.name}: the Gaussian mechanism needs delta > 0")
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
        """(eps, delta) of a run's queries together, from each query's (eps, delta, rho) (rho its
        zCDP cost, nan where it has none; `query_cost`'s pair alone is enough here): basic
        composition, exact for pure eps."""
        return sum(e for e, *_ in costs), sum(d for _, d, *_ in costs)

    def planned_costs(self):
        """(eps, delta, rho) of each planned query (`cost`), the plan's spend as `compose` takes it:
        all alike unless a mechanism's queries differ."""
        return [self.cost()] * self.planned_queries

    def cost(self, query=None):
        """(eps, delta, rho) of one query, as `compose` takes it and the ledger records it."""
        return *self.query_cost(query), self.ledger_fields(query).get("rho", math.nan)

    def ledger_fields(self, query=None):
        """What the ledger records about this mechanism's noise for `query`, beside the cost."""
        return {}
