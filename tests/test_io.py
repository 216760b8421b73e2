"""Atomic output files: nothing half-written is left behind, permissions follow the umask."""
import os

import numpy as np
import pytest

from expril import io


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.npz"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("killed mid-way")
    assert list(tmp_path.iterdir()) == []


def test_written_file_has_umask_permissions_and_round_trips(tmp_path):
    old = os.umask(0o022)
    try:
        io.save_npz(tmp_path / "a.npz", x=np.arange(3), seeds=np.array([0]))
    finally:
        os.umask(old)
    assert (tmp_path / "a.npz").stat().st_mode & 0o777 == 0o644
    assert np.array_equal(io.load_npz(tmp_path / "a.npz", required=("x",))["x"], np.arange(3))
    with pytest.raises(KeyError, match="missing arrays \\['y'\\]"):
        io.load_npz(tmp_path / "a.npz", required=("y",))
