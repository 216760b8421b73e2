"""Reproducible random streams keyed by names, not by call order.

Every random draw of a run is keyed by (purpose, dataset, seed, ...), so a run's result does not
depend on which other runs share its job (seed blocks) or on how many cores run the workflow.
"""

import hashlib

import numpy as np


def _word(key):
    if isinstance(key, (int, np.integer)):
        if key < 0:
            raise ValueError(f"seed keys must be non-negative, got {key}")
        return int(key)
    # 128 bits of a hash: a secret key (the oracle's) keeps its entropy.
    return int.from_bytes(hashlib.sha256(str(key).encode()).digest()[:16], "big")


def seed_sequence(*keys):
    return np.random.SeedSequence([_word(k) for k in keys])


def rng(*keys):
    """A numpy Generator determined by `keys` alone."""
    return np.random.default_rng(seed_sequence(*keys))


def seed_int(*keys):
    """A 63-bit integer seed (for torch.Generator.manual_seed) determined by `keys` alone: the top
    63 bits of one 64-bit word of the stream, in Python integers (exact; NumPy arithmetic mixing
    uint64 with Python ints goes through float64 and rounds)."""
    return int(seed_sequence(*keys).generate_state(1, np.uint64)[0]) >> 1
