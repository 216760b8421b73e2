"""Pb. 2: source labels estimated from the error marginals of submitted hypotheses (Eq. 5, 6)."""

import numpy as np
import scipy.sparse

from expril.method.binning import bin_sums, incidence
from expril.method.solvers import ridge_least_squares


def equation_block(ids, n_bins, weights, predictions, error_rates):
    """One block of Eq. 5 for a hypothesis h with error marginals q:
    R diag(w) diag(s) y = R diag(w) h - (R w) * q, with s = +1 where h = 1 and -1 where h = 0,
    scaled by 1/n.

    Returns the sparse matrix R diag(w s) / n and the right-hand side."""
    n = ids.shape[0]
    signs = np.where(predictions > 0, 1.0, -1.0)
    rhs = (bin_sums(ids, n_bins, weights * predictions) - bin_sums(ids, n_bins, weights) * error_rates) / n
    return incidence(ids, n_bins, weights * signs / n), rhs


def estimate_labels(ids, n_bins, weights, blocks, ridge, steps, tol):
    """Relaxed labels y in [0,1]^n solving the stacked system of `blocks` [(h_l, q_l), ...]
    in the least-squares sense (C-ExPriL passes every block, I-ExPriL the latest).

    The system has far fewer equations than unknowns. The solve starts at y = 0.5 (no opinion)
    and adds mu/2 ||y - 0.5||^2 with mu = ridge x (curvature of the data term): among labels that
    fit the marginals equally well it returns the least committed ones, which makes the answer
    unique. Returns the labels and the number of solver steps.
    """
    matrices, rhs = zip(*(equation_block(ids, n_bins, weights, h, q) for h, q in blocks))
    system = scipy.sparse.vstack(matrices, format="csr")
    return ridge_least_squares(
        system, np.concatenate(rhs), np.full(ids.shape[0], 0.5), ridge, steps, tol, lower=0.0, upper=1.0
    )


def threshold(relaxed):
    """Hard labels for training; a tie at 0.5 goes to 1, the label of h_0."""
    return (relaxed >= 0.5).astype(np.int8)
