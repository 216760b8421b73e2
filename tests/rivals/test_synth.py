"""Known-answer tests of the rivals built on synthetic data and of MMD reweighting (docs/synthetic.md):
random features, MMD weights, DP-MERF's release and generator, AIM, and their ledger rows."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize, stats

from benchmarks.dpmerf_gradient import autograd_mean_features
from expril.io import load_npz, save_npz
from expril.method import binning, mlp, reweight, rff
from expril.plugins import dpmerf as dpmerf_method
from expril.privacy import calibration, ledger, mechanisms
from expril.privacy.gaussian import DPMERF
from expril.privacy.synthesis import AIM
from expril.rivals import aim, dpmerf, generator
from expril.rivals.generator import generate, train_generators
from expril.steps import blocks, curator, learner

SOLVER = {"ridge": 0.01, "steps": 5000, "tol": 1e-8}


def blobs(n, seed, d=2):
    """Two classes: N((-1, ..), 0.5^2) for y = 0 and N((2, ..), 0.5^2) for y = 1."""
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n)
    return g.normal(size=(n, d)) * 0.5 + np.where(y[:, None] == 1, 2.0, -1.0), y


def test_random_features_have_unit_norm_and_estimate_the_gaussian_kernel():
    g = np.random.default_rng(0)
    x = g.normal(size=(400, 3)) * [1.0, 2.0, 0.5] + 3.0
    feature_map = rff.make_map(x, 20000, g)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    distances = np.linalg.norm(z[:, None] - z[None], axis=2)
    bandwidth = np.median(distances[np.triu_indices(len(z), k=1)])
    # Columns of W drawn from N(0, I / l^2), l the median distance of the standardised source.
    assert np.std(feature_map["omega"]) * bandwidth == pytest.approx(1.0, rel=0.02)
    phi = rff.features(feature_map, x)
    assert phi.shape == (400, 20000) and np.allclose(np.linalg.norm(phi, axis=1), 1.0)
    kernel = np.exp(-(distances**2) / (2 * bandwidth**2))
    assert np.abs(phi @ phi.T - kernel).max() < 0.05
    # The generator's mean features, on torch tensors, are the mean of the same features.
    as_torch = {k: torch.from_numpy(v) for k, v in feature_map.items()}
    assert np.allclose(generator.mean_features(as_torch, torch.from_numpy(x)).numpy(), phi.mean(axis=0))


def test_mmd_weights_recover_a_known_shift():
    # Source: two clusters in equal parts; target: the same clusters, 80 % / 20 %. The density
    # ratio is 1.6 on the first cluster and 0.4 on the second.
    g = np.random.default_rng(1)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0]])
    source_cluster = np.repeat([0, 1], 1000)
    source = centres[source_cluster] + 0.5 * g.normal(size=(2000, 2))
    target = centres[g.choice(2, 2000, p=[0.8, 0.2])] + 0.5 * g.normal(size=(2000, 2))
    feature_map = rff.make_map(source, 1000, g)
    embedding = rff.mean_embedding(feature_map, target, len(target))
    weights, _ = reweight.mmd_weights(rff.features(feature_map, source), embedding, **SOLVER)
    assert weights.min() >= 0
    assert weights[source_cluster == 0].mean() == pytest.approx(1.6, abs=0.08)
    assert weights[source_cluster == 1].mean() == pytest.approx(0.4, abs=0.08)
    # The weighted source is much closer to the target than the unweighted one.
    phi = rff.features(feature_map, source)
    assert np.linalg.norm(phi.T @ weights / 2000 - embedding) < 0.1 * np.linalg.norm(phi.mean(axis=0) - embedding)


def test_dpmerf_embedding_moves_by_its_sensitivity_and_reads_back_the_class_counts():
    x, y = blobs(500, 2)
    n_val = 500
    feature_map = rff.make_map(x, 200, np.random.default_rng(0))
    exact = dpmerf.embedding(feature_map, x, y, n_val)
    features, counts = dpmerf.read(exact)
    assert np.allclose(counts, np.bincount(y) / n_val)
    assert np.allclose(features, rff.features(feature_map, x).T @ np.eye(2)[y] / n_val)
    # Add/remove one record: exactly 1/n' in Frobenius norm, whatever the record.
    for extra_x, extra_y in [(np.array([[10.0, -3.0]]), [1]), (x[:1], y[:1])]:
        added = dpmerf.embedding(feature_map, np.concatenate([x, extra_x]), np.concatenate([y, extra_y]), n_val)
        assert np.linalg.norm(added - exact) == pytest.approx(1 / n_val)
    assert DPMERF(1.0, 1e-5, n_val).sensitivity == 1 / n_val
    # Replace one: at most sqrt(2)/n' (the paper's replace-one bound is 2/m).
    replaced = dpmerf.embedding(
        feature_map, np.concatenate([x[1:], [[0.0, 9.0]]]), np.concatenate([y[1:], [1 - y[0]]]), n_val
    )
    assert np.linalg.norm(replaced - exact) <= math.sqrt(2) / n_val + 1e-12


def write_block(tmp_path, x, y, name="val.npz"):
    save_npz(tmp_path / name, x=x[None], y=y[None], seeds=np.array([0]))
    return tmp_path / name


def test_dpmerf_release_has_the_noise_the_ledger_states(tmp_path):
    import opendp.prelude as dp

    x, y = blobs(300, 3)
    feature_map = rff.make_map(x, 4000, np.random.default_rng(0))
    save_npz(tmp_path / "maps.npz", seeds=np.array([0]), **rff.stack([feature_map]))
    plan = DPMERF(1.0, 1e-5, 300)
    dpmerf_method.dpmerf_release(
        write_block(tmp_path, x, y),
        tmp_path / "maps.npz",
        tmp_path / "release.npz",
        tmp_path / "release.ledger.csv",
        "toy",
        plan.param(),
    )
    book = ledger.load(tmp_path / "release.ledger.csv")
    row = book.iloc[0]
    assert (row.mechanism, row.neighbours, row.eps_spent, row.delta_spent) == ("dp-merf", mechanisms.RECORD, 1.0, 1e-5)
    assert row.sensitivity == pytest.approx(1 / 300)
    # The std the ledger states makes the Gaussian mechanism (1, 1e-5)-DP by OpenDP's accountant,
    # and is the smallest that does (to its binary search's precision).
    dp.enable_features("contrib")
    domain, metric = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)

    def spent(std):
        gaussian = dp.m.make_gaussian(domain, metric, std)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), 1e-5).map(row.sensitivity)[0]

    assert spent(row.scale) <= 1.0 < spent(0.99 * row.scale)
    # The release is the exact embedding plus noise of that std.
    noise = load_npz(tmp_path / "release.npz")["answers"][0] - dpmerf.embedding(feature_map, x, y, 300)
    assert noise.shape == (4001, 2)
    assert noise.std() == pytest.approx(row.scale, rel=0.03) and abs(noise.mean()) < 3 * row.scale / 90


def analytic_gaussian_std(eps, delta, sensitivity):
    """Balle and Wang (2018), Thm. 8: the smallest std making the Gaussian mechanism (eps, delta)-DP
    solves Phi(D / 2s - eps s / D) - e^eps Phi(-D / 2s - eps s / D) = delta (decreasing in s)."""

    def excess(std):
        a, b = sensitivity / (2 * std), eps * std / sensitivity
        return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b) - delta

    return optimize.brentq(excess, 1e-6 * sensitivity, 1e4 * sensitivity, xtol=1e-15 * sensitivity, rtol=1e-12)


def test_analytic_gaussian_std_meets_delta_by_the_privacy_loss():
    """The closed form checked against its definition: with std s, the privacy loss of N(0, s^2)
    against N(D, s^2) is N(m, 2m), m = D^2 / 2s^2, and delta(eps) = E[(1 - e^(eps - L))+],
    integrated numerically; 1 % less std spends more than delta."""

    def hockey_stick(eps, std, sensitivity):
        m = sensitivity**2 / (2 * std**2)
        loss = stats.norm(m, math.sqrt(2 * m))
        return integrate.quad(lambda v: (1 - math.exp(eps - v)) * loss.pdf(v), eps, m + 40 * math.sqrt(2 * m))[0]

    for eps, delta, sensitivity in [(1.0, 1e-5, 1.0), (0.1, 1e-3, 0.01), (3.0, 1e-6, 2.0)]:
        std = analytic_gaussian_std(eps, delta, sensitivity)
        assert hockey_stick(eps, std, sensitivity) == pytest.approx(delta, rel=1e-5)
        assert hockey_stick(eps, 0.99 * std, sensitivity) > 1.05 * delta


@pytest.mark.parametrize(
    "eps, delta, n_val", [(1.0, 1e-5, 300), (0.5, 1e-6, 1), (0.1, 1e-5, 2000), (0.01, 1e-5, 10), (4.0, 1e-5, 1000)]
)
def test_dpmerf_noise_lies_between_the_analytic_and_the_classical_gaussian(eps, delta, n_val):
    """An independent reference for OpenDP's calibration: no std below the analytic Gaussian
    mechanism's makes the release (eps, delta)-DP, and the classical D sqrt(2 ln(1.25 / delta)) / eps
    (Dwork and Roth, Thm. A.1) does for eps <= 1 (not above: no upper bound at eps = 4); the zCDP
    route lands less than 20 % above the first (5-15 % here)."""
    plan = DPMERF(eps, delta, n_val)
    std, sensitivity = plan.noise_std, 1 / n_val
    assert plan.ledger_fields()["scale"] == std
    lower = analytic_gaussian_std(eps, delta, sensitivity)
    assert lower < std < 1.2 * lower
    if eps <= 1:
        assert std < sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / eps


def test_generator_matches_a_toy_embedding():
    maps, releases, data = [], [], []
    for seed in range(2):
        x, y = blobs(1000, seed)
        feature_map = rff.make_map(x, 500, np.random.default_rng(seed))
        maps.append(feature_map)
        releases.append(dpmerf.embedding(feature_map, x, y, 1000))
        data.append((x, y))
    maps, releases = rff.stack(maps), np.stack(releases)
    model, loss = train_generators(releases, maps, [64, 64], 16, 600, 256, 1e-3, [1, 2])
    assert (loss < 0.01).all()
    x, y = generate(model, maps, releases, 2000, [3, 4], [np.random.default_rng(s) for s in (5, 6)])
    for b, (real_x, real_y) in enumerate(data):
        assert y[b].mean() == pytest.approx(real_y.mean(), abs=0.04)
        for c in (0, 1):
            assert np.allclose(x[b][y[b] == c].mean(axis=0), real_x[real_y == c].mean(axis=0), atol=0.15)
        synthetic = dpmerf.embedding(rff.unstack(maps, b), x[b], y[b], 2000)
        assert np.linalg.norm(synthetic - releases[b]) < 0.05 * np.linalg.norm(releases[b])


def test_generators_do_not_depend_on_their_block():
    x, y = blobs(500, 0)
    feature_map = rff.make_map(x, 64, np.random.default_rng(0))
    release = dpmerf.embedding(feature_map, x, y, 500)
    alone = train_generators(release[None], rff.stack([feature_map]), [16], 4, 20, 32, 1e-3, [7])[0]
    block = train_generators(np.stack([release] * 3), rff.stack([feature_map] * 3), [16], 4, 20, 32, 1e-3, [9, 7, 8])[0]
    assert all(np.array_equal(alone[k][0], block[k][1]) for k in alone if k.startswith("p"))


@pytest.mark.parametrize("shape", [(3, 2, 32, 5), (2, 2, 37, 3), (1, 2, 128, 2)])
def test_the_generators_mean_features_and_gradient_are_autograds_bit_for_bit(shape):
    """Its gradient reuses the forward pass's cos and sin; every float is autograd's own, on
    sample counts and widths that fill SIMD vectors and that leave odd tails."""
    b, classes, n, d = shape
    g = torch.Generator().manual_seed(n)
    feature_map = {
        "mean": torch.randn(b, 1, d, generator=g),
        "std": torch.rand(b, 1, d, generator=g) + 0.5,
        "omega": torch.randn(b, 1, d, 2 * n + 1, generator=g),
    }
    x = torch.randn(shape, generator=g) * 3
    target = torch.randn(b, classes, 2 * (2 * n + 1), generator=g)
    results = []
    for mean_features in (autograd_mean_features, generator.mean_features):
        records = x.clone().requires_grad_()
        phi = mean_features(feature_map, records)
        (gradient,) = torch.autograd.grad(((target - phi) ** 2).sum(), records)
        results.append((phi.detach(), gradient))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])
    assert results[0][1].abs().max() > 0


def test_generators_trained_through_autograds_gradient_are_the_same_bit_for_bit(monkeypatch):
    x, y = blobs(500, 0, d=3)
    maps = rff.stack([rff.make_map(x, 102, np.random.default_rng(k)) for k in (50, 51)])
    releases = np.stack([dpmerf.embedding(rff.unstack(maps, b), x, y, 500) for b in range(2)])
    trained = train_generators(releases, maps, [16, 16], 4, 30, 33, 1e-2, [3, 4])
    monkeypatch.setattr(generator, "mean_features", autograd_mean_features)
    reference = train_generators(releases, maps, [16, 16], 4, 30, 33, 1e-2, [3, 4])
    assert all(np.array_equal(trained[0][k], reference[0][k]) for k in trained[0])
    assert np.array_equal(trained[1], reference[1])


def toy_table(n=2000, seed=0):
    """Three features, the first two tied to the label, on bins of a shifted source."""
    g = np.random.default_rng(seed)
    y = g.integers(0, 2, n)
    x = g.normal(size=(n, 3)) + np.outer(y, [1.5, -1.0, 0.0])
    edges = binning.make_bins(g.normal(size=(n, 3)) + 0.3, 5)
    return x, y, edges


@pytest.mark.slow
def test_aim_without_noise_reproduces_its_measured_marginals():
    x, y, edges = toy_table()
    model, spent = aim.fit(x, y, edges, math.inf)
    assert math.isinf(spent) and set(model.cliques) == set(aim.workload(3))
    ids = binning.feature_bin_ids(edges, x)
    sizes = binning.bin_counts(edges).tolist() + [2]
    counts = [joint_counts(ids[:, j], y, sizes[j]) for j in range(3)]
    for clique, measured in zip(aim.workload(3), counts):
        assert np.allclose(model.project(clique).datavector(flatten=False), measured, atol=1e-6)
    # Records drawn from the model follow those marginals.
    records, labels = aim.synthesize(model, sizes, 20000, np.random.default_rng(1))
    for j, measured in enumerate(counts):
        assert np.abs(joint_counts(records[:, j], labels, sizes[j]) / 20000 - measured / len(y)).max() < 0.015


def joint_counts(ids, y, size):
    joint = np.zeros((size, 2))
    np.add.at(joint, (ids, y), 1)
    return joint


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", aim.ALGORITHMS)
def test_aim_with_noise_spends_what_opendp_accounts_and_releases_no_null_category(algorithm):
    x, y, edges = toy_table(800, 2)
    model, spent = aim.fit(x[:, :2], y, edges[:2], 0.2, algorithm)  # small: the nulls get more mass
    assert spent == pytest.approx(0.2) and spent <= 0.2
    if algorithm == "mst":  # a spanning tree of pairs over the three columns
        assert len(model.cliques) == 2 and all(len(c) == 2 for c in model.cliques)
        assert set().union(*model.cliques) == set(aim.columns(2))
    # OpenDP adds a null category to every column; the released records never hold it.
    assert [model.domain[c] for c in aim.columns(2)] == [len(edges[0]) + 2, len(edges[1]) + 2, 3]
    sizes = binning.bin_counts(edges[:2]).tolist() + [2]
    records, labels = aim.synthesize(model, sizes, 30000, np.random.default_rng(0))
    assert records.shape == (30000, 2) and (records < np.array(sizes[:2])).all() and set(labels) <= {0, 1}
    # They follow the model's joint distribution conditioned on no null category.
    joint = np.asarray(model.project(aim.columns(2)).datavector(flatten=False))
    exact = joint[: sizes[0], : sizes[1], :2] / joint[: sizes[0], : sizes[1], :2].sum()
    drawn = np.zeros(exact.shape)
    np.add.at(drawn, (records[:, 0], records[:, 1], labels), 1 / len(labels))
    assert np.abs(drawn - exact).max() < 0.015  # over 5 sampling stds of any cell


@pytest.mark.slow
def test_aim_builds_opendps_measurement_once_per_block_and_releases_each_runs_own_table():
    # Two runs on the same bins share OpenDP's measurement (its one-way scale search is about half
    # of a release); each release goes through its own compositor on its own records, so the
    # models follow their own data: label rates 0.9 and 0.1 (noise scale 6 on counts of 2000).
    _, _, edges = toy_table(2000, 0)
    aim._MEASUREMENTS.clear()
    models = []
    for rate in (0.9, 0.1):
        g = np.random.default_rng(int(rate * 10))
        y = (g.random(2000) < rate).astype(int)
        x = g.normal(size=(2000, 2)) + np.outer(y, [1.0, -1.0])
        model, spent = aim.fit(x, y, edges[:2], 1.0)
        assert spent == pytest.approx(1.0) and spent <= 1.0
        models.append(model)
        if rate == 0.9:
            shared = next(iter(aim._MEASUREMENTS.values()))[1]
    assert len(aim._MEASUREMENTS) == 1 and next(iter(aim._MEASUREMENTS.values()))[1] is shared
    for model, rate in zip(models, (0.9, 0.1)):
        label = np.asarray(model.project((aim.LABEL,)).datavector())[:2]
        assert abs(label[1] / label.sum() - rate) < 0.03
    # Other bins or another eps get their own measurement.
    aim.fit(x, y, edges[:2], 0.5)
    aim.fit(x[:, :1], y, edges[:1], 1.0)
    assert len(aim._MEASUREMENTS) == 3


def test_debinning_draws_source_values_from_the_same_bin():
    g = np.random.default_rng(4)
    source = np.stack([g.normal(size=1000), g.choice([0.0, 1.0, 2.0], 1000)], axis=1)
    edges = binning.make_bins(source, 6)
    ids = np.stack([g.integers(0, len(e) + 1, 5000) for e in edges], axis=1)
    values = aim.debin(ids, source, edges, g)
    assert np.array_equal(binning.feature_bin_ids(edges, values), ids)
    assert set(values[:, 1]) == {0.0, 1.0, 2.0} and np.isin(values[:, 0], source[:, 0]).all()


def test_mmd_query_takes_the_marginals_share_and_composes_with_the_error_queries(tmp_path):
    embedding = mechanisms.MeanEmbedding(1.5, 1e-5, 2500, 2)
    assert embedding.query_cost() == (0.5, 1e-5) and embedding.planned_queries == 3
    errors = mechanisms.Counts(1.5, 1e-5, 10, 2, True)
    book = ledger.record(tmp_path / "0.csv", None, "C", [0], "embedding", "oracle_embedding", embedding)
    for t in range(2):
        book = ledger.record(tmp_path / f"{t + 1}.csv", book, "C", [0], f"errors_t{t}", "oracle_errors", errors)
    assert (book.eps_total.iloc[-1], book.delta_total.iloc[-1]) == pytest.approx((1.5, 1e-5))
    assert list(book.mechanism) == ["rff-embedding", "counts", "counts"]
    with pytest.raises(ledger.BudgetError, match="planned for 3"):
        ledger.record(tmp_path / "3.csv", book, "C", [0], "errors_t2", "oracle_errors", errors)
    # Without noise nothing is spent but infinity; the Gaussian releases need delta > 0 otherwise.
    assert mechanisms.MeanEmbedding(math.inf, 0.0, 2500, 2).query_cost() == (math.inf, 0.0)
    assert calibration.gaussian_noise_std(math.inf, 0.0, 1.0) == 0.0
    with pytest.raises(ValueError, match="delta > 0"):
        DPMERF(1.0, 0.0, 100)
    assert AIM(1.0, 1e-5).query_cost() == (1.0, 0.0)


def test_mmd_reweighting_step_weights_the_source_towards_the_target(tmp_path):
    x, _ = blobs(1500, 5)
    source_x = np.concatenate([x[:750] - 1.0, x[750:] + 1.0])
    save_npz(tmp_path / "source.npz", x=source_x[None], seeds=np.array([0]))
    learner.feature_maps(tmp_path / "source.npz", tmp_path / "maps.npz", "toy", 500)
    plan = mechanisms.MeanEmbedding(math.inf, 0.0, 750, 2)
    curator.oracle_embedding(
        write_block(tmp_path, x[:750] - 1.0, np.zeros(750, dtype=int)),
        tmp_path / "maps.npz",
        tmp_path / "embedding.npz",
        tmp_path / "embedding.ledger.csv",
        "toy",
        plan.param(),
    )
    histogram = mechanisms.Counts(math.inf, 0.0, 2, 2, True).param()
    learner.reweight_source(
        tmp_path / "source.npz",
        tmp_path / "weights.npz",
        tmp_path / "bins.npz",
        4,
        SOLVER,
        histogram,
        embedding_path=tmp_path / "embedding.npz",
        maps_path=tmp_path / "maps.npz",
    )
    weights = load_npz(tmp_path / "weights.npz")["weights"][0]
    # The target is the source's first half: the weight goes there (the ridge keeps some on the
    # second half, which overlaps the first at the kernel's width).
    assert weights[:750].mean() > 2 * weights[750:].mean()
    assert ledger.load(tmp_path / "embedding.ledger.csv")["query"].tolist() == ["embedding"]


def test_aim_ends_on_the_remainder_of_its_budget_instead_of_failing():
    class Refused(Exception):
        pass

    def select(**kwargs):
        raise Refused("scale (-0.5) must not be finite and non-negative")

    guarded = aim._stop_on_exhausted_budget(select, Refused)
    assert guarded(d_out=5.55e-18, d_measure=5.0e-17) is None  # what dataset A met at eps = 1
    with pytest.raises(Refused):
        guarded(d_out=0.01, d_measure=0.09)


def test_mst_selects_within_a_budget_its_rounding_cannot_exceed():
    given = []
    margined = aim._select_within_budget(lambda *args, d_out, **kwargs: given.append(d_out))
    margined("domain", d_out=0.004999999999999996, num_selections=25)
    assert 0.004999999999999996 * (1 - 2e-9) < given[0] < 0.004999999999999996


def test_the_one_way_scale_search_from_a_floor_finds_the_librarys_scale():
    # Laplace on a sensitivity-1 sum: the smallest scale that passes is 1 / eps. Like OpenDP's
    # one-way marginals, the chain cannot be built at scale 0.
    import opendp.prelude as dp

    dp.enable_features("contrib")
    built = []

    def laplace(scale):
        if scale <= 0:
            raise ValueError("scale must be positive")
        built.append(scale)
        return dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale)

    from_floor = aim._search_from_floor(dp.binary_search_param)
    for eps in (0.25, 2.0, 1e8):  # 1e8: below the floor, where the unbounded search takes over
        built.clear()
        library = dp.binary_search_param(laplace, 1.0, eps, T=float)
        unbounded = len(built)
        built.clear()
        assert from_floor(laplace, 1.0, eps, T=float) == library == pytest.approx(1 / eps)
        if eps < 1e6:
            assert len(built) < 100 < unbounded and min(built) >= aim.SEARCH_FLOOR


def test_a_scale_found_before_is_taken_where_it_is_still_the_boundary():
    # Laplace on a sensitivity-1 value: the smallest scale that passes eps is 1 / eps, the float just
    # below it fails. A second search of the same (d_in, d_out) builds the remembered scale and the
    # float below it, then the chain. The Gaussian under the same numbers (d_out read as rho,
    # boundary 1 / sqrt(2 rho)) is searched anew. Every answer is the library's.
    import opendp.prelude as dp

    dp.enable_features("contrib")
    built = []

    def noise(make):
        def chain(scale):
            if scale <= 0:
                raise ValueError("scale must be positive")
            built.append(scale)
            return make(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale)

        return chain

    laplace, gaussian = noise(dp.m.make_laplace), noise(dp.m.make_gaussian)
    remembering = aim._remembering_boundaries(aim._search_from_floor(dp.binary_search_param))
    for eps in (0.25, 8.0):  # at eps 2 both boundaries are 0.5, and the remembered one serves
        library = dp.binary_search_param(laplace, 1.0, eps, bounds=(1e-6, None), T=float)
        built.clear()
        remembering(laplace, 1.0, eps, T=float)
        assert len(built) > 30 and built[-1] == library == pytest.approx(1 / eps)
        built.clear()
        remembering(laplace, 1.0, eps, T=float)
        assert built == [library, math.nextafter(library, 0), library]
        built.clear()
        remembering(gaussian, 1.0, eps, T=float)
        assert len(built) > 30 and built[-1] == pytest.approx(1 / math.sqrt(2 * eps))


@pytest.mark.slow
def test_mst_releases_a_spanning_tree_on_many_columns_at_small_eps():
    # 25 features and the label at eps = 0.1: without the margin OpenDP's MST refuses its own
    # selection (dataset E at eps = 0.1 in the comparison).
    g = np.random.default_rng(0)
    y = g.integers(0, 2, 700)
    x = g.normal(size=(700, 25)) + 0.5 * y[:, None]
    model, spent = aim.fit(x, y, binning.make_bins(g.normal(size=(700, 25)), 2), 0.1, "mst")
    assert spent <= 0.1 and len(model.cliques) == 25 and all(len(c) == 2 for c in model.cliques)
    assert set().union(*model.cliques) == set(aim.columns(25))


def test_without_released_counts_the_weighted_source_supplies_them(tmp_path):
    # Under `counts` with Pb. 1 by MMD no bin counts are released: the learner divides the error
    # counts by n' times the weighted source's bin masses. On a source equal to the target with
    # uniform weights, those are the true counts, and the labels are the same as with released ones.
    g = np.random.default_rng(6)
    x = g.normal(size=(400, 3))
    truth = (x[:, 0] + x[:, 1] > 0).astype(int)
    edges = binning.make_bins(x, 4)
    ids, n_bins = binning.bin_ids(edges, x), binning.bin_counts(edges).sum()
    plan = mechanisms.Counts(math.inf, 0.0, 3, 2, True)
    seeds = np.array([0])
    save_npz(tmp_path / "source.npz", x=x[None], seeds=seeds)
    save_npz(tmp_path / "weights.npz", weights=np.ones((1, 400)), seeds=seeds)
    save_npz(tmp_path / "bins.npz", seeds=seeds, **binning.pack([edges]))
    save_npz(tmp_path / "h0.npz", seeds=seeds, **mlp.constant_model(1, 1))
    blocks.save_answers(tmp_path / "errors.npz", [plan.release_errors(ids, n_bins, truth != 1, g)], seeds)
    blocks.save_answers(tmp_path / "counts.npz", [plan.release_counts(ids, n_bins, g)], seeds)
    common = dict(
        source_path=tmp_path / "source.npz",
        weights_path=tmp_path / "weights.npz",
        bins_path=tmp_path / "bins.npz",
        model_paths=[tmp_path / "h0.npz"],
        answer_paths=[tmp_path / "errors.npz"],
        solver=SOLVER,
        mechanism=plan.param(),
    )
    learner.estimate_labels(out_path=tmp_path / "released.npz", counts_path=tmp_path / "counts.npz", **common)
    learner.estimate_labels(out_path=tmp_path / "estimated.npz", n_val=400, **common)
    released, estimated = (load_npz(tmp_path / f)["relaxed"] for f in ("released.npz", "estimated.npz"))
    assert np.allclose(released, estimated)


def test_the_train_dpmerf_step_trains_one_network_per_seed_on_its_samples(tmp_path):
    """Each seed's network learns its own samples: seed 0's blobs as drawn, seed 1's with the labels
    flipped. On fresh blobs (Bayes error about 1e-5) the first labels ~all right, the second ~all
    wrong; a network trained on the other seed's samples would not."""
    (x0, y0), (x1, y1) = blobs(600, 7), blobs(600, 8)
    save_npz(tmp_path / "samples.npz", x=np.stack([x0, x1]), y=np.stack([y0, 1 - y1]), seeds=np.array([3, 9]))
    training = {"epochs": 30, "batch_size": 64, "lr": 1e-2, "holdout": 0.2, "patience": 5}
    run = {
        "samples_path": tmp_path / "samples.npz",
        "out_path": tmp_path / "model.npz",
        "init_key": ["dpmerf", "A", "1"],
    }
    dpmerf_method.train_dpmerf([run], {"hidden": [16]}, training, "cpu", 1)
    model = load_npz(tmp_path / "model.npz")
    np.testing.assert_array_equal(model["seeds"], [3, 9])
    x, y = blobs(2000, 10)
    accuracy = (mlp.predict(model, np.stack([x, x])) == y).mean(axis=1)
    assert accuracy[0] > 0.99 and accuracy[1] < 0.01
