"""Noise sizes: how large each mechanism's noise is for its (eps, delta), kept apart from the
mechanisms that add it (expril.privacy.noise draws it) and the ledger that records it.

- Laplace (ExPriL's histograms): lambda = d (T+1) / eps (Eq. 14), `laplace_scale`.
- Dirichlet (KDD 2016): the largest sigma meeting a bin's (eps, delta) by Eq. 9, `search_sigma`.
- Gaussian (mean embeddings): the smallest std OpenDP's accountant finds, `gaussian_noise_std`.
- Gaussian in zCDP (`gaussian-counts`): the run's rho from (eps, delta), `zcdp_budget`, split over
  its queries; a run's rho back to (eps, delta), `zcdp_epsilon`.
- DP-SGD: the smallest noise multiplier Opacus's RDP accountant finds, `dpsgd_noise_multiplier`.
"""

import functools
import importlib.metadata
import importlib.util
import math
from pathlib import Path

import numpy as np

from expril.workflow import cache


def laplace_scale(features, iterations, eps):
    """Laplace scale lambda = d (T+1) / eps (Eq. 14); 0 means no noise (eps = inf). It also sets
    the bins (settings.bins_per_feature) of every mechanism that states no std of its own
    (Histogram.bins_std), and of all of them under `bins: sized_for: laplace` (rounds 1 and 2).

    The paper budgets T+1 = 3 queries on every dataset ("the number of ExPriL queries governing the
    Laplacian noise is set to 3"), also where the IS step is skipped and only T are asked: those
    runs spend T/(T+1) of eps."""
    if eps <= 0:
        raise ValueError(f"epsilon must be positive, got {eps}")
    return 0.0 if math.isinf(eps) else features * (iterations + 1) / eps


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
    from scipy import special  # here: only the Dirichlet's jobs pay for its import

    log_lambda = (
        special.gammaln(sigma * a)
        - special.gammaln(sigma * (a - 1))
        + special.gammaln(sigma * b)
        - special.gammaln(sigma * (b + 1))
    )
    log_c = (log_lambda + eps) / sigma
    # The tail is taken on the side of 1/2 where it is small, so that rounding does not swallow it.
    upper = special.betainc(sigma * b, sigma * a, special.expit(-log_c))  # P[1 - theta < 1/(1+c)]
    lower = special.betaincc(sigma * a, sigma * b, special.expit(log_c))  # P[theta > c/(1+c)]
    tail = np.where(log_c > 0, upper, lower)
    # Where the threshold underflows the tail cannot be computed: counted as missing the target.
    return np.where(-log_c < _LOG_TINY, 1.0, tail)


def dirichlet_delta(sigma, eps, errors, correct):
    """The delta of Beta(sigma E, sigma (N - E)) at eps over both label changes (Eq. 9, exact
    via the Beta distribution). A count below 2 has a neighbour with a zero count, whose Dirichlet
    is a point mass at 0 or 1: delta = 1."""
    errors, correct = np.asarray(errors, dtype=float), np.asarray(correct, dtype=float)
    small = np.minimum(errors, correct) < 2
    e, c = np.where(small, 2.0, errors), np.where(small, 2.0, correct)  # placeholders, not used
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


# Rényi orders the DP-SGD accountant adds to Opacus's defaults (1.1 to 63): eps converts from
# Rényi DP at a cost of at least ln(1/delta) / (alpha - 1), so with orders up to 63 and
# delta = 1e-5 no eps below 0.19 could be reached; up to 512, eps down to 0.023.
LARGE_ALPHAS = (80, 96, 128, 192, 256, 384, 512)


# Opacus's RDPAccountant.DEFAULT_ALPHAS (opacus/accountants/rdp.py), and LARGE_ALPHAS.
DPSGD_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + list(LARGE_ALPHAS)


@functools.cache
def _opacus_rdp():
    """Opacus's RDP analysis of the subsampled Gaussian (opacus/accountants/analysis/rdp.py, numpy
    and scipy only), loaded as a module of its own: imported through its package it runs
    opacus/__init__, which loads Opacus's privacy engine and torch.distributed, 8 to 14 s per job
    here for two functions."""
    path = Path(importlib.util.find_spec("opacus").origin).parent / "accountants" / "analysis" / "rdp.py"
    spec = importlib.util.spec_from_file_location("opacus_rdp_analysis", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta):
    """The eps Opacus's RDP accountant (RDPAccountant.get_epsilon) gives `steps` of DP-SGD at this
    noise multiplier and sample rate, at `delta`, over DPSGD_ALPHAS."""
    rdp = _opacus_rdp()
    orders = rdp.compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=steps, orders=DPSGD_ALPHAS)
    return float(rdp.get_privacy_spent(orders=DPSGD_ALPHAS, rdp=orders, delta=delta)[0])


def dpsgd_noise_multiplier(eps, delta, sample_rate, steps, max_sigma=1e6):
    """The noise multiplier Opacus's get_noise_multiplier finds (opacus/accountants/utils.py, the
    same search on the same accountant), to 1 % of eps below it. The search costs up to 30 s at
    large sampling rates (the RDP of Opacus's fractional orders is a series), so its result,
    which depends on these public parameters and Opacus's accountant alone, is kept in expril's
    disk cache under a key that names Opacus's version."""
    key = (eps, delta, sample_rate, steps, max_sigma, DPSGD_ALPHAS, importlib.metadata.version("opacus"))
    return cache.cached_float("dpsgd_sigma", key, lambda: _search_noise_multiplier(*key[:5]))


def _search_noise_multiplier(eps, delta, sample_rate, steps, max_sigma):
    sigma_low, sigma_high, eps_high = 0.0, 10.0, math.inf
    while eps_high > eps:
        sigma_high *= 2
        eps_high = dpsgd_epsilon(sigma_high, sample_rate, steps, delta)
        if sigma_high > max_sigma:
            raise ValueError("The privacy budget is too low.")
    while eps - eps_high > 0.01 * eps:
        sigma = (sigma_low + sigma_high) / 2
        spent = dpsgd_epsilon(sigma, sample_rate, steps, delta)
        if spent < eps:
            sigma_high, eps_high = sigma, spent
        else:
            sigma_low = sigma
    return sigma_high


def _gaussian(std):
    """OpenDP's Gaussian measurement of `std` on float vectors under L2, in zero-concentrated DP."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), std)


def _approx_dp(measurement, delta):
    """`measurement`'s zCDP converted to (eps, delta) at `delta` by OpenDP's conversion."""
    import opendp.prelude as dp

    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measurement), delta)


# Cached: the workflow plans every job's privacy when it builds its DAG, a search of OpenDP's for
# each, with a handful of distinct arguments.
@functools.cache
def gaussian_noise_std(eps, delta, sensitivity):
    """Std of the Gaussian noise that makes a release of L2 `sensitivity` (eps, delta)-DP, from
    OpenDP's accountant: the Gaussian mechanism's zero-concentrated DP, converted to (eps, delta)
    by OpenDP's conversion, the smallest std meeting (eps, delta) by its binary search; 0 at
    eps = inf. About 8 % above the analytic Gaussian mechanism's (Balle and Wang 2018) at
    eps = 1, delta = 1e-5: the conversion is tight for zCDP, not for the Gaussian itself."""
    if math.isinf(eps):
        return 0.0
    import opendp.prelude as dp

    return dp.binary_search_param(
        lambda std: _approx_dp(_gaussian(std), delta), d_in=float(sensitivity), d_out=(eps, delta)
    )


def gaussian_rho(std, sensitivity):
    """The rho of Gaussian noise of `std` on a release of L2 `sensitivity`, sensitivity^2 / (2 std^2)
    as OpenDP's privacy map states it (rounded up); inf at std 0 (no noise)."""
    return math.inf if std == 0 else _gaussian(std).map(float(sensitivity))


def zcdp_std(rho, sensitivity):
    """Std of the Gaussian noise whose rho on a release of L2 `sensitivity` is `rho`:
    sensitivity / sqrt(2 rho); 0 at rho = inf (no noise)."""
    return sensitivity / math.sqrt(2 * rho)


def zcdp_budget(eps, delta):
    """The largest rho whose zCDP-to-(eps, delta) conversion (OpenDP's) at `delta` gives at most
    `eps`: the rho of the smallest Gaussian std that meets (eps, delta) at sensitivity 1
    (gaussian_noise_std's binary search); inf at eps = inf."""
    return gaussian_rho(gaussian_noise_std(eps, delta, 1.0), 1.0)


def zcdp_epsilon(rho, delta):
    """(eps, delta) of rho-zCDP by OpenDP's conversion at `delta`, read off the Gaussian of std 1
    at sensitivity sqrt(2 rho), which is exactly rho-zCDP; (inf, 0) at rho = inf (no noise)."""
    if math.isinf(rho):
        return math.inf, 0.0
    return _approx_dp(_gaussian(1.0), delta).map(math.sqrt(2 * rho))
