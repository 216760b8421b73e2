"""The bins follow the noise drawn (docs/comparison.md, "Bins for the noise drawn"): the paper's rule
n'/(q std) ~ snr with Laplace's std sqrt(2) lambda for the Laplace mechanisms, and with the
Gaussian's std for `gaussian-counts`, checked from first principles on CTG (issue 49's figures)."""

import math

import numpy as np
import pytest

from expril import settings
from expril.privacy import mechanisms

CTG = {"n_val": 700, "dim": 21}  # CTG-A/B as identified: 700 validation records, 21 features
DELTA = 1e-5


def rho_from_first_principles(eps, delta):
    """The largest rho whose zCDP meets (eps, delta) by Canonne, Kamath and Steinke's conversion
    (NeurIPS 2020, Prop. 12): delta = inf over a > 1 of exp((a-1)(a rho - eps)) / (a-1) (1 - 1/a)^a;
    bisection on rho, numpy only (not OpenDP, which the mechanism uses)."""
    a = np.linspace(1.0001, 400, 400_000)

    def conversion(rho):
        with np.errstate(over="ignore"):
            return np.min(np.exp((a - 1) * (a * rho - eps)) / (a - 1) * (1 - 1 / a) ** a)

    low, high = 0.0, eps
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if conversion(mid) <= delta else (low, mid)
    return low


@pytest.mark.parametrize(
    "eps, queries, laplace_q, gaussian_q", [(1, 3, 2, 5), (10, 3, 20, 42), (1, 2, 3, 7), (10, 2, 29, 51)]
)
def test_ctg_bins_from_the_gaussians_sigma(eps, queries, laplace_q, gaussian_q):
    """ExPriL (T = 2: 3 queries) and LLP (T = 1: 2 queries) on CTG at snr 4. Laplace: lambda = 21 (T+1)
    / eps, std sqrt(2) lambda: q = 700 / (4 sqrt(2) 63) = 1.96 -> 2 at eps 1 (19.6 -> 20 at 10).
    Gaussian: sigma = sqrt(21) / sqrt(2 rho / (T+1)), rho from (eps, 1e-5): 0.0306 at eps 1 (sigma
    32.1, q 5.45 -> 5), 1.783 at eps 10 (sigma 4.20, q 41.6 -> 42)."""
    iterations = queries - 1
    sigma = math.sqrt(CTG["dim"]) / math.sqrt(2 * rho_from_first_principles(eps, DELTA) / queries)
    std = mechanisms.get("gaussian-counts").bins_std(eps, DELTA, CTG["dim"], iterations)
    assert std == pytest.approx(sigma, rel=1e-4)
    assert round(CTG["n_val"] / (4 * sigma)) == gaussian_q
    gaussian = settings.bins_per_feature(CTG["n_val"], CTG["dim"], iterations, eps, 4, "sqrt", std)
    assert gaussian == gaussian_q
    laplace_std = mechanisms.get("counts").bins_std(eps, 0, CTG["dim"], iterations)
    assert laplace_std is None  # the paper's rule
    assert settings.bins_per_feature(CTG["n_val"], CTG["dim"], iterations, eps, 4, "sqrt", laplace_std) == laplace_q


def test_the_laplace_rule_sizes_gaussian_noises_bins_as_rounds_1_and_2_did():
    """`bins: sized_for: laplace` (a study published before round 3, whose check follows it): the
    Gaussian chain's bins by the paper's Laplace std on CTG at eps 1 and 10 (2 and 20 bins, not 5
    and 42); 'drawn' gives the Gaussian's; the Laplace mechanisms' are Laplace's either way."""
    gaussian, counts = mechanisms.get("gaussian-counts"), mechanisms.get("counts")
    for eps, laplace_q, gaussian_q in ((1, 2, 5), (10, 20, 42)):
        for rule, q in (("laplace", laplace_q), ("drawn", gaussian_q)):
            std = settings.bins_std(rule, gaussian, eps, DELTA, CTG["dim"], 2)
            assert settings.bins_per_feature(CTG["n_val"], CTG["dim"], 2, eps, 4, "sqrt", std) == q
        assert settings.bins_std("drawn", counts, eps, 0, CTG["dim"], 2) is None


def test_without_noise_the_noiseless_rule_holds():
    std = mechanisms.get("gaussian-counts").bins_std(math.inf, DELTA, 21, 2)
    assert std == 0
    assert settings.bins_per_feature(700, 21, 2, math.inf, 4, "sqrt", std) == math.ceil(math.sqrt(700))
