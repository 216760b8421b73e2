"""Quantities derived from the configuration, shared by the rules and the tables."""

import math
from decimal import Decimal

from expril import tables
from expril.privacy import calibration


def format_eps(eps):
    """Wildcard form of an epsilon: 'inf', '1', '0.5', '0.00001' (positional, never '1e-05')."""
    eps = float(eps)
    if math.isinf(eps):
        return "inf"
    return str(int(eps)) if eps.is_integer() else format(Decimal(repr(eps)), "f")


def parse_eps(text):
    return float(text)


def n_val(n_target, val_fraction):
    """Size of the target's validation split, the oracle's data."""
    return round(n_target * val_fraction)


def benchmark_setting(config, spec, key):
    """A protocol setting a benchmark may set for itself (redraw, val_fraction): its own value,
    else the configuration's global one."""
    return spec.get(key, config[key])


def benchmark_n_val(config, spec):
    """n' of a benchmark under the configuration: its target's validation split."""
    return n_val(spec["n_target"], benchmark_setting(config, spec, "val_fraction"))


def benchmark_n_test(config, spec):
    """The size of a benchmark's test split under the configuration: the target's other records."""
    return spec["n_target"] - benchmark_n_val(config, spec)


# The paper's private runs: `noiseless: matched` gives the runs without noise their bins.
MATCHED_EPS = 1.0


def bins_std(sized_for, mechanism, eps, delta, dim, iterations):
    """The noise std of one count that bins are sized for by the rule `sized_for` (config `bins:
    sized_for`): the mechanism's own (Histogram.bins_std) where it is 'drawn'; None, the paper's
    Laplace rule, where it is 'laplace' (rounds 1 and 2, whatever the noise)."""
    return mechanism.bins_std(eps, delta, dim, iterations) if sized_for == "drawn" else None


def bins_per_feature(n_val, dim, iterations, eps, snr, noiseless, noise_std=None):
    """Bins per feature q for a dataset of dimension `dim` at privacy budget `eps`.

    With noise, the paper keeps n'/(q sqrt(2) lambda), the expected count per bin over the noise
    standard deviation, close to `snr` (4): q is the nearest integer, at least 2. `noise_std`: the
    std of the noise a count gets where it is not Laplace's sqrt(2) lambda (the Gaussian's,
    Histogram.bins_std), in place of it.
    Without noise (eps = inf) the rule is undefined; `noiseless` is an integer, 'sqrt' (the
    square-root histogram rule q = ceil(sqrt(n'))) or 'matched' (the bins of eps = 1, so that
    runs with and without noise differ by the noise alone).
    """
    lam = calibration.laplace_scale(dim, iterations, eps)
    if lam > 0 and noise_std is not None:
        return max(2, round(n_val / (snr * noise_std)))
    if lam > 0:
        return max(2, round(n_val / (snr * math.sqrt(2) * lam)))
    if noiseless == "sqrt":
        return math.ceil(math.sqrt(n_val))
    if noiseless == "matched":
        return bins_per_feature(n_val, dim, iterations, MATCHED_EPS, snr, noiseless)
    return int(noiseless)


def seed_blocks(runs, block_size):
    """Seed blocks 'first-last' covering seeds 0..runs-1; blocks are aligned to multiples of
    block_size, so adding runs in whole blocks leaves existing blocks untouched."""
    return [f"{lo}-{min(lo + block_size, runs) - 1}" for lo in range(0, runs, block_size)]


def block_seeds(block):
    lo, hi = (int(v) for v in block.split("-"))
    if hi < lo:
        raise ValueError(f"seed block {block!r}: last seed before first")
    return list(range(lo, hi + 1))


def feature_count(spec):
    return len(tables.feature_names(spec)) if tables.is_table(spec) else spec["dim"]


# Peak memory of a job on one seed block, fitted to the peak RSS of each rule's step on datasets A
# and E at 10 and 40 seeds (docs/slurm.md): a base for the process and its imports, with the
# Snakemake process a cluster job also runs (150 MB), plus per seed at most 7 bytes per sample
# (source and target) and unit of width (features plus the widest layer).
MEMORY_BASE_MB = {"numpy": 250, "torch": 450}
MEMORY_BYTES_PER_SAMPLE_UNIT = 7
MEMORY_MARGIN = 1.5


def job_memory_mb(block_size, spec, trains):
    """Memory in MB to request for a job on a block of `block_size` runs of the benchmark `spec`:
    the fitted need times MEMORY_MARGIN. `trains`: the job imports torch."""
    width = feature_count(spec) + max(spec["hidden"])
    per_seed = MEMORY_BYTES_PER_SAMPLE_UNIT * (spec["n_source"] + spec["n_target"]) * width / 1e6
    base = MEMORY_BASE_MB["torch" if trains else "numpy"]
    return math.ceil(MEMORY_MARGIN * (base + block_size * per_seed))


def sample_rate(n, batch_size):
    """DP-SGD's Poisson sampling rate: Opacus draws one expected batch per batch of the plain loader,
    1 / ceil(n / batch_size), on n records (the configured n', public)."""
    return 1 / math.ceil(n / batch_size)
