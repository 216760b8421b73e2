"""The gate's empirical audit (expril.plugins.gate.audited, rule plugin_audit): three deliberately
wrong plug-ins (tests/plugins/unprivate.py) are refuted, with a message naming the method, its claim
and the bound, and stopped before any of their releases runs; the study's plug-ins pass; a release
without an audit release is refused."""

import dataclasses
import functools
import importlib
import re
import shutil

import pytest

from expril.plugins import gate, registry
from expril.plugins.context import Context
from expril.workflow import currency, grids
from harness import PLUGIN_CONFIG, ROOT, project_copy, replace_once, snakemake

GRID = grids.load(ROOT / "config/tuning.yaml")
WRONG = ("nonoise", "sensone", "reuse")
# One dataset of 16 features, where a sensitivity that grows with d shows.
CONFIG = PLUGIN_CONFIG | {
    "benchmarks": {"A": {"generator": "clusters", "dim": 16, "n_target": 600, "importance_sampling": True}},
    "iterations": 2,
    "mechanism": "counts",
    "comparison": {"random_features": 64, "dpsgd": {"epochs": 2, "max_grad_norm": 1.0}},
    "training": {"lr": 0.01, "batch_size": 64},
}
CURRENCIES = {
    "approx": {
        "delta": 1e-5,
        "relation": "add/remove one record",
        "mechanisms": {
            "llp": "gaussian-counts",
            "C-mmd": "gaussian-counts",
            "I-mmd": "gaussian-counts",
            "dpmerf": "dp-merf",
            "dpsgd": "dpsgd",
            "aim": "aim-zcdp",
            "sensone": "dp-merf",
        },
    },
    "pure": {
        "delta": 0,
        "relation": "add/remove one record",
        "mechanisms": {"llp": "counts", "aim": "aim", "nonoise": "counts", "reuse": "counts"},
    },
}


@pytest.fixture
def wrong():
    """The three wrong plug-ins, registered for the test only."""
    module = importlib.import_module("plugins.unprivate")
    methods = [registry.register(m) for m in (module.NONOISE, module.SENSONE, module.REUSE)]
    yield {m.name: m for m in methods}
    for name in WRONG:
        registry._METHODS.pop(name, None)


def audit(method):
    """The gate's audit of `method` at gate.AUDIT_EPS in the first currency that names it."""
    known = registry.reported()
    currencies = {
        name: c | {"mechanisms": {m: named for m, named in c["mechanisms"].items() if m in known}}
        for name, c in CURRENCIES.items()
    }
    config = CONFIG | {
        "epsilons": [1],
        "comparison": CONFIG["comparison"] | {"currencies": currencies, "headline": "approx", "methods": []},
    }
    found = currency.currencies(config, known)
    named = next(c for c in found.values() if set(method.reports) <= set(c.mechanisms))
    ctx = Context(config, GRID, method.name, "A", "0-1", gate.AUDIT_EPS, "", functools.partial(str), named)
    return gate.audited(method, gate.claims(method, ctx), ctx.features)


@pytest.mark.slow
@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_release_is_refuted_with_its_claim_and_its_bound(wrong, name):
    with pytest.raises(
        gate.Refused, match=rf"'{name}' .* claims \(eps, delta\) = \(1, .*\), but its empirical audit bounds"
    ):
        audit(wrong[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llp", "dpmerf", "mmd"])
def test_the_studys_cheap_releases_pass(name):
    rows = audit(registry.methods()[name])
    assert rows and all(row["eps_lower"] <= row["claimed_eps"] for row in rows)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dpsgd", "aim"])
def test_the_studys_trained_releases_pass(name):
    rows = audit(registry.methods()[name])
    assert rows and all(row["eps_lower"] <= row["claimed_eps"] for row in rows)


def test_a_release_without_an_audit_release_is_refused():
    llp = registry.methods()["llp"]
    steps = tuple(dataclasses.replace(s, audit=None) for s in llp.steps)
    with pytest.raises(gate.Refused, match="its release oracle_proportions gives no audit release"):
        gate.declared(type("Unaudited", (type(llp),), {"steps": steps})(), GRID)


@pytest.mark.slow
def test_the_workflow_stops_each_wrong_method_before_any_of_its_releases_runs(tmp_path):
    """The three wrong plug-ins added to a copy of the project as a user adds one (docs/extending.md),
    on dataset E (25 features), the workflow run up to their releases: each one's audit fails with
    the gate's message, and none of their releases runs."""
    project = project_copy(tmp_path)
    shutil.copy(ROOT / "tests/plugins/unprivate.py", project / "expril/plugins/unprivate.py")
    entries = "".join(f"  {name}:\n    model: [configured]\n" for name in WRONG)
    replace_once(project / "config/tuning.yaml", "families:\n", "families:\n" + entries)
    currencies = (
        '{"pure": {"mechanisms": {"nonoise": counts, "reuse": counts}}, "approx": {"mechanisms": {"sensone": dp-merf}}}'
    )
    results = tmp_path / "res"
    config = [
        "--configfile",
        "tests/smoke.yaml",
        "--config",
        f"results={results}",
        "datasets=[E]",
        "epsilons=[1]",
        f'comparison={{"methods": [{", ".join(WRONG)}], "choice": "no/choice.yaml", '
        f'"columns": [as configured], "currencies": {currencies}}}',
    ]
    releases = [f"{name}_release" for name in WRONG]
    run = snakemake("compare", "--cores", "2", "--keep-going", "--until", *releases, *config, cwd=project, check=False)
    assert run.returncode != 0
    for name in WRONG:
        (log,) = (results / "logs/plugin_audit").glob(f"{name}@*.log")
        assert re.search(
            rf"'{name}' .* claims \(eps, delta\) = \(1, .*\), but its empirical audit bounds", log.read_text()
        )
    assert not list(results.glob("oracle/**/release.npz")) and not list(results.glob("oracle/**/*.ledger.csv"))
    assert not any((results / "logs" / rule).exists() for rule in releases)
