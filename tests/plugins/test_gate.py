"""The gate a plug-in method passes (expril.plugins.gate): one deliberately miswired plug-in per
refusal, and the registered methods pass it."""

import functools
import math

import pandas as pd
import pytest

from expril.plugins import gate, registry
from expril.plugins.base import Method, Step
from expril.plugins.context import Context
from expril.privacy import ledger, mechanisms
from expril.privacy.gaussian import DPMERF
from expril.workflow import currency, grids
from harness import PLUGIN_CONFIG as CONFIG
from harness import ROOT

GRID = grids.load(ROOT / "config/tuning.yaml")
CURRENCIES = {
    "approx": {"delta": 1e-5, "relation": mechanisms.RECORD, "mechanisms": {"llp": "gaussian-counts"}},
    "pure": {"delta": 0, "relation": mechanisms.RECORD, "mechanisms": {"llp": "counts"}},
}


def release(val_path, out_path, ledger_path, name, mechanism):
    pass


def learn(source_path, release_path, out_path):
    pass


def unaudited(mechanism, x, y, keys):
    raise AssertionError("these tests check what a method declares: its audit (test_gate_audit.py) is not run")


class Toy(Method):
    """A correct plug-in: one release of Laplace counts at the run's eps, one learner step."""

    name = "llp"  # a name with a tuning entry
    display = "Toy"
    steps = (
        Step("toy_release", release, "r.npz", {"val_path": "target_val"}, release=True, audit=unaudited),
        Step("toy_learn", learn, "model.npz", {"source_path": "source", "release_path": "toy_release"}),
    )

    def mechanism(self, ctx):
        return mechanisms.get("counts")(ctx.eps, ctx.delta, ctx.features, 1, False)


def miswired(**attributes):
    return type("Miswired", (Toy,), attributes)()


def context(eps="1", family="llp", config=CONFIG):
    return Context(config, GRID, family, "A", "0-1", eps, "", functools.partial(str))


def answer(val_path, bins_path, out_path, ledger_path, name, mechanism):
    pass


class Chain(Method):
    """A correct plug-in with several releases, as ExPriL by MMD's chain: a Gaussian embedding with
    eps / (T+1) and delta, then T error queries of `counts` planned for T iterations with an IS step
    (each eps / (T+1)); two models reported from one chain."""

    name = "mmd"
    display = "Chain"
    steps = (
        Step(
            "chain_embedding",
            release,
            "e.npz",
            {"val_path": "target_val"},
            release=True,
            audit=unaudited,
            mechanism=lambda ctx: mechanisms.MeanEmbedding(ctx.eps, ctx.delta, 300, 2),
            queries=lambda ctx: 1,
        ),
        Step(
            "chain_bins",
            learn,
            {"out_path": "w.npz", "bins_path": "b.npz"},
            {"source_path": "source", "release_path": "chain_embedding"},
        ),
        Step(
            "chain_errors",
            answer,
            "{variant}/errors_t{t}.npz",
            {"val_path": "target_val", "bins_path": lambda ctx: "b.npz"},
            release=True,
            audit=unaudited,
            queries=lambda ctx: 2,
        ),
        Step(
            "chain_train", learn, "{variant}/model_t{t}.npz", {"source_path": "source", "release_path": "chain_errors"}
        ),
    )

    @property
    def reports(self):
        return {"C-chain": "C (chain)", "I-chain": "I (chain)"}

    def mechanism(self, ctx):
        return mechanisms.get("counts")(ctx.eps, ctx.delta, ctx.features, 2, True)


def miswired_chain(**attributes):
    return type("MiswiredChain", (Chain,), attributes)()


def test_the_registered_methods_pass_the_gate():
    methods = registry.methods()
    assert list(methods) == ["aim", "dpmerf", "dpsgd", "llp", "mmd"]
    for method in methods.values():
        gate.declared(method, GRID)
    gate.declared(Toy(), GRID)
    assert gate.planned(Toy(), context()).eps == 1.0
    # ExPriL by MMD: the embedding (eps / 3, delta) and the T = 2 error queries (eps / 3 each)
    config = CONFIG | {"iterations": 2, "mechanism": "counts"}
    config["benchmarks"] = {"A": CONFIG["benchmarks"]["A"] | {"importance_sampling": True}}
    by_mmd, ctx = methods["mmd"], context(family="mmd", config=config)
    embedding = gate.planned(by_mmd, ctx, by_mmd.step("oracle_embedding"))
    assert (embedding.name, embedding.query_cost(), embedding.n_val) == ("rff-embedding", (1 / 3, 1e-5), 300)
    for rule in ("mmd_errors", "mmd_reweight", "mmd_labels"):
        plan = gate.planned(by_mmd, ctx, by_mmd.step(rule))
        assert (plan.name, plan.query_cost()) == ("counts", (1 / 3, 0.0))


def test_a_method_with_several_releases_and_models():
    chain = Chain()
    gate.declared(chain, GRID)
    assert [s.rule for s in chain.releases] == ["chain_embedding", "chain_errors"]
    assert chain.step("chain_errors").fields == ["t", "variant"] and chain.step("chain_bins").fields == []
    assert chain.step("chain_bins").files == {"out_path": "w.npz", "bins_path": "b.npz"}
    ctx = Context(CONFIG, GRID, "mmd", "A", "0-1", "1", "", functools.partial(str), fields={"variant": "C", "t": "1"})
    assert chain.output(chain.step("chain_errors"), ctx) == "res/oracle/A/0-1/eps1/mmd/C/errors_t1.npz"
    assert chain.output(chain.step("chain_train"), ctx, t=2) == "res/learner/A/0-1/eps1/mmd/C/model_t2.npz"
    assert chain.output(chain.step("chain_bins"), ctx, "bins_path", "~bandwidth=0.5") == (
        "res/learner/A/0-1/eps1/mmd~bandwidth=0.5/b.npz"
    )
    # each release gets its own plan, a learner step the method's
    assert gate.planned(chain, context(family="mmd"), chain.step("chain_embedding")).name == "rff-embedding"
    assert gate.planned(chain, context(family="mmd"), chain.step("chain_errors")).name == "counts"
    assert gate.planned(chain, context(family="mmd"), chain.step("chain_train")).name == "counts"
    assert list(chain.reports) == ["C-chain", "I-chain"] and list(Toy().reports) == ["llp"]


def test_a_release_that_writes_no_ledger_row_is_refused():
    def silent(val_path, out_path, name, mechanism):
        pass

    steps = (
        Step("toy_release", silent, "r.npz", {"val_path": "target_val"}, release=True, audit=unaudited),
        Toy.steps[1],
    )
    with pytest.raises(gate.Refused, match="'llp' .* its release toy_release writes no ledger row"):
        gate.declared(miswired(steps=steps), GRID)
    with pytest.raises(gate.Refused, match="it has no release step"):
        gate.declared(miswired(steps=Toy.steps[1:]), GRID)
    # with several releases, each must write its ledger row
    steps = (
        Chain.steps[0],
        Chain.steps[1],
        Step("chain_errors", silent, "e.npz", {"val_path": "target_val"}, release=True, audit=unaudited),
    )
    with pytest.raises(gate.Refused, match="'mmd' .* its release chain_errors writes no ledger row"):
        gate.declared(miswired_chain(steps=steps), GRID)


def test_a_chain_whose_releases_compose_above_the_runs_budget_is_refused():
    """Each release within the run's eps, but a run asks 3 error queries of a plan for 2 iterations:
    eps / 3 + 3 eps / 3 > eps; and a second Gaussian release adds its delta to the embedding's."""
    errors = Chain.steps[2]
    three = Step(
        errors.rule, errors.run, errors.file, errors.inputs, release=True, audit=unaudited, queries=lambda ctx: 3
    )
    over = miswired_chain(steps=(*Chain.steps[:2], three, Chain.steps[3]))
    with pytest.raises(
        gate.Refused,
        match=r"'mmd' .* on A at eps 1 its releases' queries in a run compose to spend "
        r"\(eps, delta\) = \(1.33333, 1e-05\)",
    ):
        gate.planned(over, context(family="mmd"))
    # the refusal comes whichever step's plan is asked for: the run's plan is checked as a whole
    with pytest.raises(gate.Refused, match="compose to spend"):
        gate.planned(over, context(family="mmd"), over.step("chain_embedding"))
    gaussian = Step(
        errors.rule,
        errors.run,
        errors.file,
        errors.inputs,
        release=True,
        audit=unaudited,
        mechanism=lambda ctx: mechanisms.MeanEmbedding(ctx.eps, ctx.delta, 300, 2),
        queries=lambda ctx: 2,
    )
    deltas = miswired_chain(steps=(*Chain.steps[:2], gaussian, Chain.steps[3]))
    with pytest.raises(
        gate.Refused, match=r"compose to spend \(eps, delta\) = \(1, 3e-05\), above the run's \(1, 1e-05\)"
    ):
        gate.planned(deltas, context(family="mmd"))
    # one release planned above the run's eps on its own
    wide = Step(
        "chain_embedding",
        release,
        "e.npz",
        {"val_path": "target_val"},
        release=True,
        audit=unaudited,
        mechanism=lambda ctx: mechanisms.MeanEmbedding(3 * ctx.eps, ctx.delta, 300, 2),
        queries=lambda ctx: 1,
    )
    with pytest.raises(gate.Refused, match=r"its release chain_embedding plans to spend \(eps, delta\) = \(3, 1e-05\)"):
        gate.planned(miswired_chain(steps=(wide, *Chain.steps[1:])), context(family="mmd"))


def test_a_chain_release_that_is_no_registered_mechanism_is_refused():
    class Custom(mechanisms.MeanEmbedding):
        name = "custom-embedding"

    first = Step(
        "chain_embedding",
        release,
        "e.npz",
        {"val_path": "target_val"},
        release=True,
        audit=unaudited,
        mechanism=lambda ctx: Custom(ctx.eps, ctx.delta, 300, 2),
    )
    with pytest.raises(gate.Refused, match="its release chain_embedding applies .* not a registered mechanism"):
        gate.planned(miswired_chain(steps=(first, *Chain.steps[1:])), context(family="mmd"))


def test_a_chain_learner_step_given_a_list_with_a_curator_file_is_refused():
    step = Chain.steps[3]
    with pytest.raises(gate.Refused, match="chain_train reads res/curator/A/0-1/target_val.npz"):
        gate.tainted_read(Chain(), step, ["res/learner/A/0-1/h0.npz", "res/curator/A/0-1/target_val.npz"], "res")
    gate.tainted_read(Chain(), step, ["res/learner/A/0-1/h0.npz", "res/oracle/A/0-1/eps1/mmd/C/errors_t0.npz"], "res")


def test_a_release_whose_job_wrote_no_ledger_row_for_a_seed_fails(tmp_path):
    book = tmp_path / "r.ledger.csv"
    with pytest.raises(gate.Refused, match=r"wrote no ledger row for seeds \[0, 1\]"):
        gate.recorded(Toy(), book, [0, 1], 1.0, 1e-5)
    plan = mechanisms.get("counts")(1.0, 1e-5, 2, 1, False)
    ledger.record(book, None, "A", [0], "q", "toy_release", plan)
    with pytest.raises(gate.Refused, match=r"no ledger row for seeds \[1\]"):
        gate.recorded(Toy(), book, [0, 1], 1.0, 1e-5)
    book.unlink()
    rows = ledger.record(book, None, "A", [0, 1], "q", "toy_release", plan)
    ledger.record(book, rows, "A", [0, 1], "r", "toy_release", plan)  # the plan's two queries: eps 1
    gate.recorded(Toy(), book, [0, 1], 1.0, 1e-5)
    # A ledger whose runs total more than the run's budget: the plug-in planned with another eps.
    with pytest.raises(gate.Refused, match=r"records \(eps, delta\) = \(1, 0\) for seed 0, above the run's \(0.5"):
        gate.recorded(Toy(), book, [0, 1], 0.5, 1e-5)


def test_a_release_planned_above_the_runs_eps_or_delta_is_refused():
    double = miswired(mechanism=lambda self, ctx: mechanisms.get("counts")(2 * ctx.eps, 0.0, 2, 1, False))
    with pytest.raises(gate.Refused, match=r"on A at eps 1 .* \(eps, delta\) = \(2, 0\), above the run's \(1, 1e-05\)"):
        gate.planned(double, context())
    wide = miswired(mechanism=lambda self, ctx: DPMERF(ctx.eps, 10 * ctx.delta, 300))
    with pytest.raises(gate.Refused, match=r"\(1, 0.0001\), above the run's \(1, 1e-05\)"):
        gate.planned(wide, context())
    # eps = inf: no noise, any spend is within the run's
    assert math.isinf(gate.planned(Toy(), context("inf")).eps)


def test_a_release_that_is_no_registered_mechanism_is_refused():
    class Custom(mechanisms.Counts):
        name = "custom"

    with pytest.raises(gate.Refused, match="not a registered mechanism"):
        gate.planned(miswired(mechanism=lambda self, ctx: Custom(ctx.eps, 0.0, 2, 1, False)), context())


def test_a_learner_step_that_reads_the_curators_data_is_refused():
    reads = Step("toy_learn", learn, "model.npz", {"source_path": "target_val", "release_path": "toy_release"})
    with pytest.raises(gate.Refused, match="its learner step toy_learn reads target_val, the curator's data"):
        gate.declared(miswired(steps=(Toy.steps[0], reads)), GRID)
    # a function input is checked on the path it gives, when the workflow plans the job
    with pytest.raises(gate.Refused, match="toy_learn reads res/curator/A/0-1/target_val.npz"):
        gate.tainted_read(Toy(), reads, "res/curator/A/0-1/target_val.npz", "res")
    gate.tainted_read(Toy(), reads, "res/data/A/0-1/source.npz", "res")
    gate.tainted_read(Toy(), Toy.steps[0], "res/curator/A/0-1/target_val.npz", "res")  # the release may


def test_a_method_without_a_tuning_entry_is_refused():
    with pytest.raises(gate.Refused, match="'toy' .* no tuning entry: add `toy:` under `families:`"):
        gate.declared(miswired(name="toy"), GRID)


def test_a_step_wired_to_nothing_is_refused():
    unknown = Step("toy_learn", learn, "model.npz", {"source_path": "source", "release_path": "toy"})
    with pytest.raises(gate.Refused, match="step toy_learn reads 'toy', neither a shared file nor an earlier step"):
        gate.declared(miswired(steps=(Toy.steps[0], unknown)), GRID)

    def needs(source_path, release_path, out_path, temperature):
        pass

    wanting = Step("toy_learn", needs, "model.npz", {"source_path": "source", "release_path": "toy_release"})
    with pytest.raises(gate.Refused, match="toy_learn's function needs temperature, which nothing gives it"):
        gate.declared(miswired(steps=(Toy.steps[0], wanting)), GRID)
    with pytest.raises(gate.Refused, match="lower-case letters and digits"):
        gate.declared(miswired(name="My-Method"), GRID)


def test_registering_is_for_methods_and_once_per_name():
    with pytest.raises(TypeError, match="an instance of expril.plugins.base.Method"):
        registry.register(Toy)
    with pytest.raises(ValueError, match="registers method 'llp', which expril.plugins.llp already registers"):
        registry.methods()
        registry.register(Toy())
    # a compared method reported by two plug-ins
    with pytest.raises(ValueError, match="reports C-mmd, which expril.plugins.mmd already reports"):
        registry.register(type("Other", (Chain,), {"reports": {"C-mmd": "other"}, "name": "other"})())


def test_one_method_is_rerun_against_a_published_study(monkeypatch):
    assert registry.checking().name == "llp"
    monkeypatch.setattr(registry.methods()["aim"], "checks_published", True)
    with pytest.raises(ValueError, match="exactly one plug-in method must set checks_published.*found aim, llp"):
        registry.checking()


def test_a_ledger_row_counts_as_written_only_with_its_seed(tmp_path):
    """gate.recorded reads the ledger's columns as expril.privacy.ledger writes them."""
    book = tmp_path / "r.ledger.csv"
    ledger.record(book, None, "A", [3], "q", "toy_release", mechanisms.get("counts")(1.0, 0.0, 2, 1, False))
    assert {"seed", "eps_total", "delta_total"} <= set(pd.read_csv(book).columns)
    gate.recorded(Toy(), book, [3], 1.0, 0.0)


def test_in_a_currency_a_method_plans_what_the_currency_names_for_it_or_is_refused():
    """A job in a currency (expril.workflow.currency) has its delta; LLP plans the counts mechanism
    the currency names (Laplace `counts` in pure DP, `gaussian-counts` at delta 1e-5); a release
    that applies another mechanism, or protects other neighbours, is refused."""
    config = {
        **CONFIG,
        "epsilons": [1],
        "comparison": {"methods": ["llp"], "headline": "approx", "currencies": CURRENCIES},
    }
    found = currency.currencies(config, registry.reported())
    pure, approx = found["pure"], found["approx"]
    llp = registry.methods()["llp"]
    in_pure = Context(CONFIG, GRID, "llp", "A", "0-1", "1", "", functools.partial(str), pure)
    in_approx = Context(CONFIG, GRID, "llp", "A", "0-1", "1", "", functools.partial(str), approx)
    assert (in_pure.delta, in_pure.mechanism, in_pure.eps_folder) == (0.0, "counts", "1@pure")
    assert gate.planned(llp, in_pure).name == "counts" and gate.planned(llp, in_pure).delta == 0.0
    assert gate.planned(llp, in_approx).name == "gaussian-counts" and gate.planned(llp, in_approx).delta == 1e-5
    with pytest.raises(gate.Refused, match="applies 'counts' where currency 'approx' names 'gaussian-counts'"):
        gate.planned(Toy(), in_approx)

    class Labels(Toy):
        def mechanism(self, ctx):
            return mechanisms.get("dirichlet")(ctx.eps, ctx.delta, ctx.features, 1, False)

    # A currency the configuration check would refuse (dirichlet's relation is not its own).
    loose = currency.Currency("pure", 0.0, mechanisms.RECORD, {"llp": "dirichlet"})
    in_loose = Context(CONFIG, GRID, "llp", "A", "0-1", "1", "", functools.partial(str), loose)
    with pytest.raises(gate.Refused, match="protects neighbours that change one label, not currency 'pure'"):
        gate.planned(Labels(), in_loose)
    no_currency = Context(CONFIG, GRID, "aim", "A", "0-1", "1", "", functools.partial(str), pure)
    with pytest.raises(ValueError, match="aim on A at eps 1: currency 'pure' names no mechanism for it"):
        no_currency.mechanism  # noqa: B018


def test_expril_by_mmd_plans_its_currencys_mechanisms_and_spends_the_runs_budget_once():
    """At (eps, 1e-5) ExPriL by MMD's error queries are the `gaussian-counts` the currency names for
    C-mmd and I-mmd, and its embedding is `zcdp-embedding` (mechanisms.embedding_for them): with rho
    / (T+1) each, the embedding and the T error queries compose in rho to the run's (eps, delta)
    exactly, where a basic-composition embedding (`rff-embedding`) beside them is refused. The
    error queries' bins follow the setting's snr (the `mmd` grid's axis)."""
    by_mmd = registry.methods()["mmd"]
    chains = {"C": "gaussian-counts", "I": "gaussian-counts", "C-mmd": "gaussian-counts", "I-mmd": "gaussian-counts"}
    approx = currency.Currency("approx", 1e-5, mechanisms.RECORD, chains)
    config = CONFIG | {"iterations": 2, "mechanism": "paper", "bins": {"snr": 4, "noiseless": 8, "sized_for": "drawn"}}
    config["benchmarks"] = {"A": CONFIG["benchmarks"]["A"] | {"importance_sampling": True}}
    ctx = Context(config, GRID, "mmd", "A", "0-1", "1", "", functools.partial(str), approx)
    assert ctx.mechanism_for(list(by_mmd.reports)) == "gaussian-counts" and ctx.eps_folder == "1@approx"
    embedding = gate.planned(by_mmd, ctx, by_mmd.step("oracle_embedding"))
    errors = gate.planned(by_mmd, ctx, by_mmd.step("mmd_errors"))
    assert (embedding.name, errors.name, embedding.delta, errors.delta) == (
        "zcdp-embedding",
        "gaussian-counts",
        1e-5,
        1e-5,
    )
    assert embedding.rho == pytest.approx(errors.rho) and embedding.rho_share == pytest.approx(errors.rho_share)
    spent = errors.compose([embedding.cost(), errors.cost(), errors.cost()])
    assert spent[0] == pytest.approx(1.0, rel=1e-9) and spent[0] <= 1.0 and spent[1] == 1e-5
    assert by_mmd.spends("gaussian-counts") == {"gaussian-counts", "zcdp-embedding"}
    # its files carry the currency's tag before their -mmd, its bins the setting's snr
    tuned = Context(config, GRID, "mmd", "A", "0-1", "1", "~snr=16", functools.partial(str), approx)
    assert by_mmd.output(by_mmd.step("oracle_embedding"), tuned) == "res/oracle/A/0-1/eps1@approx-mmd/embedding.npz"
    bins = by_mmd.step("mmd_reweight").params
    gaussian = mechanisms.GaussianCounts
    assert (
        bins(tuned)["q"]
        == tuned.bins_per_feature(16, 2, gaussian)
        != bins(ctx)["q"]
        == ctx.bins_per_feature(4, 2, gaussian)
    )
    # without a currency: the configured `mechanism` (Laplace's paper) beside rff-embedding, untagged
    plain = Context(config, GRID, "mmd", "A", "0-1", "1", "", functools.partial(str))
    assert gate.planned(by_mmd, plain, by_mmd.step("oracle_embedding")).name == "rff-embedding"
    assert gate.planned(by_mmd, plain, by_mmd.step("mmd_errors")).name == "paper"
    assert by_mmd.output(by_mmd.step("oracle_embedding"), plain) == "res/oracle/A/0-1/eps1-mmd/embedding.npz"
    # a plug-in whose embedding ignores the currency's accounting is refused before it could spend
    # (eps, delta) = (1.13561, 2e-05) of a run of (1, 1e-05)
    release = by_mmd.step("oracle_embedding")
    basic = Step(
        release.rule,
        release.run,
        release.file,
        release.inputs,
        release=True,
        audit=unaudited,
        axes=release.axes,
        mechanism=lambda ctx: mechanisms.MeanEmbedding(ctx.eps, ctx.delta, ctx.n_val, 2),
        queries=release.queries,
    )
    miswired_mmd = type("Basic", (type(by_mmd),), {"steps": (basic, *by_mmd.steps[1:])})()
    with pytest.raises(
        gate.Refused, match="its release oracle_embedding applies 'rff-embedding' where currency 'approx' names"
    ):
        gate.planned(miswired_mmd, ctx)
    # a currency that names it nothing
    pure = currency.Currency("pure", 0.0, mechanisms.RECORD, {"C": "counts", "I": "counts"})
    with pytest.raises(ValueError, match="C-mmd, I-mmd on A at eps 1: currency 'pure' names no mechanism"):
        gate.planned(by_mmd, Context(config, GRID, "mmd", "A", "0-1", "1", "", functools.partial(str), pure))


def test_a_chains_last_ledger_holds_its_releases_and_is_checked_against_the_runs_budget(tmp_path):
    """The embedding's row, then the two error queries' rows extending its ledger (as ExPriL by MMD's
    jobs write them): the last ledger composes to (eps, delta) = (1, 1e-5), within a run of (1, 1e-5)
    and refused at eps 0.9."""
    embedding = mechanisms.MeanEmbedding(1.0, 1e-5, 300, 2)
    errors = mechanisms.get("counts")(1.0, 1e-5, 2, 2, True)
    book = ledger.record(tmp_path / "e.ledger.csv", None, "A", [0, 1], "embedding", "chain_embedding", embedding)
    gate.recorded(Chain(), tmp_path / "e.ledger.csv", [0, 1], 1.0, 1e-5)
    book = ledger.record(tmp_path / "t0.ledger.csv", book, "A", [0, 1], "t0", "chain_errors", errors)
    ledger.record(tmp_path / "t1.ledger.csv", book, "A", [0, 1], "t1", "chain_errors", errors)
    last = pd.read_csv(tmp_path / "t1.ledger.csv")
    assert list(last["query"]) == ["embedding"] * 2 + ["t0"] * 2 + ["t1"] * 2
    assert last.eps_total.iloc[-1] == pytest.approx(1.0) and last.delta_total.iloc[-1] == 1e-5
    gate.recorded(Chain(), tmp_path / "t1.ledger.csv", [0, 1], 1.0, 1e-5)
    with pytest.raises(
        gate.Refused, match=r"'mmd' .* records \(eps, delta\) = \(1, 1e-05\) for seed 0, above the run's \(0.9"
    ):
        gate.recorded(Chain(), tmp_path / "t1.ledger.csv", [0, 1], 0.9, 1e-5)
