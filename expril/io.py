"""File helpers: every output is written to a temporary name and renamed, so a killed job
never leaves a half-written file behind."""

import os
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np


@contextmanager
def atomic_path(path):
    """Yield a temporary path next to `path`; rename it onto `path` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp makes the file private; give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_npz(path, **arrays):
    # Through an open file: given a name, np.savez would append ".npz" to the temporary one.
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)


def load_npz(path, required=()):
    """Load an .npz into a dict; fail naming the file and the missing keys."""
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(f"{path}: not a readable .npz file ({error})") from error
    missing = [k for k in required if k not in data]
    if missing:
        raise KeyError(f"{path}: missing arrays {missing}; has {sorted(data)}")
    return data


def save_csv(path, frame, exact=False):
    """Floats to 6 significant digits, or `exact`ly (shortest repr that reads back the same) for
    files that are read back and computed on."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format=None if exact else "%.6g")


def save_text(path, text):
    with atomic_path(path) as tmp:
        tmp.write_text(text)
