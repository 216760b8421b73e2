"""A disk cache for numbers that depend on public parameters alone and take seconds to compute,
shared by the jobs of a study: each value is one file named by the digest of its key, written
atomically, its float's repr (which reads back to the same bits). EXPRIL_CACHE_DIR chooses the
folder (an empty value turns the cache off); the default is $XDG_CACHE_HOME/expril, else
~/.cache/expril."""

import hashlib
import os
from pathlib import Path

from expril.io import atomic_path

VARIABLE = "EXPRIL_CACHE_DIR"


def folder():
    """The cache's folder, or None when it is off."""
    if VARIABLE in os.environ:
        return Path(os.environ[VARIABLE]) if os.environ[VARIABLE] else None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "expril"


def cached_float(kind, key, compute):
    """compute(), a float, kept under `kind` for `key` (a tuple of public parameters)."""
    root = folder()
    if root is None:
        return compute()
    path = root / kind / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".txt")
    if path.exists():
        return float(path.read_text())
    value = compute()
    with atomic_path(path) as tmp:
        tmp.write_text(repr(float(value)))
    return value
