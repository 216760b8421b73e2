"""Every test, and every Snakemake it starts, caches in a folder of the session's own
(expril/workflow/cache.py): nothing is read from or written to the user's cache. And every
release's noise is keyed by the public demo secret, whatever the user's EXPRIL_ORACLE_SECRET, so
the tests' noisy answers (and the statistical tests on them) are the same on every machine."""

import pytest

from expril.privacy.noise import SECRET_VARIABLE


@pytest.fixture(scope="session", autouse=True)
def session_environment(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPRIL_CACHE_DIR", str(tmp_path_factory.mktemp("expril_cache")))
        patch.delenv(SECRET_VARIABLE, raising=False)
        yield
