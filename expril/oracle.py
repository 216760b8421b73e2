"""The curator's side: answers marginal queries on the private target validation split.

Only the oracle rules call this module with target data. Two mechanisms, lambda = 0 (eps = inf)
meaning exact answers:
- `paper` (Eq. 7): Laplace noise on each bin's count, divided by the bin's TRUE count (or n'),
  clipped to [0, 1]. The true count differs between neighbouring data sets, so the paper's
  proof does not cover it (docs/privacy.md).
- `counts`: noisy counts only (bin counts once, error counts per query), each a histogram with
  sensitivity 1 per feature; every ratio is computed by the learner from released numbers.
"""
import hashlib
import logging
import os

import numpy as np

from .binning import bin_sums
from .seeds import rng

SECRET_VARIABLE = "EXPRIL_ORACLE_SECRET"
DEMO_SECRET = "expril-demo-secret"


def secret():
    """The oracle's noise secret, from the environment; never a rule parameter or a file.
    Without it the noise is still deterministic, but anyone who reads this code can replay it."""
    value = os.environ.get(SECRET_VARIABLE)
    if not value:
        logging.getLogger("expril").warning("%s is not set: using the public demo secret", SECRET_VARIABLE)
        return DEMO_SECRET
    return value


def noise_generator(secret_value, dataset, seed, query, edges, scale):
    """The Laplace noise stream of one query of one run, keyed by all that defines the query: what
    is asked (`query`), on which bins (`edges`, one array per feature) and at which noise scale.
    The same query asked again gets the same answer; any other query gets fresh noise, since
    answers sharing a draw (rescaled, or on other bins) would let their differences cancel it."""
    bins = hashlib.sha256()
    for feature in edges:
        bins.update(np.ascontiguousarray(feature, dtype=float).tobytes() + b"|")
    return rng("oracle-noise", secret_value, dataset, seed, query, bins.hexdigest(), repr(float(scale)))


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


def answer_counts(ids, n_bins, scale, generator):
    """Noisy count of target samples in every bin (`counts` mechanism)."""
    return bin_sums(ids, n_bins) + laplace_noise(generator, scale, n_bins)


def answer_error_counts(ids, n_bins, errors, scale, generator):
    """Noisy count of the hypothesis' errors in every bin (`counts` mechanism)."""
    return bin_sums(ids, n_bins, errors) + laplace_noise(generator, scale, n_bins)


def rates_from_counts(error_counts, counts):
    """Error fractions from released noisy counts: post-processing, no privacy cost."""
    return np.clip(error_counts / np.maximum(counts, 1.0), 0.0, 1.0)


def marginals_from_counts(counts, bins_per_feature):
    """Per-feature bin masses from released noisy counts (negative counts read as 0)."""
    positive = np.maximum(counts, 0.0)
    totals = np.repeat([part.sum() for part in np.split(positive, np.cumsum(bins_per_feature)[:-1])],
                       bins_per_feature)
    return positive / np.maximum(totals, 1.0)
