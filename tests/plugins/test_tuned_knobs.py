"""The plug-in methods' knobs of the round-2 grids (config/tuning.yaml): LLP's budget split and AIM's
OpenDP knobs reach their releases, pass the gate at exactly the run's eps, and name only the files
that depend on them; as configured nothing changes."""

import functools

import opendp.prelude as dp
import pytest

from expril.plugins import gate, registry
from expril.plugins.aim import aim_knobs
from expril.plugins.context import Context
from expril.privacy import mechanisms
from expril.rivals import aim
from expril.rivals import llp as rivals_llp
from expril.workflow import grids
from expril.workflow.currency import Currency
from harness import PLUGIN_CONFIG as CONFIG
from harness import ROOT

GRID = grids.load(ROOT / "config/tuning.yaml")
PURE = Currency("pure", 0.0, mechanisms.RECORD, {"llp": "counts", "aim": "aim"})


def context(family, setting, eps="1"):
    return Context(CONFIG, GRID, family, "A", "0-1", eps, setting, functools.partial(str), PURE)


def test_llps_split_reaches_its_plan_and_passes_the_gate_at_exactly_eps():
    llp = registry.methods()["llp"]
    tuned = gate.planned(llp, context("llp", "~model=logreg~split=0.3"))
    assert tuned.split == 0.3 and tuned.compose(tuned.planned_costs())[0] == pytest.approx(1.0, rel=1e-12)
    assert [c[0] for c in tuned.planned_costs()] == pytest.approx([0.3, 0.7])
    # Its plan names its first query as its bin counts query: the ledger's rows cost what was planned.
    assert [tuned.query_cost(q)[0] for q in rivals_llp.QUERIES] == pytest.approx([0.3, 0.7])
    configured = gate.planned(llp, context("llp", "~model=logreg"))
    assert configured.split is None and "split" not in configured.param()
    # The bins depend on snr alone, the release on snr and split, the network on everything.
    ctx = context("llp", "~model=logreg~split=0.3")
    assert [llp.output(step, ctx) for step in llp.steps] == [
        "res/learner/A/0-1/eps1@pure/llp/bins.npz",
        "res/oracle/A/0-1/eps1@pure/llp~split=0.3/proportions.npz",
        "res/learner/A/0-1/eps1@pure/llp~model=logreg~split=0.3/model.npz",
    ]


def test_aims_knobs_become_opendps_options_and_name_its_release():
    method = registry.methods()["aim"]
    ctx = context("aim", "~model=tanh32~oneway=0.0625~rounds=4")
    assert aim_knobs(ctx) == {"oneway": 0.0625, "rounds": 4}
    assert aim_knobs(context("aim", "~model=tanh32")) == {}
    # 2 features and the label: 3 columns, 4 rounds each.
    options = aim._aim_options(aim_knobs(ctx), 3)
    assert options == {"oneway_split": 0.0625, "rounds": 12} and aim._aim_options({}, 3) == {}
    dp.enable_features("contrib")
    algorithm = dp.mbi.AIM(queries=[dp.mbi.Count(("x0", "y"))], **options)
    assert (algorithm.oneway_split, algorithm.rounds) == (0.0625, 12)
    assert method.output(method.release, ctx) == "res/oracle/A/0-1/eps1@pure/aim~oneway=0.0625~rounds=4/records.npz"
    configured = context("aim", "~model=tanh32")
    assert method.output(method.release, configured) == "res/oracle/A/0-1/eps1@pure/aim/records.npz"


def test_aim_refuses_knobs_it_does_not_have_and_mst_takes_none():
    with pytest.raises(ValueError, match="unknown knobs"):
        aim.fit(None, None, [], 1.0, "aim", 1, knobs={"degree": 2})
    with pytest.raises(ValueError, match="unknown knobs"):
        aim.fit(None, None, [], 1.0, "mst", 1, knobs={"rounds": 4})
