"""A user's plug-in from outside the package (config: comparison: plugins; expril.plugins.registry.use)
with a mechanism of its own (docs/extending.md's second worked example, tests/plugins/centroid.py):
loaded in every process of the workflow, refused by name where it is missing, registers nothing or
takes another's name, its code digest its file's; its mechanism sound, planned and checked as the
package's are; and the smoke comparison with it, kept in a temporary folder, end to end."""

import copy
import inspect
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from expril.plugins import gate, registry
from expril.plugins.context import Context
from expril.privacy import calibration, mechanisms
from expril.privacy.base import MECHANISMS
from expril.workflow import code_digest, grids
from expril.workflow.config import check_mechanism
from expril.workflow.currency import currencies
from harness import PLUGIN_CONFIG, ROOT, counts, dry_run_jobs, snakemake

EXAMPLE = ROOT / "tests/plugins/centroid.py"
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
# The example's tuning entry, under `families:` in a copy of the study's grid.
TUNING_ENTRY = "families:\n  centroid:\n    model: [configured, tanh32, logreg]\n"


@pytest.fixture
def clean(monkeypatch):
    """The registries as the package leaves them, restored after the test with the modules it loaded."""
    registry.methods()
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    monkeypatch.setenv(registry.OUTSIDE, "")
    mechanisms_before, modules_before = dict(MECHANISMS), set(sys.modules)
    yield
    MECHANISMS.clear()
    MECHANISMS.update(mechanisms_before)
    for name in set(sys.modules) - modules_before:
        del sys.modules[name]


def outside(tmp_path, text=None, name="centroid.py"):
    """A plug-in file in a folder of the user's, outside the repository: the example, or `text`."""
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(EXAMPLE.read_text() if text is None else text)
    return path


def test_a_plug_in_from_a_users_folder_joins_the_registry_here_and_in_every_job(clean, tmp_path):
    path = outside(tmp_path)
    found = registry.use([str(path)])
    method = found["centroid"]
    assert set(found) > {"llp", "dpsgd", "centroid"} and registry.reported()["centroid"] is method
    assert type(method).__module__ == "expril.plugins.centroid" and inspect.getfile(type(method)) == str(path)
    assert mechanisms.get("class-sums").__module__ == "expril.plugins.centroid"
    # a job's process (another folder, its environment inherited) finds the method and its mechanism
    job = "from expril.plugins import registry; from expril.privacy import mechanisms; registry.methods(); "
    job += "print(mechanisms.get('class-sums').neighbours, registry.step('centroid_train')[0].display)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", job], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout == f"{mechanisms.RECORD} Noisy centroids\n", out.stderr
    assert registry.use([str(path)])["centroid"] is method  # loaded once


def test_a_missing_or_misnamed_plug_in_file_is_refused_naming_the_key(clean, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"config: comparison: plugins: mine/centroid.py: no such file \(relative to "):
        registry.use(["mine/centroid.py"])
    outside(tmp_path)
    assert "centroid" in registry.use(["mine/centroid.py"])  # relative to the working directory
    for wrong in ("mine/centroid.py", ["mine/centroid.txt"]):
        with pytest.raises(ValueError, match=r"config: comparison: plugins: expected a list of Python files"):
            registry.use(wrong)


def test_a_module_that_registers_no_method_is_refused(clean, tmp_path):
    path = outside(tmp_path, "from expril.plugins.base import Method\n\n\nclass Unregistered(Method):\n    pass\n")
    with pytest.raises(ValueError, match=rf"plug-in {path} registers no method: a plug-in module ends with"):
        registry.use([str(path)])
    assert "expril.plugins.centroid" not in sys.modules


def test_a_plug_in_that_takes_another_ones_name_is_refused(clean, tmp_path):
    # a file named as an in-tree plug-in, or as another user's plug-in already loaded
    with pytest.raises(ValueError, match=r"another plug-in module is named expril.plugins.llp \(rename the file\)"):
        registry.use([str(outside(tmp_path, name="llp.py"))])
    registry.use([str(outside(tmp_path))])
    (tmp_path / "theirs").mkdir()
    theirs = shutil.copy(EXAMPLE, tmp_path / "theirs/centroid.py")
    with pytest.raises(ValueError, match=r"another plug-in module is named expril.plugins.centroid"):
        registry.load(theirs)
    # a method's name, or a mechanism's, that another module registers
    renamed = EXAMPLE.read_text().replace('name = "centroid"', 'name = "llp"').replace("class-sums", "sums2")
    with pytest.raises(ValueError, match=r"registers method 'llp', which expril.plugins.llp already registers"):
        registry.load(outside(tmp_path, renamed, "mine2.py"))
    counts_clash = EXAMPLE.read_text().replace('"class-sums"', '"counts"').replace('= "centroid"', '= "mine"')
    with pytest.raises(
        ValueError, match=r"expril.plugins.mine3 registers mechanism 'counts', which expril.privacy.histogram"
    ):
        registry.load(outside(tmp_path, counts_clash, "mine3.py"))
    assert MECHANISMS["counts"] is mechanisms.Counts


def test_the_code_digest_of_an_outside_plug_in_covers_its_file(tmp_path):
    """rules/plugins.smk's plugin_code digests the method's file (inspect.getfile): outside the
    package, its own code with the package code it runs (an edit reruns its jobs); inside, as before."""
    path = outside(tmp_path)
    first = code_digest.plugin_digest(path)
    path.write_text(path.read_text().replace('"""Noisy class centroids:', '"""Noisy centroids:'))
    assert code_digest.plugin_digest(path) == first  # a docstring
    path.write_text(path.read_text().replace("np.maximum(sums[:, -1:], 1.0)", "np.maximum(sums[:, -1:], 2.0)"))
    assert code_digest.plugin_digest(path) != first
    assert code_digest.script_digest(path) == code_digest.script_digest(EXAMPLE)  # the package code it runs
    llp = ROOT / "expril/plugins/llp.py"
    assert code_digest.plugin_digest(llp) == code_digest.script_digest(llp)


def test_the_examples_mechanism_is_sound_and_calibrated(clean, tmp_path):
    """Adding or removing one record moves the exact class sums by at most sqrt(d + 1) in L2, the
    sensitivity the noise is calibrated for, reached by a record at a corner of the box."""
    registry.use([str(outside(tmp_path))])
    example = sys.modules["expril.plugins.centroid"]
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-3, 5, (200, 4)), rng.integers(0, 2, 200)
    bounds = example.box(rng.uniform(-2, 4, (300, 4)))
    mechanism = mechanisms.from_param(example.ClassSums(1.0, 1e-5, 4).param())
    exact = example.class_sums(example.scaled(x, bounds), y)
    moves = [
        np.linalg.norm(exact - example.class_sums(example.scaled(np.delete(x, i, 0), bounds), np.delete(y, i)))
        for i in range(len(x))
    ]
    corner = example.class_sums(example.scaled(np.vstack([x, [[9, 9, -9, 9]]]), bounds), np.append(y, 1))
    assert max(moves) <= mechanism.sensitivity * (1 + 1e-12) and mechanism.sensitivity == math.sqrt(5)
    assert np.linalg.norm(corner - exact) == pytest.approx(math.sqrt(5))  # reached
    assert mechanism.noise_std == calibration.gaussian_noise_std(1.0, 1e-5, math.sqrt(5)) > 0
    assert mechanism.query_cost() == (1.0, 1e-5) and mechanism.planned_queries == 1
    assert example.ClassSums(math.inf, 1e-5, 4).noise_std == 0 and example.ClassSums(math.inf, 1e-5, 4).cost()[:2] == (
        math.inf,
        0.0,
    )
    # the learner's side: records labelled by the nearer noisy centroid
    sums = np.array([[-2.0, 0.0, 4.0], [3.0, 3.0, 3.0]])  # centroids (-0.5, 0) and (1, 1)
    assert example.nearest(np.array([[-1.0, 0.0], [0.9, 0.6], [0.2, 0.5]]), sums).tolist() == [0, 1, 0]


def test_the_examples_plan_passes_the_gate_in_approx_dp_and_is_refused_in_pure_dp(clean, tmp_path):
    registry.use([str(outside(tmp_path))])
    config = copy.deepcopy(CONFIG)
    config["comparison"]["currencies"]["approx"]["mechanisms"]["centroid"] = "class-sums"
    approx = currencies(config, registry.reported())["approx"]
    method = registry.methods()["centroid"]
    grid = grids.load(ROOT / "config/tuning.yaml")
    grid["families"]["centroid"] = {"model": ["configured"]}
    gate.declared(method, grid)
    ctx = Context(PLUGIN_CONFIG, grid, "centroid", "A", "0-1", "1", "", str, approx)
    assert gate.planned(method, ctx, method.release).param() == {
        "name": "class-sums",
        "eps": 1.0,
        "delta": 1e-5,
        "features": 2,
    }
    config["comparison"]["currencies"]["pure"]["mechanisms"]["centroid"] = "class-sums"
    with pytest.raises(ValueError, match=r"pure: mechanisms: centroid: 'class-sums' adds Gaussian noise"):
        currencies(config, registry.reported())


def test_exprils_chain_is_refused_a_plug_ins_mechanism(clean, tmp_path):
    """ExPriL's jobs import no plug-in: a Histogram of a plug-in's would be found nowhere they run."""
    mine = '@register_mechanism\nclass MyCounts(mechanisms.Counts):\n    name = "my-counts"\n\n\n'
    text = EXAMPLE.read_text().replace("@register_mechanism\n", mine + "@register_mechanism\n")
    registry.use([str(outside(tmp_path, text))])
    config = copy.deepcopy(CONFIG)
    config["comparison"]["currencies"]["pure"]["mechanisms"].update(C="my-counts", I="my-counts")
    with pytest.raises(ValueError, match=r"pure: mechanisms: C: 'my-counts' is plug-in expril.plugins.centroid's"):
        currencies(config, registry.reported())
    with pytest.raises(ValueError, match=r"config: mechanism: 'my-counts' is plug-in expril.plugins.centroid's"):
        check_mechanism(CONFIG | {"mechanism": "my-counts"})


def smoke(results, plugin, grid):
    """The smoke comparison, as configured, on two datasets: ExPriL beside the user's method, which
    runs in (eps, 1e-5)-DP, from its file and with its tuning entry in the user's copy of the grid."""
    comparison = (
        f'{{"methods": [C, I, centroid], "plugins": [{plugin}], "grid": "{grid}", "choice": "no/choice.yaml", '
        '"columns": [as configured], "currencies": {"approx": {"mechanisms": {"centroid": class-sums}}}}'
    )
    return [
        *("--configfile", "config/extended.yaml", "tests/extended_smoke.yaml", "--config", f"results={results}"),
        *("datasets=[A,C]", f"comparison={comparison}"),
    ]


@pytest.mark.slow
def test_a_plug_in_with_its_own_mechanism_from_a_users_folder_runs_the_smoke_comparison(tmp_path):
    """In this repository, which names no such method: its releases in the ledger, the gate and the
    taint audit passed, its runs in every table and figure; an edit to its file reruns its jobs."""
    plugin, grid, res = outside(tmp_path), tmp_path / "mine/tuning.yaml", tmp_path / "res"
    grid.write_text((ROOT / "config/tuning.yaml").read_text().replace("families:\n", TUNING_ENTRY, 1))
    args = smoke(res, plugin, grid)
    snakemake("compare", "--cores", "2", *args)
    approx, pure = res / "comparison/approx", res / "comparison/pure"
    table = pd.read_csv(approx / "comparison.csv")
    mine = table[table.method == "centroid"]
    assert len(mine) == 4 and set(mine.dataset) == {"A", "C"} and set(mine.n_runs) == {2}
    # its privacy, read from its ledgers: the run's (eps, delta) at eps 1, nothing at inf
    assert (
        mine.set_index("eps")[["eps_spent", "delta", "mechanisms"]].loc[1].values.tolist()
        == [[1.0, 1e-5, "class-sums"]] * 2
    )
    assert set(mine[mine.eps == math.inf].eps_spent) == {math.inf} and "centroid" not in set(
        pd.read_csv(pure / "comparison.csv").method
    )
    book = pd.read_csv(res / "oracle/A/0-1/eps1@approx/centroid/sums.ledger.csv")
    assert list(book["query"]) == ["centroid/class-sums"] * 2 and list(book.seed) == [0, 1]
    assert set(book.mechanism) == {"class-sums"} and set(book.neighbours) == {mechanisms.RECORD}
    assert set(book.sensitivity) == {math.sqrt(3)}  # A's 2 features and the count
    assert set(book.scale) == {calibration.gaussian_noise_std(1.0, 1e-5, math.sqrt(3))}
    assert set(book.eps_total) == {1.0} and set(book.delta_total) == {1e-5}
    assert "Noisy centroids" in (res / "comparison.md").read_text()
    assert "Noisy centroids" in (approx / "comparison.md").read_text()
    assert set(pd.read_csv(approx / "comparison_runs.csv").method) >= {"C", "I", "centroid"}
    assert "rank_centroid" in pd.read_csv(approx / "comparison_ranks.csv").columns
    assert "centroid" in set(pd.read_csv(approx / "comparison_tests.csv").method)
    for figure in ("privacy_utility.png", "critical_difference.png"):
        assert (approx / figure).stat().st_size > 0
    audit = subprocess.run(
        [sys.executable, "-m", "expril.privacy.taint", "compare", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert audit.returncode == 0 and ", 0 violations;" in audit.stdout, audit.stdout + audit.stderr
    # its file's docstring edited: nothing to rerun; its code: its jobs and the reports that read them
    plugin.write_text(plugin.read_text().replace('"""Noisy class centroids:', '"""Noisy centroids:'))
    unchanged = snakemake("--dry-run", "compare", *args)
    assert "Nothing to be done" in unchanged.stdout + unchanged.stderr
    plugin.write_text(plugin.read_text().replace("np.maximum(sums[:, -1:], 1.0)", "np.maximum(sums[:, -1:], 2.0)"))
    planned = counts(dry_run_jobs(snakemake("--dry-run", "compare", *args).stdout))
    assert planned == {
        "plugin_audit": 1,  # its audit, once per version of its code
        "centroid_release": 4,
        "centroid_train": 4,
        "evaluate_rival": 4,
        "compare_methods": 1,
        "comparison_report": 1,
        "compare": 1,
    }
