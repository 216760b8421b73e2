"""The curator's side: answers marginal queries on the private target validation split.

Only the oracle rules call this module with target data. Answers follow Eq. 7: Laplace noise of
scale lambda on each bin's count, divided by the bin's true count, clipped to [0, 1]
(`mechanism: paper`). lambda = 0 (eps = inf) means exact answers.
"""
import logging
import os

import numpy as np

from .binning import bin_sums
from .seeds import rng

MECHANISMS = ("paper",)
SECRET_VARIABLE = "EXPRIL_ORACLE_SECRET"
DEMO_SECRET = "expril-demo-secret"


def secret():
    """The oracle's noise secret, from the environment; never a rule parameter or a file.
    Without it the noise is still deterministic, but anyone who reads this code can replay it."""
    value = os.environ.get(SECRET_VARIABLE)
    if not value:
        logging.warning("%s is not set: using the public demo secret", SECRET_VARIABLE)
        return DEMO_SECRET
    return value


def noise_generator(secret_value, dataset, seed, query):
    """The Laplace noise stream of one query of one run."""
    return rng("oracle-noise", secret_value, dataset, seed, query)


def laplace_noise(generator, scale, size):
    return generator.laplace(0.0, scale, size) if scale > 0 else np.zeros(size)


def answer_marginals(ids, n_bins, scale, generator):
    """Target mass in every bin (Pb. 1 query): clip((N_k + Lap) / n')."""
    counts = bin_sums(ids, n_bins)
    return np.clip((counts + laplace_noise(generator, scale, n_bins)) / ids.shape[0], 0.0, 1.0)


def answer_errors(ids, n_bins, errors, scale, generator):
    """Fraction of the hypothesis' errors in every bin (Eq. 7): clip((E_k + Lap) / N_k).

    The paper leaves an empty bin (N_k = 0) undefined; it is divided by 1 here, so its answer is
    clipped noise around 0."""
    wrong = bin_sums(ids, n_bins, errors)
    counts = bin_sums(ids, n_bins)
    noisy = wrong + laplace_noise(generator, scale, n_bins)
    return np.clip(noisy / np.maximum(counts, 1.0), 0.0, 1.0)
