"""Pb. 1: importance weights matching the target's bin marginals (Eq. 2)."""
import numpy as np

from .binning import bin_sums
from .solvers import curvature_bound, fista_box


def importance_weights(ids, n_bins, marginals, ridge, steps, tol):
    """Weights v >= 0 (mean about 1) of the n source samples with R v / n close to `marginals`.

    Eq. 2 in the scale v = n w: minimise 1/2 ||R v / n - p||^2 + mu/2 ||v - 1||^2 with
    mu = ridge x (curvature of the data term), started at uniform weights. Among weightings that
    match the marginals equally well, the ridge picks the one closest to uniform, spreading
    weight evenly within a bin (the role of alpha in Eq. 2). Returns the weights and the number
    of solver steps.
    """
    n = ids.shape[0]
    ones = np.ones(n)
    lipschitz = curvature_bound(ids, ones)
    mu = ridge * lipschitz

    def gradient(v):
        residual = bin_sums(ids, n_bins, v) / n - marginals
        return residual[ids].sum(axis=1) / n + mu * (v - 1)

    return fista_box(gradient, ones, lipschitz + mu, steps, tol, lower=0.0)
