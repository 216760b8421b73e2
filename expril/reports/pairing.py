"""What pairs a run here with a published run (docs/extending.md, "Against the published study"):
per checked cell and seed, a digest of each of its files that no floating-point matrix product
makes (the data and its splits, the bins, the releases' noisy answers, the ledger rows), and the
host a study ran on. Those parts are equal on every host; the networks trained from them are not
(MKL's code path follows the processor), so the published-study check compares the digests bit for
bit and the accuracies as draws (expril.reports.published)."""

import hashlib
import os
import platform
import re

import numpy as np
import pandas as pd

from expril import io

COLUMNS = ["dataset", "eps", "column", "setting", "seed", "part", "sha256"]
HOST, PAIRING, STUDY = "host.yaml", "pairing.csv", "study.yaml"


def study(config):
    """What a rerun of a study's checked cells must follow to pair with them, beside its digests:
    the noise its bins are sized for (config `bins: sized_for`, which sizes the bins of every method
    whose releases are binned counts; a study published before the key, round 2, sized them for
    Laplace's: published.bins_rule)."""
    return {"bins": config["bins"]["sized_for"]}


def _npz_digests(path):
    """{seed: sha256} of an .npz of a seed block: each array's row of that seed (an array without
    the block's axis belongs to every seed), with its name, dtype and shape."""
    data = io.load_npz(path, required=("seeds",))
    seeds = [int(s) for s in data["seeds"]]
    digests = {}
    for b, seed in enumerate(seeds):
        h = hashlib.sha256()
        for key in sorted(data):
            if key == "seeds":
                continue
            array = data[key]
            part = array[b] if array.ndim and array.shape[0] == len(seeds) else array
            h.update(f"{key}|{part.dtype.str}|{part.shape}|".encode())
            h.update(np.ascontiguousarray(part).tobytes())
        digests[seed] = h.hexdigest()
    return digests


def _csv_digests(path):
    """{seed: sha256} of a ledger: its header and that seed's rows, as written."""
    rows = pd.read_csv(path, dtype=str, keep_default_na=False)
    header = ",".join(rows.columns)
    return {
        int(seed): hashlib.sha256("\n".join([header, *group.apply(",".join, axis=1)]).encode()).hexdigest()
        for seed, group in rows.groupby("seed", sort=False)
    }


def file_digests(path):
    """{seed: sha256} of one file of a seed block (.npz or a ledger's .csv)."""
    return _csv_digests(path) if str(path).endswith(".csv") else _npz_digests(path)


def digests(cells, files, out_path):
    """Write the digests of `cells` ((dataset, eps text, column, setting suffix) each) from their
    `files` (per cell, per seed block, {part: path}), one row per cell, seed and part."""
    rows = [
        {"dataset": d, "eps": e, "column": c, "setting": s, "seed": seed, "part": part, "sha256": digest}
        for (d, e, c, s), blocks in zip(cells, files)
        for block in blocks
        for part, path in block.items()
        for seed, digest in file_digests(path).items()
    ]
    io.save_csv(out_path, pd.DataFrame(rows, columns=COLUMNS))


def read(path):
    return pd.read_csv(path, dtype={"eps": str}, keep_default_na=False)


def differences(published, here):
    """The rows of `here` (a digests frame) whose digest the `published` one lacks or differs from,
    with the published digest (empty where it has none)."""
    key = ["dataset", "eps", "column", "seed", "part"]
    both = here.merge(published[key + ["sha256"]], on=key, how="left", suffixes=("", "_published"))
    both["sha256_published"] = both.sha256_published.fillna("")
    return both[both.sha256 != both.sha256_published]


def host():
    """The host this process runs on: its processor, instruction set, MKL (torch's: its version and
    the code path MKL_CBWR forces, else the one it picks by the instruction set), torch, NumPy and
    the BLAS NumPy calls (threadpoolctl)."""
    import torch
    from threadpoolctl import threadpool_info

    model = next(
        (line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")),
        platform.processor() or "unknown",
    )
    mkl = re.search(r"Math Kernel Library Version (\S+)", torch.__config__.show())
    blas = [
        f"{i['internal_api']} {i['version']} ({i.get('architecture', 'unknown')})"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    return {
        "processor": f"{model} ({platform.machine()})",
        "instruction_set": torch.backends.cpu.get_cpu_capability(),
        "mkl": f"{mkl.group(1)} (torch's)" if mkl else "none",
        "mkl_branch": os.environ.get("MKL_CBWR", "auto (by the instruction set)"),
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "blas": "; ".join(blas) or "unknown",
    }


def _cpuinfo():
    try:
        with open("/proc/cpuinfo") as f:
            return f.read().splitlines()
    except OSError:
        return []


def describe(record):
    """One line naming a host (host()'s fields)."""
    return ", ".join(f"{key} {value}" for key, value in record.items())
