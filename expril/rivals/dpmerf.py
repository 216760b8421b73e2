"""DP-MERF (Harder, Adamczewski and Park, AISTATS 2021): the curator releases once a noisy mean
embedding of its labelled records in random Fourier features, and the learner trains a generator
whose samples have the same embedding (expril.rivals.generator), then a classifier on the samples.

The embedding is class-conditional: record (x, y) contributes f(y) (x) phibar(x), with f(y) the
one-hot label and phibar(x) = [phi(x), 1] / sqrt(2), phi the unit-norm features of expril.method.rff.
The constant coordinate carries the class counts, from which the learner draws its labels; the
1/sqrt(2) keeps every record's contribution at norm 1. Summed and divided by the configured n'
(public), the release M (D+1, C) moves by exactly 1/n' in Frobenius norm when one record is added
or removed, and by at most sqrt(2)/n' when one is replaced (docs/synthetic.md).
"""

import numpy as np

from expril.method import rff

CLASSES = 2


def embedding(feature_map, x, y, normaliser):
    """sum_i f(y_i) (x) phibar(x_i) / normaliser, as a (D+1, C) matrix."""
    phi = rff.features(feature_map, x)
    bar = np.concatenate([phi, np.ones((len(phi), 1))], axis=1) / np.sqrt(2.0)
    return bar.T @ np.eye(CLASSES)[np.asarray(y, dtype=int)] / normaliser


def read(released):
    """The learner's reading of a release (..., D+1, C) (post-processing): each class's feature
    embedding (..., D, C), about (n_c / n') E[phi(x) | c], and its weight n_c / n' (..., C) from
    the count row, negative noisy counts read as 0."""
    released = np.asarray(released) * np.sqrt(2.0)
    return released[..., :-1, :], np.maximum(released[..., -1, :], 0.0)
