"""The smoke configuration on a real one-node SLURM cluster (tests/slurm_cluster.sh), opt-in: it
installs and starts SLURM and munge, so it needs root on a Debian machine and about 15 minutes.

    EXPRIL_SLURM_TEST=1 .venv/bin/python -m pytest tests/workflow/test_slurm.py
"""

import os
import subprocess
import sys

import pytest

from harness import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("EXPRIL_SLURM_TEST") != "1", reason="set EXPRIL_SLURM_TEST=1 to build a SLURM cluster here"
    ),
]


def test_smoke_through_slurm_matches_local_run(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "EXPRIL_SLURM_WORK": str(tmp_path)}
    result = subprocess.run(["bash", "tests/slurm_cluster.sh"], cwd=ROOT, env=env, capture_output=True, text=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "tables=identical" in output
