"""Atomic output files: nothing half-written is left behind, permissions follow the umask."""

import os

import numpy as np
import pytest

from expril import io


def test_failed_write_leaves_nothing_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.npz"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("killed mid-way")
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("killed mid-way")
    assert list(tmp_path.iterdir()) == [target] and target.read_bytes() == b"old"


def test_npz_under_any_name_and_unreadable_files_name_the_path(tmp_path):
    io.save_npz(tmp_path / "weights.bin", x=np.arange(2))  # np.savez alone would add ".npz"
    assert list(tmp_path.iterdir()) == [tmp_path / "weights.bin"]
    (tmp_path / "cut.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="cut.npz: not a readable .npz"):
        io.load_npz(tmp_path / "cut.npz")


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
