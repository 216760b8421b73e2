"""Every test, and every Snakemake it starts, caches in a folder of the session's own
(expril/workflow/cache.py): nothing is read from or written to the user's cache. And every
release's noise is keyed by the public demo secret, whatever the user's EXPRIL_ORACLE_SECRET, so
the tests' noisy answers (and the statistical tests on them) are the same on every machine."""

import functools
import platform

import pytest

from expril.privacy.noise import SECRET_VARIABLE


@pytest.fixture(scope="session", autouse=True)
def session_environment(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPRIL_CACHE_DIR", str(tmp_path_factory.mktemp("expril_cache")))
        patch.delenv(SECRET_VARIABLE, raising=False)
        yield


@functools.cache
def _not_bitexact():
    """Why this machine cannot expect the `bitexact` tests' equal bits, or '' where it can: they
    were established on x86-64 with MKL, whose kernels round a network the same whatever its block
    and thread count (expril.method.training.ALIGN); other BLAS libraries and vector widths need
    not."""
    import torch

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"bit-exact only on x86-64 with MKL (docs/testing.md), this is {platform.machine()}"
    if not torch.backends.mkl.is_available():
        return "bit-exact only on x86-64 with MKL (docs/testing.md), this torch has no MKL"
    return ""


def pytest_runtest_setup(item):
    if item.get_closest_marker("bitexact") and _not_bitexact():
        pytest.skip(_not_bitexact())
