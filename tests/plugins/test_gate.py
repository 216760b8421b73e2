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
from expril.workflow import currency, grids
from harness import ROOT

GRID = grids.load(ROOT / "config/tuning.yaml")
CONFIG = {
    "results": "res",
    "delta": 1e-5,
    "benchmarks": {"A": {"generator": "clusters", "dim": 2, "n_target": 600, "importance_sampling": False}},
    "val_fraction": 0.5,
    "bins": {"snr": 4, "noiseless": "sqrt"},
}
CURRENCIES = {
    "approx": {"delta": 1e-5, "relation": mechanisms.RECORD, "mechanisms": {"llp": "gaussian-counts"}},
    "pure": {"delta": 0, "relation": mechanisms.RECORD, "mechanisms": {"llp": "counts"}},
}


def release(val_path, out_path, ledger_path, name, mechanism):
    pass


def learn(source_path, release_path, out_path):
    pass


class Toy(Method):
    """A correct plug-in: one release of Laplace counts at the run's eps, one learner step."""

    name = "llp"  # a name with a tuning entry
    display = "Toy"
    steps = (
        Step("toy_release", release, "r.npz", {"val_path": "target_val"}, release=True),
        Step("toy_learn", learn, "model.npz", {"source_path": "source", "release_path": "toy_release"}),
    )

    def mechanism(self, ctx):
        return mechanisms.get("counts")(ctx.eps, ctx.delta, ctx.features, 1, False)


def miswired(**attributes):
    return type("Miswired", (Toy,), attributes)()


def context(eps="1"):
    return Context(CONFIG, GRID, "llp", "A", "0-1", eps, "", functools.partial(str))


def test_the_registered_methods_pass_the_gate():
    methods = registry.methods()
    assert list(methods) == ["aim", "dpmerf", "dpsgd", "llp"]
    for method in methods.values():
        gate.declared(method, GRID)
    gate.declared(Toy(), GRID)
    assert gate.planned(Toy(), context()).eps == 1.0


def test_a_release_that_writes_no_ledger_row_is_refused():
    def silent(val_path, out_path, name, mechanism):
        pass

    steps = (Step("toy_release", silent, "r.npz", {"val_path": "target_val"}, release=True), Toy.steps[1])
    with pytest.raises(gate.Refused, match="'llp' .* its release toy_release writes no ledger row"):
        gate.declared(miswired(steps=steps), GRID)
    with pytest.raises(gate.Refused, match="it has 0 release steps"):
        gate.declared(miswired(steps=Toy.steps[1:]), GRID)


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
    wide = miswired(mechanism=lambda self, ctx: mechanisms.DPMERF(ctx.eps, 10 * ctx.delta, 300))
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
    config = {**CONFIG, "epsilons": [1], "comparison": {"headline": "approx", "currencies": CURRENCIES}}
    found = currency.currencies(config, list(registry.methods()))
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
