"""Data sets read from a csv file (benchmarks with `generator: csv`): the file's checks and columns.

Each error names the file, the benchmark where it is known, and the entry's key that expected
something else, so that a wrong entry is found from the message alone. numpy only, as
expril.datasets: data jobs must not pay torch's import cost.
"""

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Table:
    """A file's records: x the features (float64), y = (label == positive) as int8, the feature
    names, and the shift column's values (None for a random split)."""

    x: np.ndarray
    y: np.ndarray
    features: list
    shift: np.ndarray | None


def sha256_of(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def feature_names(spec, name=None):
    """The entry's `features`, or every column of the file but the label and those in `drop`.
    Reads the header only: the plan needs the count before any data job runs."""
    header = _header(spec, name)
    _require(spec, name, header, [spec["label"]], "label")
    if "features" not in spec:
        _require(spec, name, header, spec.get("drop", []), "drop")
        return [c for c in header if c != spec["label"] and c not in spec.get("drop", [])]
    _require(spec, name, header, spec["features"], "features")
    if spec["label"] in spec["features"]:
        raise _error(spec, name, f"the label column {spec['label']!r} is among the entry's features:")
    return list(spec["features"])


def load(name, spec):
    """Benchmark `name`'s Table. The checksum is verified first: results must not silently come
    from a modified file."""
    actual = sha256_of(_path(spec, name))
    if actual != spec["sha256"]:
        raise _error(spec, name, f"sha256 is {actual}, the entry's sha256: expects {spec['sha256']}")
    features = feature_names(spec, name)
    shift = [spec["shift"]] if spec["shift"] else []
    header = _header(spec, name)
    _require(spec, name, header, shift, "shift")
    numeric = _columns(spec, name, header, features + shift, np.float64)
    if shift and numeric[:, -1].min() == numeric[:, -1].max():
        raise _error(spec, name, f"the shift column {spec['shift']!r} is constant: it cannot select rows")
    return Table(
        x=numeric[:, : len(features)],
        y=_positive(spec, name, header),
        features=features,
        shift=numeric[:, -1] if shift else None,
    )


def _positive(spec, name, header):
    """1 where the label is the entry's positive class: compared as a number when `positive`
    is one (a label column of 1.0 matches positive: 1), else as text."""
    positive = spec["positive"]
    labels = _columns(spec, name, header, [spec["label"]], str if isinstance(positive, str) else np.float64)[:, 0]
    y = labels == positive
    if not y.any():
        raise _error(
            spec,
            name,
            f"the label column {spec['label']!r} never holds {positive!r}, the entry's positive:; "
            f"its values: {np.unique(labels)[:10].tolist()}",
        )
    return y.astype(np.int8)


def _columns(spec, name, header, columns, dtype):
    try:
        return np.loadtxt(
            spec["csv"],
            delimiter=",",
            quotechar='"',
            skiprows=1,
            usecols=[header.index(c) for c in columns],
            dtype=dtype,
            ndmin=2,
        )
    except ValueError as error:
        raise _error(spec, name, f"columns {columns}: {error}") from error


def _header(spec, name):
    with open(_path(spec, name), newline="") as f:
        return next(csv.reader(f), [])


def _path(spec, name):
    path = Path(spec["csv"])
    if not path.is_file():
        raise _error(spec, name, "no such file, the entry's csv:")
    return path


def _require(spec, name, header, columns, key):
    missing = [c for c in columns if c not in header]
    if missing:
        raise _error(spec, name, f"no column {missing} (the entry's {key}:); its columns: {header}")


def _error(spec, name, problem):
    where = f"benchmark {name}: " if name else ""
    return ValueError(f"{where}{spec['csv']}: {problem}")
