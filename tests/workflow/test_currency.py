"""The comparison's privacy currencies (expril/workflow/currency.py): the configuration's are checked
with errors that name the key and what it expects, and a table's runs are refused unless every
ledger row agrees with its currency's (eps, delta, relation) and mechanisms."""

import copy

import pandas as pd
import pytest
import yaml

from expril.plugins import registry
from expril.privacy import ledger, mechanisms
from expril.workflow.currency import check_ledgers, currencies, home
from harness import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
# The compared methods the plug-ins report, each its plug-in method (registry.reported()).
PLUGINS = registry.reported()


def _config(name="approx", **changes):
    config = copy.deepcopy(CONFIG)
    config["comparison"]["currencies"][name].update(changes)
    return config


def test_the_configured_currencies_name_every_compared_method_once_in_the_headline():
    found = currencies(CONFIG, PLUGINS)
    assert list(found) == ["approx", "pure"]  # the headline first
    # however the configuration was merged (--config's keys come first)
    merged = copy.deepcopy(CONFIG)
    merged["comparison"]["currencies"] = dict(reversed(merged["comparison"]["currencies"].items()))
    assert list(merged["comparison"]["currencies"]) == ["pure", "approx"]
    assert list(currencies(merged, PLUGINS)) == ["approx", "pure"]
    merged["comparison"]["headline"] = "pure"
    assert list(currencies(merged, PLUGINS)) == ["pure", "approx"]
    merged["comparison"]["headline"] = "laplace"
    with pytest.raises(ValueError, match=r"config: comparison: headline: 'laplace' is no currency \(expected one of"):
        currencies(merged, PLUGINS)
    approx, pure = found["approx"], found["pure"]
    assert approx.tag == "@approx" and approx.delta == 1e-5 and pure.delta == 0.0
    assert approx.methods(CONFIG["comparison"]["methods"]) == CONFIG["comparison"]["methods"]
    assert pure.methods(CONFIG["comparison"]["methods"]) == ["C", "I", "llp", "aim"]
    assert (approx.expril, pure.expril) == ("gaussian-counts", "counts")
    assert approx.describe() == "(ε, δ = 1e-05), neighbours: add/remove one record"
    assert pure.describe() == "(ε, δ = 0, pure ε-DP), neighbours: add/remove one record"


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"mechanisms": {"C": "gaussian-counts", "svm": "counts"}},
            r"approx: mechanisms: svm: 'svm' is neither ExPriL's \(C, I\) nor reported by a plug-in method \(.*C-mmd",
        ),
        ({"mechanisms": {"llp": "gauss"}}, r"approx: mechanisms: llp: unknown mechanism 'gauss'"),
        (
            {"mechanisms": {"C": "aim"}},
            r"approx: mechanisms: C: 'aim' does not answer ExPriL's bin queries \(expected counts or gaussian-counts\)",
        ),
        (
            {"mechanisms": {"C": "counts", "I": "gaussian-counts"}},
            r"approx: mechanisms: ExPriL's methods .* one mechanism; got counts, gaussian-counts",
        ),
        (
            {"relation": "change one label"},
            r"approx: mechanisms: C: 'gaussian-counts' protects neighbours that add/remove one record, not the "
            r"currency's relation \(change one label\)",
        ),
        ({"delta": 0}, r"approx: mechanisms: C: 'gaussian-counts' adds Gaussian noise, .* needs the currency's delta"),
    ],
)
def test_a_miswritten_currency_is_refused_by_key(changes, message):
    with pytest.raises(ValueError, match=r"config: comparison: currencies: " + message):
        currencies(_config(**changes), PLUGINS)


def test_a_compared_method_that_no_currency_names_is_refused():
    """A user's method listed in `comparison: methods` without a mechanism in any currency would
    plan no job at all (docs/extending.md's step 3)."""
    config = copy.deepcopy(CONFIG)
    del config["comparison"]["currencies"]["approx"]["mechanisms"]["C-mmd"]
    with pytest.raises(ValueError, match=r"config: comparison: methods: C-mmd run in no currency: name the mechanism"):
        currencies(config, PLUGINS)


def test_expril_by_mmd_is_refused_in_pure_dp_for_its_gaussian_embedding():
    config = _config("pure", mechanisms={"C": "counts", "C-mmd": "counts"})
    with pytest.raises(ValueError, match=r"pure: mechanisms: C-mmd: 'counts' \(with rff-embedding\) adds Gaussian"):
        currencies(config, PLUGINS)
    config["epsilons"] = ["inf"]  # no noise, no delta
    assert "C-mmd" in currencies(config, PLUGINS)["pure"].mechanisms


def test_the_models_of_one_plug_in_run_share_its_mechanism():
    """C-mmd and I-mmd are two models of ExPriL by MMD's one chain of queries: one mechanism."""
    config = _config(mechanisms={**CONFIG["comparison"]["currencies"]["approx"]["mechanisms"], "I-mmd": "dp-merf"})
    with pytest.raises(ValueError, match=r"approx: mechanisms: C-mmd, I-mmd are the models of one run of plug-in"):
        currencies(config, PLUGINS)


def _book(tmp_path, plans, seeds=(0, 1)):
    """A run's ledger as the oracle writes it: one record() per planned query, in order."""
    book = None
    for i, (query, plan) in enumerate(plans):
        history = tmp_path / "history.csv"  # AIM's noise, drawn by OpenDP, is kept in one
        book = ledger.record(tmp_path / f"{i}.csv", book, "C", list(seeds), query, "oracle_errors", plan, history)
    return book


def _rows(book, method, eps, path="eval/C/0-1/eps1@approx/x.ledger.csv"):
    return book.assign(method=method, eps=eps, ledger=path)


def test_ledgers_that_agree_with_their_currency_pass(tmp_path):
    approx, pure = currencies(CONFIG, PLUGINS).values()
    gaussian = mechanisms.get("gaussian-counts")(1.0, 1e-5, 10, 2, True)
    embedding = mechanisms.get("zcdp-embedding")(1.0, 1e-5, 400, 2)
    chain = _book(tmp_path, [("marginals", gaussian), ("errors_t0", gaussian), ("errors_t1", gaussian)])
    by_mmd = _book(tmp_path, [("embedding", embedding), ("errors_t0", gaussian), ("errors_t1", gaussian)])
    aim = _book(tmp_path, [("aim", mechanisms.get("aim")(1.0, 0.0))])
    check_ledgers(pd.concat([_rows(chain, "C", 1.0), _rows(by_mmd, "C-mmd", 1.0)]), approx)
    check_ledgers(_rows(aim, "aim", 1.0), pure)


@pytest.mark.parametrize(
    "method, plans, message",
    [
        # (eps, delta) plans in the pure table: LLP's counts budgeted with delta
        ("llp", [("q", mechanisms.get("counts")(1.0, 1e-5, 2, 1, False))], "delta_budget 1e-05 where .* expects 0.0"),
        # a run of another eps filed under this one
        ("aim", [("aim", mechanisms.get("aim")(3.0, 0.0))], "eps_budget 3.0 where currency 'pure' expects 1.0"),
        # AIM in zCDP where the currency names its pure DP
        ("aim", [("aim", mechanisms.get("aim-zcdp")(1.0, 1e-5))], "delta_budget 1e-05 where"),
        # the label relation's mechanism
        (
            "C",
            [("errors_t0", mechanisms.get("dirichlet")(1.0, 0.0, 2, 2, False))],
            "neighbours 'change one label' where currency 'pure' expects add/remove one record",
        ),
    ],
)
def test_a_ledger_row_that_disagrees_with_its_currency_is_refused_by_file_and_value(tmp_path, method, plans, message):
    pure = currencies(CONFIG, PLUGINS)["pure"]
    rows = _rows(_book(tmp_path, plans), method, 1.0, "oracle/A/0-1/eps1@pure/run.ledger.csv")
    with pytest.raises(ValueError, match=rf"oracle/A/0-1/eps1@pure/run.ledger.csv: seed 0, .*{message}"):
        check_ledgers(rows, pure)


def test_the_approx_currency_refuses_the_laplace_chain_and_the_basic_composition_embedding(tmp_path):
    approx = currencies(CONFIG, PLUGINS)["approx"]
    laplace = _book(tmp_path, [("marginals", mechanisms.get("counts")(1.0, 1e-5, 2, 2, False))])
    with pytest.raises(ValueError, match=r"mechanism 'counts' where currency 'approx' expects gaussian-counts"):
        check_ledgers(_rows(laplace, "C", 1.0), approx)
    basic = _book(tmp_path, [("embedding", mechanisms.MeanEmbedding(1.0, 1e-5, 400, 2))])
    with pytest.raises(ValueError, match=r"'rff-embedding' where currency 'approx' expects gaussian-counts or zcdp"):
        check_ledgers(_rows(basic, "C-mmd", 1.0), approx)


def test_the_noiseless_runs_run_once_in_the_first_currency_that_names_the_method():
    found = currencies(CONFIG, PLUGINS)
    assert home(found, "C", "inf", "pure") == "approx"  # the headline's, which names C
    assert home(found, "aim", "inf", "approx") == "approx"
    assert home(found, "C", "1", "pure") == "pure"  # noise: each currency its own
    assert home(found, "C", "0.1", "approx") == "approx"
    assert home(found, "C-mmd", "inf", "pure") == "pure"  # a method it does not name: its own folder
    merged = copy.deepcopy(CONFIG)
    merged["comparison"]["headline"] = "pure"
    found = currencies(merged, PLUGINS)
    assert home(found, "C", "inf", "approx") == "pure"
    assert home(found, "dpsgd", "inf", "approx") == "approx"  # pure names no DP-SGD
    # MST in pure DP synthesises other records than AIM in zCDP, even without noise: its own runs
    merged["comparison"]["currencies"]["pure"]["mechanisms"]["aim"] = "mst"
    found = currencies(merged, PLUGINS)
    assert home(found, "aim", "inf", "approx") == "approx" and home(found, "aim", "inf", "pure") == "pure"
    assert home(found, "C", "inf", "approx") == "pure"


def test_mechanisms_that_release_the_same_without_noise_are_named_alike():
    exact = {name: mechanisms.get(name).exact_release() for name in ("counts", "gaussian-counts", "paper")}
    assert exact["counts"] == exact["gaussian-counts"] != exact["paper"]  # paper's rates, not counts
    exact = {name: mechanisms.get(name).exact_release() for name in ("aim", "aim-zcdp", "mst", "mst-zcdp")}
    assert exact["aim"] == exact["aim-zcdp"] != exact["mst"] == exact["mst-zcdp"]
    assert mechanisms.get("dpsgd").exact_release() == "dpsgd"  # by default its own name


def test_a_noiseless_run_of_another_currency_passes_unless_it_drew_noise_or_spent_delta(tmp_path):
    approx, pure = currencies(CONFIG, PLUGINS).values()
    gaussian = mechanisms.get("gaussian-counts")(float("inf"), 1e-5, 10, 2, True)
    chain = _rows(_book(tmp_path, [("marginals", gaussian), ("errors_t0", gaussian)]), "C", float("inf"))
    assert set(chain.mechanism) == {"gaussian-counts"} and set(chain.delta_budget) == {1e-5}
    check_ledgers(chain, pure)  # approx's run, read by the pure table: no noise, no delta
    check_ledgers(chain, approx)
    # at a finite eps the same labels are refused
    with pytest.raises(ValueError, match=r"delta_budget 1e-05 where currency 'pure' expects 0.0"):
        check_ledgers(chain.assign(eps=1.0, eps_budget=1.0), pure)
    for column, value, expected in [
        ("scale", 0.5, "0 or none"),
        ("delta_total", 1e-5, "0 \\(no noise"),
        ("eps_budget", 1.0, "inf"),
        ("neighbours", "change one label", "add/remove one record"),
        ("mechanism", "paper", "one whose exact release \\(eps = inf\\) is counts"),
    ]:
        with pytest.raises(ValueError, match=rf"has {column} .* where currency 'pure' expects {expected}"):
            check_ledgers(chain.assign(**{column: value}), pure)
