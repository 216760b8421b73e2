"""Benchmarks of Section 4.1: shapes, determinism, and the properties each generator promises."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.utils import validate

from expril import datasets
from expril.datasets import generate, generate_block, load_ctg, split_target
from expril.seeds import rng

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
validate(CONFIG, str(ROOT / "config.schema.yaml"))  # fills the readings' defaults, as the workflow does
BENCHMARKS = CONFIG["benchmarks"]
CTG_PATH = ROOT / CONFIG["ctg"]["csv"]
CTG_SHA = CONFIG["ctg"]["sha256"]


@pytest.fixture(scope="module")
def ctg():
    return load_ctg(CTG_PATH, CTG_SHA)


def small(name, n_source=120, n_target=80):
    return {**BENCHMARKS[name], "n_source": n_source, "n_target": n_target}


def lb(x, ctg):
    return x[:, ctg[2].index("LB")]


# ---------------------------------------------------------------- every generator


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_shapes_and_types(name, ctg):
    spec = small(name)
    source_x, target_x, target_y = generate(name, spec, 0, ctg)
    d = len(ctg[2]) if spec["generator"] == "ctg" else spec["dim"]
    assert source_x.shape == (120, d) and source_x.dtype == np.float64
    assert target_x.shape == (80, d) and target_x.dtype == np.float64
    assert target_y.shape == (80,) and target_y.dtype == np.int8
    assert set(np.unique(target_y)) <= {0, 1}
    assert np.isfinite(source_x).all() and np.isfinite(target_x).all()


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_same_seed_same_data_other_seed_other_data(name, ctg):
    spec = small(name)
    first, again, other = (generate(name, spec, s, ctg) for s in (4, 4, 5))
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])
    assert not np.array_equal(first[1], other[1])


def test_data_depends_on_the_dataset_name():
    spec = small("C")
    assert not np.array_equal(generate("C", spec, 0)[0], generate("X", spec, 0)[0])


def test_unknown_generator_names_dataset_and_generator():
    with pytest.raises(ValueError, match="Z.*'spiral'"):
        generate("Z", {"generator": "spiral"}, 0)


# ---------------------------------------------------------------- A, B: clusters


@pytest.mark.parametrize("name,seed", [("A", 0), ("A", 1), ("B", 0)])
def test_clusters_band_and_cluster_labels(name, seed):
    spec = BENCHMARKS[name]
    d, k = spec["dim"], spec["clusters"]
    source_x, target_x, target_y, centres, flipped = datasets._clusters(spec, rng("data", name, seed))
    np.testing.assert_array_equal(target_y, generate(name, spec, seed)[2])
    assert ((source_x >= 0) & (source_x <= 1)).all()

    # The flipped set is a band around sum(x) = d/2 holding a third of the target.
    distance = np.abs(target_x.sum(axis=1) - d / 2)
    assert distance[flipped].max() < distance[~flipped].min()
    assert abs(flipped.mean() - 1 / 3) < 0.01
    assert 0.15 < target_y.mean() < 0.85

    # Undoing the flip leaves one label per K-means cell; floor(k/2) cells are labelled 1.
    cell = datasets._nearest(target_x, centres)
    unflipped = target_y ^ flipped
    cell_label = {}
    for c, label in zip(cell, unflipped):
        assert cell_label.setdefault(c, label) == label
    assert len(cell_label) == k
    assert sum(cell_label.values()) == k // 2


def test_kmeans_converges_to_lloyd_fixed_point():
    x = rng("test", "kmeans").random((500, 2))
    centres, assignment = datasets._kmeans(x, 6, rng("test", "init"))
    for c in range(6):
        np.testing.assert_allclose(centres[c], x[assignment == c].mean(axis=0))


# ---------------------------------------------------------------- C, D, E: latent


@pytest.mark.parametrize("name", ["C", "D", "E"])
def test_latent_shift_with_overlap(name):
    spec = BENCHMARKS[name]
    source_x, target_x, target_y = generate(name, spec, 0)
    assert 0 < target_y.mean() < 1

    # Different distributions: the means differ by far more than their standard error.
    standard_error = np.sqrt((source_x.var(axis=0) + target_x.var(axis=0)) / len(target_x))
    assert (np.abs(source_x.mean(axis=0) - target_x.mean(axis=0)) > 10 * standard_error).any()

    # Overlap: every target point has a source point closer than two target points typically are.
    t = target_x[:1000]
    to_source = _distances(t, source_x).min(axis=1)
    typical = np.median(_distances(t, t))
    assert to_source.max() < typical


@pytest.mark.parametrize("rule, expected", [("target_median", 2.0), ("pooled_median", 4.0), ("zero", 0.0)])
def test_label_thresholds(rule, expected):
    score, source_score = np.array([3.0, 1.0, 2.0]), np.array([7.0, 4.0, 6.0, 5.0])
    assert datasets._threshold({"label_threshold": rule}, score, source_score, rng("t")) == expected


def test_drawn_quantile_sets_a_class_share_within_the_spread():
    score = np.arange(1000.0)
    shares = [
        (
            score
            > datasets._threshold({"label_threshold": "drawn_quantile", "share_spread": 0.1}, score, score, rng("t", s))
        ).mean()
        for s in range(200)
    ]
    assert 0.4 <= min(shares) < 0.42 and 0.58 < max(shares) <= 0.6
    spec = {**BENCHMARKS["C"], "label_threshold": "drawn_quantile", "share_spread": 0.1}
    target_y = generate("C", spec, 0)[2]
    median_y = generate("C", BENCHMARKS["C"], 0)[2]
    assert target_y.mean() != 0.5 and median_y.mean() == 0.5


def test_label_gain_scales_the_label_network_weights():
    sizes = [3, 64, 64, 1]
    plain = datasets._random_network(sizes, rng("net"), 0.0)
    rough = datasets._random_network(sizes, rng("net"), 0.0, gain=4.0)
    for (w, b), (w4, b4) in zip(plain, rough):
        np.testing.assert_allclose(w4, 4 * w)
        np.testing.assert_array_equal(b4, b)
    spec = {**BENCHMARKS["C"], "label_gain": 4.0}
    gained, default = generate("C", spec, 0), generate("C", BENCHMARKS["C"], 0)
    np.testing.assert_array_equal(gained[1], default[1])  # same instances, other labels
    assert not np.array_equal(gained[2], default[2])


def test_shared_source_means_bring_the_source_closer_to_the_target():
    spec = small("D", n_source=2000, n_target=500)
    independent = generate("D", spec, 0)
    shared = generate("D", {**spec, "source_means": "shared"}, 0)
    np.testing.assert_array_equal(independent[1], shared[1])
    assert np.median(_distances(shared[1], shared[0]).min(axis=1)) < np.median(
        _distances(independent[1], independent[0]).min(axis=1)
    )


def _distances(a, b):
    squared = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2 * a @ b.T
    return np.sqrt(np.maximum(squared, 0))


# ---------------------------------------------------------------- Cardiotocography


def test_ctg_loads_the_real_file(ctg):
    x, y, names = ctg
    assert x.shape == (2126, 21) and x.dtype == np.float64
    assert y.dtype == np.int8 and y.sum() == 1655
    assert len(names) == 21 and "LB" in names
    assert "CLASS" not in names and "NSP" not in names


def test_ctg_refuses_a_modified_file(tmp_path):
    data = bytearray(CTG_PATH.read_bytes())
    data[-2] = ord("3") if data[-2] != ord("3") else ord("2")
    modified = tmp_path / "CTG.csv"
    modified.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256") as error:
        load_ctg(modified, CTG_SHA)
    assert str(modified) in str(error.value) and CTG_SHA in str(error.value)


def test_ctg_names_a_missing_column(tmp_path):
    lines = CTG_PATH.read_text().splitlines()
    stripped = tmp_path / "CTG.csv"
    stripped.write_text("\n".join(",".join(line.split(",")[:-1]) for line in lines) + "\n")
    with pytest.raises(ValueError, match="NSP") as error:
        load_ctg(stripped, datasets.sha256_of(stripped))
    assert str(stripped) in str(error.value)


def test_ctg_b_is_shifted_by_heart_rate_ctg_a_is_not(ctg):
    for seed in range(3):
        source_x, target_x, _ = generate("CTG-B", BENCHMARKS["CTG-B"], seed, ctg)
        assert lb(source_x, ctg).mean() > lb(target_x, ctg).mean() + 3
        source_x, target_x, _ = generate("CTG-A", BENCHMARKS["CTG-A"], seed, ctg)
        assert abs(lb(source_x, ctg).mean() - lb(target_x, ctg).mean()) < 2


def test_ctg_b_reversed_reading_sends_high_heart_rates_to_the_target(ctg):
    reversed_spec = {**BENCHMARKS["CTG-B"], "lb_selects": "target"}
    for seed in range(3):
        source_x, target_x, target_y = generate("CTG-B", reversed_spec, seed, ctg)
        assert lb(target_x, ctg).mean() > lb(source_x, ctg).mean() + 3
    # High heart rates go with more abnormal traces: the reversed target has fewer normal ones.
    literal = np.mean([generate("CTG-B", BENCHMARKS["CTG-B"], s, ctg)[2].mean() for s in range(5)])
    reverse = np.mean([generate("CTG-B", reversed_spec, s, ctg)[2].mean() for s in range(5)])
    assert reverse < literal - 0.03


def test_ctg_rows_are_drawn_without_replacement_into_disjoint_sets(ctg):
    source_x, target_x, _ = generate("CTG-B", BENCHMARKS["CTG-B"], 0, ctg)
    # The file has a few duplicate rows, so compare row multisets rather than row sets.
    drawn = Counter(map(tuple, source_x)) + Counter(map(tuple, target_x))
    assert drawn <= Counter(map(tuple, ctg[0]))


def test_ctg_pool_too_small(ctg):
    with pytest.raises(ValueError, match="source pool"):
        generate("CTG-A", {**BENCHMARKS["CTG-A"], "n_source": 2000}, 0, ctg)


def test_ctg_generator_needs_the_data():
    with pytest.raises(ValueError, match="CTG-A"):
        generate("CTG-A", BENCHMARKS["CTG-A"], 0)


# ---------------------------------------------------------------- target split


def test_split_sizes_disjoint_and_reproducible():
    x = np.arange(101, dtype=np.float64)[:, None]
    y = (np.arange(101) % 2).astype(np.int8)
    val_x, val_y, test_x, test_y = split_target(x, y, 0.3, "A", 7)
    assert len(val_x) == len(val_y) == 30 and len(test_x) == len(test_y) == 71
    assert sorted(np.concatenate([val_x, test_x])[:, 0]) == list(range(101))
    np.testing.assert_array_equal(val_y, val_x[:, 0] % 2)
    np.testing.assert_array_equal(val_x, split_target(x, y, 0.3, "A", 7)[0])
    assert not np.array_equal(val_x, split_target(x, y, 0.3, "A", 8)[0])


@pytest.mark.parametrize("fraction", [0, 1, -0.5, 1.5])
def test_split_rejects_bad_fraction(fraction):
    with pytest.raises(ValueError, match="val_fraction"):
        split_target(np.zeros((10, 1)), np.zeros(10, np.int8), fraction, "A", 0)


# ---------------------------------------------------------------- seed blocks


@pytest.mark.parametrize("name", ["A", "C", "CTG-B"])
def test_a_run_does_not_depend_on_its_block(name, ctg):
    spec = small(name)
    alone = generate_block(name, spec, [3], "data", ctg)
    block = generate_block(name, spec, [0, 1, 2, 3], "data", ctg)
    assert block["source_x"].shape == (4, 120, alone["source_x"].shape[2])
    assert block["target_y"].shape == (4, 80)
    np.testing.assert_array_equal(block["seeds"], [0, 1, 2, 3])
    for key in ("source_x", "target_x", "target_y"):
        np.testing.assert_array_equal(alone[key][0], block[key][3])
    assert not np.array_equal(block["source_x"][0], block["source_x"][3])


def test_redraw_split_shares_one_data_set():
    spec = small("C")
    block = generate_block("C", spec, [5, 9], "split")
    np.testing.assert_array_equal(block["source_x"][0], block["source_x"][1])
    np.testing.assert_array_equal(block["target_y"][0], block["target_y"][1])
    np.testing.assert_array_equal(block["source_x"][0], generate("C", spec, 0)[0])
    np.testing.assert_array_equal(block["seeds"], [5, 9])


def test_redraw_rejects_unknown_value():
    with pytest.raises(ValueError, match="redraw"):
        generate_block("C", small("C"), [0], "everything")
