"""Every test, and every Snakemake it starts, caches in a folder of the session's own
(expril/workflow/cache.py): nothing is read from or written to the user's cache."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPRIL_CACHE_DIR", str(tmp_path_factory.mktemp("expril_cache")))
        yield
