"""Source-defined bins (Section 3.1): each feature is cut at (weighted) quantiles of the source.

A sample is encoded by the global index of its bin in every feature, an (n, d) integer array;
that is the sparse form of the paper's binary (K, n) matrix R. Bins are public: the learner
builds them from its own source data and hands them to the oracle with each query.
"""

import numpy as np
import scipy.sparse


def feature_edges(values, q, weights=None):
    """Interior edges cutting one feature into at most q bins of about equal (weighted) mass.

    A value equal to an edge falls in the bin above it. Repeated quantiles are merged, so a
    nearly discrete feature gets fewer, non-empty bins; a feature with at most q distinct values
    gets one bin per value.
    """
    values = np.asarray(values, dtype=float)
    distinct = np.unique(values)
    if len(distinct) <= q:
        return (distinct[:-1] + distinct[1:]) / 2
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    mass = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)[order]
    cumulative = np.cumsum(mass) / mass.sum()
    cuts = np.searchsorted(cumulative, np.arange(1, q) / q)
    edges = np.unique(sorted_values[np.minimum(cuts, len(values) - 1)])
    # An edge at the minimum would leave the first bin empty.
    return edges[edges > sorted_values[0]]


def make_bins(x, q, weights=None):
    """Edges for every feature of x (n, d): a list of d arrays."""
    return [feature_edges(x[:, j], q, weights) for j in range(x.shape[1])]


def bin_counts(edges):
    """Bins per feature."""
    return np.array([len(e) + 1 for e in edges])


def feature_bin_ids(edges, x):
    """Index of every sample's bin within each feature, (n, d), from 0 to that feature's bins - 1."""
    if x.shape[1] != len(edges):
        raise ValueError(f"bins are defined for {len(edges)} features, data has {x.shape[1]}")
    return np.stack([np.searchsorted(e, x[:, j], side="right") for j, e in enumerate(edges)], axis=1)


def bin_ids(edges, x):
    """Global bin index of every sample in every feature, (n, d); features' bins are laid out
    one after the other, as the rows of R."""
    offsets = np.concatenate([[0], np.cumsum(bin_counts(edges))[:-1]])
    return feature_bin_ids(edges, x) + offsets


def bin_sums(ids, n_bins, values=None):
    """Per-bin sums of `values` (n,) over the (n, d) bin index array: R @ values."""
    weights = None if values is None else np.repeat(np.asarray(values, dtype=float), ids.shape[1])
    return np.bincount(ids.ravel(), weights=weights, minlength=n_bins).astype(float)


def incidence(ids, n_bins, values=None):
    """R diag(values) as a sparse (n_bins, n) matrix (R itself without `values`): its product
    with a vector of the n samples' values gives the per-bin sums, as bin_sums does."""
    n, d = ids.shape
    data = np.ones(n * d) if values is None else np.repeat(np.asarray(values, dtype=float), d)
    by_sample = scipy.sparse.csr_array((data, ids.ravel(), np.arange(0, n * d + 1, d)), shape=(n, n_bins))
    return by_sample.T.tocsr()


def pack(edges_per_seed):
    """Store the ragged edges of a seed block as flat arrays for an .npz file."""
    counts = np.array([[len(e) for e in edges] for edges in edges_per_seed])
    flat = np.concatenate([np.concatenate(edges) for edges in edges_per_seed] + [np.empty(0)])
    return {"edges": flat, "edge_counts": counts}


def unpack(data):
    """Inverse of pack: a list (seeds) of lists (features) of edge arrays."""
    counts = data["edge_counts"]
    splits = np.split(data["edges"], np.cumsum(counts.ravel())[:-1])
    d = counts.shape[1]
    return [splits[b * d : (b + 1) * d] for b in range(counts.shape[0])]
