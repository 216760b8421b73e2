"""Random Fourier features of a Gaussian kernel (Rahimi and Recht 2007): the one feature map of
the class-conditional embedding a rival releases (expril.rivals) and of MMD reweighting (expril.method.reweight).

phi(x) = sqrt(2/D) [cos(W^T z), sin(W^T z)], z = (x - mean) / std, with the D/2 columns of W drawn
from N(0, I / l^2), so that phi(x) . phi(x') is an unbiased estimate of exp(-|z - z'|^2 / (2 l^2))
and |phi(x)| = 1 for every x: one record moves a mean embedding by at most 1/n in L2, whatever D.

Everything here comes from the learner's public source data (mean, std, bandwidth l: the median
heuristic) and a public random stream (W): the curator applies the map the learner hands it, as
it does with the bins, and pays nothing for it.
"""

import numpy as np

# Pairwise distances for the median heuristic are taken on at most this many source points
# (the first ones: the source is in random order), which keeps the cost at 0.5 M distances.
MEDIAN_POINTS = 1000


def make_map(source_x, n_features, generator, scale=1.0):
    """The feature map of one run, as arrays: mean, std (d,) and frequencies W (d, n_features / 2),
    at `scale` times the median heuristic's bandwidth."""
    if n_features < 2 or n_features % 2:
        raise ValueError(f"the number of random features must be even and at least 2, got {n_features}")
    x = np.asarray(source_x, dtype=np.float64)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = (x[:MEDIAN_POINTS] - mean) / std
    squared = (z**2).sum(axis=1)
    distances = np.sqrt(np.maximum(squared[:, None] + squared[None, :] - 2 * z @ z.T, 0.0))
    bandwidth = np.median(distances[np.triu_indices(len(z), k=1)])
    if not bandwidth > 0:
        raise ValueError("the median heuristic needs at least two distinct source points")
    omega = generator.standard_normal((x.shape[1], n_features // 2)) / (bandwidth * scale)
    return {"mean": mean, "std": std, "omega": omega}


def features(feature_map, x):
    """phi(x) (..., n, D) for x (..., n, d): NumPy arrays; leading axes broadcast."""
    z = projection(feature_map, x)
    return np.concatenate([np.cos(z), np.sin(z)], axis=-1) * amplitude(z)


def projection(feature_map, x):
    """W^T z for x (..., n, d): the frequencies' arguments, whose cos and sin are the features."""
    return ((x - feature_map["mean"][..., None, :]) / feature_map["std"][..., None, :]) @ feature_map["omega"]


def amplitude(z):
    """sqrt(2/D): D = 2 z.shape[-1] features, each of the D/2 frequencies giving a cos and a sin."""
    return np.sqrt(1.0 / z.shape[-1])


def stack(maps):
    """The maps of a seed block, stacked along a first axis (for an .npz file, or a batched call)."""
    return {key: np.stack([m[key] for m in maps]) for key in ("mean", "std", "omega")}


def unstack(block, b):
    return {key: block[key][b] for key in ("mean", "std", "omega")}


def mean_embedding(feature_map, x, normaliser):
    """sum_i phi(x_i) / normaliser (D,): the target's embedding for MMD reweighting, normalised by
    the configured n' (public) rather than the realised size, so that adding or removing one
    record moves it by exactly |phi(x)| / n' = 1 / n' in L2 and changes nothing else."""
    return features(feature_map, x).sum(axis=0) / normaliser
