"""The curator's noise: the secret and the noise stream of each query. What is released, and
with which noise, is the mechanism's (expril.mechanisms)."""
import functools
import hashlib
import logging
import os

import numpy as np

from .seeds import rng

SECRET_VARIABLE = "EXPRIL_ORACLE_SECRET"
DEMO_SECRET = "expril-demo-secret"


def secret():
    """The oracle's noise secret, from the environment; never a rule parameter or a file.
    Without it the noise is still deterministic, but anyone who reads this code can replay it."""
    value = os.environ.get(SECRET_VARIABLE)
    if not value:
        _warn_demo_secret()
        return DEMO_SECRET
    return value


@functools.cache
def _warn_demo_secret():
    # once per process: the workflow asks once for itself and once per module (rules/ambiguity.smk)
    logging.getLogger("expril").warning("%s is not set: using the public demo secret", SECRET_VARIABLE)


def noise_generator(secret_value, dataset, seed, query, edges, scale):
    """The Laplace noise stream of one query of one run, keyed by all that defines the query: what
    is asked (`query`), on which bins (`edges`, one array per feature) and at which noise scale.
    The same query asked again gets the same answer; any other query gets fresh noise, since
    answers sharing a draw (rescaled, or on other bins) would let their differences cancel it."""
    bins = hashlib.sha256()
    for feature in edges:
        bins.update(np.ascontiguousarray(feature, dtype=float).tobytes() + b"|")
    return rng("oracle-noise", secret_value, dataset, seed, query, bins.hexdigest(), repr(float(scale)))
