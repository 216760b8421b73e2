"""The benchmarks of Section 4.1: artificial data sets A-E, and splits of a csv file (CTG-A, CTG-B).

Every data set is drawn from `rng("data", name, data_seed)` alone, so it does not depend on the
seed block it is generated in. The key is the benchmark's name, not its generator: CTG-A and
CTG-B, once drawn by a `ctg` generator and now `csv` entries, draw the very same rows.
numpy only: data jobs must not pay torch's import cost.
"""

import numpy as np

from expril import settings
from expril.seeds import rng

HIDDEN_UNITS = 64  # width of the two hidden layers of the random networks f and f'
MAX_KMEANS_ITERATIONS = 100


# ---------------------------------------------------------------- files (CTG-A, CTG-B, package tables)


def _csv(name, spec, g, table, seed):
    """Rows go to the source pool with probability p, then each set is drawn from its pool without
    replacement. p = 0.5 (`shift: null`), or the shift column f mapped onto [0.1, 0.9] (Section
    4.1's CTG-B, f = LB): the text's rule sends a row to the source with probability f
    (`shift_selects: source`); the reverse reading sends it to the target (`shift_selects: target`).
    A seed reads its part of the records only (_part: the calibration's or the reported runs');
    with `draw: disjoint` it takes its own block of records (_disjoint), else it resamples the part."""
    if table is None:
        raise ValueError(f"dataset {name}: generator {spec['generator']!r} needs its loaded file (tables.load)")
    p = source_probability(spec, table)
    rows, block = _part(name, spec, len(table.x), seed)
    if spec.get("draw", "resample") == "disjoint":
        source_rows, target_rows = _disjoint(name, spec, rows, p, block, seed)
    else:
        to_source = g.random(len(rows)) < p[rows]
        source_rows = _draw(name, "source", rows[to_source], spec["n_source"], g)
        target_rows = _draw(name, "target", rows[~to_source], spec["n_target"], g)
    return table.x[source_rows], table.x[target_rows], table.y[target_rows]


def source_probability(spec, table):
    """Each record's probability of joining the source pool (_csv's p)."""
    if not spec["shift"]:
        return np.full(len(table.x), 0.5)
    f = table.shift
    p = 0.1 + 0.8 * (f - f.min()) / (f.max() - f.min())
    return 1 - p if spec["shift_selects"] == "target" else p


def _part(name, spec, n, seed):
    """(rows, block): the records seed `seed` may read, and its index among its part's runs.
    With `calibration: {share, first_seed}`, a draw keyed by the benchmark's name alone (the same
    for every seed) holds `share` of the records for the calibration: seeds from `first_seed` on
    read those only, the others the rest only, so no calibration run reads a record that a
    reported run holds. Without it every seed reads every record."""
    held = spec.get("calibration")
    if held is None:
        return np.arange(n), seed
    calibration = rng("data", name, "calibration part").random(n) < held["share"]
    if seed >= held["first_seed"]:
        return np.flatnonzero(calibration), seed - held["first_seed"]
    return np.flatnonzero(~calibration), seed


def _disjoint(name, spec, rows, p, block, seed):
    """Source and target rows of run `block` of its part: the part's rows are sent to the source
    pool with probability p and shuffled once, by a draw keyed by the benchmark's name alone, and
    cut into consecutive blocks of n_source (n_target) rows; run k takes block k of each pool, so
    two runs of a part share no record (fresh data, as the generators draw)."""
    g = rng("data", name, "disjoint blocks")
    to_source = g.random(len(p)) < p
    order = rows[g.permutation(len(rows))]
    pools = order[to_source[order]], order[~to_source[order]]
    sizes = spec["n_source"], spec["n_target"]
    blocks = min(len(pool) // size for pool, size in zip(pools, sizes))
    if block >= blocks:
        raise ValueError(
            f"dataset {name}: seed {seed} draws disjoint block {block} of its part, which holds {blocks} "
            f"({len(pools[0])} source and {len(pools[1])} target rows, {sizes[0]} and {sizes[1]} a run)"
        )
    return tuple(pool[block * size : (block + 1) * size] for pool, size in zip(pools, sizes))


def _draw(name, which, pool, n, g):
    if len(pool) < n:
        raise ValueError(f"dataset {name}: the {which} pool has {len(pool)} rows, {n} asked")
    return g.choice(pool, size=n, replace=False)


# ---------------------------------------------------------------- A, B: clusters


def _nearest(x, centres):
    return ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=-1).argmin(axis=1)


def _kmeans(x, k, g):
    """Plain Lloyd from k distinct random points; returns (centres, assignment).

    The assignment is recomputed from the final centres, so every point is at its nearest centre
    even when the iteration cap stops Lloyd before convergence.
    """
    centres = x[g.choice(len(x), size=k, replace=False)].copy()
    assignment = None
    for _ in range(MAX_KMEANS_ITERATIONS):
        new = _nearest(x, centres)
        if assignment is not None and np.array_equal(new, assignment):
            break
        assignment = new
        counts = np.bincount(assignment, minlength=k)
        sums = np.zeros_like(centres)
        np.add.at(sums, assignment, x)
        filled = counts > 0  # an empty cluster keeps its old centre
        centres[filled] = sums[filled] / counts[filled, None]
    return centres, _nearest(x, centres)


def _clusters(spec, g):
    """Dataset A/B plus what the tests need to check it: (source_x, target_x, target_y,
    centres, flipped), `flipped` marking the target points in the flip band."""
    n_source, n_target, d, k = spec["n_source"], spec["n_target"], spec["dim"], spec["clusters"]
    source_x = g.random((n_source, d))
    target_x = g.random((n_target, d))
    centres, assignment = _kmeans(target_x, k, g)
    cluster_label = np.zeros(k, dtype=np.int8)
    cluster_label[g.permutation(k)[: k // 2]] = 1
    distance = np.abs(target_x.sum(axis=1) - d / 2)
    flipped = distance <= np.quantile(distance, 1 / 3)  # the band holds a third of the target
    target_y = cluster_label[assignment] ^ flipped.astype(np.int8)
    return source_x, target_x, target_y, centres, flipped


# ---------------------------------------------------------------- C, D, E: latent


def _random_network(sizes, g, bias_std, gain=1.0):
    """Layers (W, b) with W ~ N(0, gain^2/fan_in) and b ~ N(0, bias_std^2). A larger gain drives
    the tanh units into saturation: a rougher function, closer to a partition by hyperplanes."""
    return [
        (g.normal(0, gain / np.sqrt(fan_in), (fan_in, fan_out)), g.normal(0, bias_std, fan_out))
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:])
    ]


def _forward(layers, z):
    for w, b in layers[:-1]:
        z = np.tanh(z @ w + b)
    w, b = layers[-1]
    return z @ w + b


def _mixture(n, dim, components, std, g, means=None):
    """n points of an equally weighted Gaussian mixture with means ~ N(0, I), or the given ones;
    returns (points, means). The means are drawn either way, so that the stream, hence every later
    draw (f, f', the target labels), is the same whichever means are used."""
    drawn = g.normal(size=(components, dim))
    means = drawn if means is None else means
    return means[g.integers(components, size=n)] + std * g.normal(size=(n, dim)), means


def _threshold(spec, score, source_score, g):
    """Where f' is cut (the readings of "thresholding its output", see docs/identification.md):
    the target's median (both classes exactly equal), the median over source and target, zero, or
    a quantile drawn per run, so that the class-1 share is uniform on 0.5 +- share_spread."""
    rule = spec["label_threshold"]
    if rule == "target_median":
        return np.median(score)
    if rule == "pooled_median":
        return np.median(np.concatenate([score, source_score]))
    if rule == "zero":
        return 0.0
    if rule == "drawn_quantile":
        spread = spec["share_spread"]
        return np.quantile(score, g.uniform(0.5 - spread, 0.5 + spread))
    raise ValueError(f"unknown label_threshold {rule!r}")


def _latent(spec, g):
    """Target latents: narrow mixture (std 0.5); source latents: a broader mixture (std 1.0), with
    its own means or the target's (`source_means`). Instances f(z); labels f'(z_target) above a
    threshold (_threshold), f' with weights scaled by `label_gain`."""
    d_l, d_i, m = spec["latent_dim"], spec["dim"], spec["components"]
    z_target, target_means = _mixture(spec["n_target"], d_l, m, 0.5, g)
    shared = target_means if spec["source_means"] == "shared" else None
    z_source, _ = _mixture(spec["n_source"], d_l, m, 1.0, g, shared)
    f = _random_network([d_l, HIDDEN_UNITS, HIDDEN_UNITS, d_i], g, bias_std=0.1)
    f_label = _random_network([d_l, HIDDEN_UNITS, HIDDEN_UNITS, 1], g, bias_std=0.0, gain=spec["label_gain"])
    score = _forward(f_label, z_target)[:, 0]
    threshold = _threshold(spec, score, _forward(f_label, z_source)[:, 0], g)
    target_y = (score > threshold).astype(np.int8)
    return _forward(f, z_source), _forward(f, z_target), target_y


# ---------------------------------------------------------------- public API


def generate(name, spec, data_seed, table=None):
    """(source_x, target_x, target_y) of dataset `name`, determined by (name, data_seed);
    `table`: a csv or package entry's file, loaded once (tables.load)."""
    g = rng("data", name, data_seed)
    generator = spec["generator"]
    if generator == "clusters":
        return _clusters(spec, g)[:3]
    if generator == "latent":
        return _latent(spec, g)
    if generator in ("csv", "package"):
        return _csv(name, spec, g, table, data_seed)
    raise ValueError(f"dataset {name}: unknown generator {generator!r}")


def split_target(target_x, target_y, val_fraction, name, seed):
    """(val_x, val_y, test_x, test_y): the oracle's validation part and the test part."""
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    order = rng("split", name, seed).permutation(len(target_y))
    n_val = settings.n_val(len(target_y), val_fraction)
    val, test = order[:n_val], order[n_val:]
    return target_x[val], target_y[val], target_x[test], target_y[test]


def generate_block(name, spec, seeds, redraw, table=None):
    """The data of the runs `seeds`, stacked: each run redraws the data set (redraw='data',
    data_seed = run seed) or all runs share data set 0 (redraw='split')."""
    if redraw not in ("data", "split"):
        raise ValueError(f"redraw must be 'data' or 'split', got {redraw!r}")
    if redraw == "split" and "calibration" in spec:
        raise ValueError(f"dataset {name}: redraw 'split' gives every seed seed 0's records, its calibration's too")
    if redraw == "data":
        runs = [generate(name, spec, s, table) for s in seeds]
    else:
        runs = [generate(name, spec, 0, table)] * len(seeds)  # drawn once, shared by every run
    source_x, target_x, target_y = (np.stack(arrays) for arrays in zip(*runs))
    return {
        "source_x": source_x,
        "target_x": target_x,
        "target_y": target_y,
        "seeds": np.asarray(seeds, dtype=np.int64),
    }
