"""Projected accelerated gradient (FISTA) for the box-constrained, ridge-regularised least
squares problems of ExPriL (Pb. 1 on w >= 0, Pb. 2 on y in [0,1]^n). It stops when no
coordinate moves by more than `tol` in a step, or after `steps` steps: deterministic for the
same inputs."""

import numpy as np
import scipy.sparse


def ridge_least_squares(system, rhs, center, ridge, steps, tol, lower=0.0, upper=None):
    """Minimise 1/2 ||A x - b||^2 + mu/2 ||x - center||^2 over the box [lower, upper]^n, from x =
    center, for a sparse A (bin incidences) or a dense one (random features, Pb. 1 by MMD).
    mu = ridge x (a bound on the curvature of the data term), so `ridge` means the same whatever
    the scale of A. Returns the solution and the number of steps taken.
    """
    # Row-major both ways: each product is one pass over A.
    transposed = system.T.tocsr() if scipy.sparse.issparse(system) else np.ascontiguousarray(system.T)
    lipschitz = curvature_bound(system)
    mu = ridge * lipschitz

    def gradient(x):
        return transposed @ (system @ x - rhs) + mu * (x - center)

    return fista_box(gradient, center, lipschitz + mu, steps, tol, lower, upper)


def curvature_bound(system):
    """Upper bound on the largest eigenvalue of A^T A: ||A||_2^2 <= ||A||_1 ||A||_inf, the largest
    absolute column sum times the largest absolute row sum."""
    magnitude = abs(system)
    return magnitude.sum(axis=0).max() * magnitude.sum(axis=1).max()


def fista_box(gradient, start, lipschitz, steps, tol, lower=0.0, upper=None):
    """Minimise a smooth convex function over the box [lower, upper]^n from `start`.

    `gradient(x)` is its gradient and `lipschitz` an upper bound on the gradient's Lipschitz
    constant (step 1/lipschitz). Returns the solution and the number of steps taken.
    """
    x = np.clip(start, lower, upper)
    z, momentum = x.copy(), 1.0
    for step in range(1, steps + 1):  # noqa: B007 (returned: the steps taken)
        x_next = np.clip(z - gradient(z) / lipschitz, lower, upper)
        if np.dot(z - x_next, x_next - x) > 0:
            # Momentum points uphill: restart it (O'Donoghue & Candes 2015), which makes the
            # method converge linearly on these strongly convex problems.
            momentum = 1.0
        momentum_next = (1 + np.sqrt(1 + 4 * momentum**2)) / 2
        z = x_next + (momentum - 1) / momentum_next * (x_next - x)
        moved = np.abs(x_next - x).max()
        x, momentum = x_next, momentum_next
        if moved < tol:
            break
    return x, step
