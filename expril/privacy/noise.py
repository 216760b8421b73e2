"""Where the curator's noise is drawn and added: the secret, the noise stream of each query, and
the Laplace and Gaussian draws the mechanisms add to their exact answers. How large the noise is
comes from expril.privacy.calibration; what is released, from the mechanism. The other draws are
the Dirichlet mechanism's Beta (expril.privacy.dirichlet) and the noise that the rivals' algorithms
add inside their own training or synthesis (expril.rivals)."""

import functools
import hashlib
import logging
import os

import numpy as np

from expril.seeds import rng

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


# What keyed a release's noise, as the ledger records it (`key_of`).
KEYS = {"demo": "public demo secret", "secret": "EXPRIL_ORACLE_SECRET", "library": "the library's own, unseeded"}


def key_of(mechanism):
    """What keyed a mechanism's noise in this process: the public demo secret (anyone with the
    code can replay it), the oracle's secret, or, for a library that draws its own (OpenDP's
    marginal synthesis), that library's unseeded generator."""
    if not mechanism.keyed_noise:
        return KEYS["library"]
    return KEYS["secret"] if os.environ.get(SECRET_VARIABLE) else KEYS["demo"]


def stream(secret_value, dataset, seed, query, edges, scale):
    """The noise stream of one query of one run, keyed by all that defines the query: what is
    asked (`query`), on which bins (`edges`, one array per feature) and at which noise scale.
    The same query asked again gets the same answer; any other query gets fresh noise, since
    answers sharing a draw (rescaled, or on other bins) would let their differences cancel it."""
    bins = hashlib.sha256()
    for feature in edges:
        bins.update(np.ascontiguousarray(feature, dtype=float).tobytes() + b"|")
    return rng("oracle-noise", secret_value, dataset, seed, query, bins.hexdigest(), repr(float(scale)))


def laplace(generator, scale, size):
    """`size` Laplace draws of `scale` from the query's stream; zeros (no draw) at scale 0."""
    return generator.laplace(0.0, scale, size) if scale > 0 else np.zeros(size)


def gaussian(exact, generator, std):
    """`exact` plus Gaussian noise of `std` from the query's stream; `exact` itself at std 0."""
    return exact + generator.normal(0.0, std, exact.shape) if std > 0 else exact
