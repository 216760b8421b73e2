"""The registry of the curator's privacy mechanisms: every family module registers its classes
here on import, and rules and steps name a mechanism by its registered name.

Rules receive a mechanism as one param, `Mechanism.param()`, a plain dict; the steps rebuild the
object with `from_param`. The families this module imports are ExPriL's own: the oracle's
histograms (`Histogram`: `paper`, `counts`, `gaussian-counts`; `dirichlet`) and the mean embeddings
of its runs by MMD (`rff-embedding`, `zcdp-embedding`). A compared method's mechanism is its
plug-in's (expril.plugins): the plug-in module imports, or defines, the family it applies, and a
name that is not registered yet loads the plug-ins (expril.plugins.registry) before it is refused.
The zCDP ones share their accounting, expril.privacy.zcdp. How large each one's noise is:
expril.privacy.calibration; where it is drawn: expril.privacy.noise; where it is recorded:
expril.privacy.ledger.
"""

import inspect

from expril.privacy.base import LABEL, MECHANISMS, RECORD, Mechanism
from expril.privacy.dirichlet import Dirichlet
from expril.privacy.gaussian import MeanEmbedding, ZCDPEmbedding
from expril.privacy.histogram import COUNTS_QUERY, Counts, GaussianCounts, Histogram, Paper
from expril.privacy.zcdp import ZCDP

__all__ = [
    "COUNTS_QUERY",
    "LABEL",
    "MECHANISMS",
    "RECORD",
    "Counts",
    "Dirichlet",
    "GaussianCounts",
    "Histogram",
    "MeanEmbedding",
    "Mechanism",
    "Paper",
    "ZCDPEmbedding",
    "embedding_for",
    "from_param",
    "get",
    "registered",
]


def registered():
    """Every registered mechanism, by name: the package's and those of every plug-in module."""
    from expril.plugins import registry  # the plug-ins import this module

    registry.methods()
    return MECHANISMS


def get(name):
    known = MECHANISMS if name in MECHANISMS else registered()
    if name not in known:
        raise ValueError(f"unknown mechanism {name!r}, expected one of {sorted(known)}")
    return known[name]


def embedding_for(chain):
    """The mechanism of Pb. 1's embedding query in a run by MMD whose error queries are `chain`'s (a
    Histogram class): accounted as they are, so that the run spends its (eps, delta) once: in zCDP
    beside zCDP (`zcdp-embedding`, its rho added to theirs, docs/privacy.md), else by basic
    composition (`rff-embedding`, its (eps / (T+1), delta) added to their pure eps)."""
    return ZCDPEmbedding if issubclass(chain, ZCDP) else MeanEmbedding


def from_param(param):
    """The mechanism a rule's `mechanism` param describes (other keys, such as the secret's
    digest, are there for Snakemake's rerun triggers only); a setting it omits keeps its default."""
    cls = get(param["name"])
    return cls(**{key: param[key] for key in inspect.signature(cls).parameters if key in param})
