"""Pb. 1: importance weights of the source matching the target, either its bin marginals (Eq. 2)
or, in ExPriL's runs by MMD (`C-mmd`, `I-mmd`), a mean embedding of its features in random
Fourier features (the weighted source's MMD to the target). One solver for both: only the linear
map differs."""

import numpy as np

from expril.method.binning import incidence
from expril.method.solvers import ridge_least_squares


def importance_weights(ids, n_bins, marginals, ridge, steps, tol):
    """Weights v >= 0 (mean about 1) of the n source samples with R v / n close to `marginals`.

    Eq. 2 in the scale v = n w: minimise 1/2 ||R v / n - p||^2 + mu/2 ||v - 1||^2 with
    mu = ridge x (curvature of the data term), started at uniform weights. Among weightings that
    match the marginals equally well, the ridge picks the one closest to uniform, spreading
    weight evenly within a bin (the role of alpha in Eq. 2). Returns the weights and the number
    of solver steps.
    """
    n = ids.shape[0]
    system = incidence(ids, n_bins, np.full(n, 1 / n))
    return ridge_least_squares(system, marginals, np.ones(n), ridge, steps, tol, lower=0.0)


def mmd_weights(source_features, embedding, ridge, steps, tol):
    """Weights v >= 0 (mean about 1) of the n source samples whose weighted mean embedding
    Phi^T v / n is closest to the target's `embedding` (D,): minimise the squared MMD
    1/2 ||Phi^T v / n - e||^2 + mu/2 ||v - 1||^2, as Eq. 2 with the random features Phi (n, D)
    in place of the bin incidences. Returns the weights and the number of solver steps."""
    n = source_features.shape[0]
    return ridge_least_squares(source_features.T / n, embedding, np.ones(n), ridge, steps, tol, lower=0.0)
