"""DP-SGD's privacy plan; the training that spends it is expril.rivals.dpsgd."""

import math
from functools import cached_property

from expril.privacy import calibration
from expril.privacy.base import RECORD, Mechanism, register


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
    needs_delta = True

    def __init__(self, eps, delta, sample_rate, epochs, max_grad_norm):
        super().__init__(eps, delta)
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
        return calibration.dpsgd_noise_multiplier(self.eps, self.delta, self.sample_rate, self.steps)

    def spent(self, steps):
        """The eps Opacus's RDP accountant gives `steps` steps at this plan's noise and rate."""
        return calibration.dpsgd_epsilon(self.noise_multiplier, self.sample_rate, steps, self.delta)

    def query_cost(self, query=None):
        """The accountant's eps for the noise multiplier, sample rate and steps of the plan."""
        if not self.private:
            return math.inf, 0.0
        return self.spent(self.steps), self.delta

    def ledger_fields(self, query=None):
        if not self.private:
            return {"sensitivity": math.inf, "scale": 0.0}
        return {"sensitivity": self.max_grad_norm, "scale": self.noise_multiplier * self.max_grad_norm}
