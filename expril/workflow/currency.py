"""The comparison's privacy currencies (`comparison: currencies`, docs/comparison.md): a table compares
methods only at the same eps, the same delta and under the same neighbour relation. A currency names
its delta, its relation and the registered mechanism (expril.privacy.mechanisms) each method spends
in it; a method runs in every currency that names it. Its runs' files carry the currency's tag after
their eps (eps1@approx/), so that both currencies of a method sit in one results tree; the
reproduction's runs (config.yaml's `mechanism` and `delta`) carry none."""

import math
import os
import re
from dataclasses import dataclass

from expril.plugins import registry
from expril.privacy import mechanisms
from expril.workflow import grids

NAME = re.compile(r"[a-z][a-z0-9]*")


@dataclass(frozen=True)
class Currency:
    name: str
    delta: float
    relation: str
    mechanisms: dict  # method -> registered mechanism name

    @property
    def tag(self):
        """The currency in its runs' paths, after their eps."""
        return f"@{self.name}"

    def methods(self, compared):
        """The methods of `compared` that run in this currency, in their order."""
        return [m for m in compared if m in self.mechanisms]

    @property
    def expril(self):
        """The mechanism of ExPriL's chain in this currency (its bin counts and error queries), or None."""
        return next((self.mechanisms[m] for m in grids.VARIANT if m in self.mechanisms), None)

    def describe(self):
        """The currency as a table's caption names it: (eps, delta), relation."""
        delta = "δ = 0, pure ε-DP" if self.delta == 0 else f"δ = {self.delta:g}"
        return f"(ε, {delta}), neighbours: {self.relation}"


# Where `publish_tuning` writes each currency's calibration table, choice and report: the study's
# tracked folder where the configuration publishes the study itself (`comparison: publish_study`),
# else the results folder's, so that a user's tuning never overwrites the published study's.
STUDY_TUNING = "data/tuning"


def tuning_folder(config):
    """publish_tuning's folder, its currencies' subfolders in it."""
    return STUDY_TUNING if config["comparison"]["publish_study"] else f"{config['results']}/tuning"


def choice_file(config, currency):
    """The file of a currency's tuned settings that the comparison reads: the configuration's
    `comparison: choice` where set ({currency} its name); else the results folder's, where
    `publish_tuning` wrote one there, else the published study's."""
    chosen = config["comparison"]["choice"]
    if chosen is None:
        user = f"{config['results']}/tuning/{currency}/choice.yaml"
        return user if os.path.exists(user) else f"{STUDY_TUNING}/{currency}/choice.yaml"
    return chosen.replace("{currency}", currency)


def currencies(config, plugins):
    """The configuration's currencies by name, the headline first and the others by name (however
    configuration files and `--config` merged them), each checked: an error names the key and what
    it expects. `plugins`: {compared method: the plug-in method that reports it}
    (registry.reported())."""
    configured = config["comparison"]["currencies"]
    headline = config["comparison"]["headline"]
    if headline not in configured:
        raise ValueError(
            f"config: comparison: headline: {headline!r} is no currency (expected one of {', '.join(configured)})"
        )
    found = {}
    for name in [headline, *sorted(set(configured) - {headline})]:
        entry = configured[name]
        key = f"config: comparison: currencies: {name}"
        if not NAME.fullmatch(name):
            raise ValueError(f"{key}: a currency's name is lower-case letters and digits, starting with a letter")
        currency = Currency(name, float(entry["delta"]), entry["relation"], dict(entry["mechanisms"]))
        for method, mechanism in currency.mechanisms.items():
            _check(currency, f"{key}: mechanisms: {method}", method, mechanism, plugins, config["epsilons"])
        chains = {currency.mechanisms[m] for m in grids.VARIANT if m in currency.mechanisms}
        if len(chains) > 1:
            raise ValueError(
                f"{key}: mechanisms: ExPriL's methods ({', '.join(grids.VARIANT)}) share one chain of "
                f"queries, so one mechanism; got {', '.join(sorted(chains))}"
            )
        for method in {plugins[m] for m in currency.mechanisms if m in plugins}:
            reports = [m for m in method.reports if m in currency.mechanisms]
            named = {currency.mechanisms[m] for m in reports}
            if len(named) > 1:
                raise ValueError(
                    f"{key}: mechanisms: {', '.join(reports)} are the models of one run of plug-in method "
                    f"{method.name!r}, so one mechanism; got {', '.join(sorted(named))}"
                )
        found[name] = currency
    # A compared method that no currency names would run nowhere, silently: its jobs plan nothing.
    unpriced = [m for m in config["comparison"]["methods"] if not any(m in c.mechanisms for c in found.values())]
    if unpriced:
        raise ValueError(
            f"config: comparison: methods: {', '.join(unpriced)} run in no currency: name the mechanism each "
            f"spends under comparison: currencies: <currency>: mechanisms (currencies: {', '.join(found)})"
        )
    return found


def _check(currency, key, method, name, plugins, epsilons):
    if method not in grids.VARIANT and method not in plugins:
        raise ValueError(
            f"{key}: {method!r} is neither ExPriL's ({', '.join(grids.VARIANT)}) nor reported by a plug-in "
            f"method ({', '.join(plugins)})"
        )
    try:
        mechanism = mechanisms.get(name)
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from None
    if method in grids.VARIANT and not issubclass(mechanism, mechanisms.Histogram):
        raise ValueError(f"{key}: {name!r} does not answer ExPriL's bin queries (expected counts or gaussian-counts)")
    if method in grids.VARIANT and mechanism.__module__.startswith("expril.plugins."):
        # ExPriL's jobs (expril/steps/) import no plug-in: they could neither find its mechanism nor rerun on its edits
        raise ValueError(f"{key}: {name!r} is plug-in {mechanism.__module__}'s: ExPriL's chain applies the package's")
    if mechanism.neighbours != currency.relation:
        raise ValueError(
            f"{key}: {name!r} protects neighbours that {mechanism.neighbours}, not the currency's relation "
            f"({currency.relation})"
        )
    # the mechanisms a run of the method spends beside it (ExPriL by MMD's embedding query)
    beside = sorted(plugins[method].spends(name) - {name}) if method in plugins else []
    gaussian = mechanism.needs_delta or any(mechanisms.get(b).needs_delta for b in beside)
    if gaussian and currency.delta == 0 and any(math.isfinite(float(e)) for e in epsilons):
        with_ = f"(with {', '.join(beside)}) " if beside else ""
        raise ValueError(
            f"{key}: {name!r} {with_}adds Gaussian "
            "noise, whose guarantee at a finite eps needs the currency's delta > 0"
        )


def allowed(currency, method):
    """The mechanisms whose ledger rows a run of `method` may hold in `currency`: its own, and those
    its plug-in's releases apply beside it (Method.spends: ExPriL by MMD's embedding query,
    mechanisms.embedding_for the chain's)."""
    plugin = registry.reported().get(method)
    name = currency.mechanisms[method]
    return set(plugin.spends(name)) if plugin else {name}


def exact(currency, method):
    """What the runs of `method` release at eps = inf in `currency`, where no mechanism adds
    noise: the exact release (Mechanism.exact_release) of each mechanism they apply there."""
    return {mechanisms.get(m).exact_release() for m in allowed(currency, method)}


def named(currency, method, mechanism):
    """`mechanism` as `currency` names it for `method`: itself where the currency allows it, else (a
    row of an eps = inf run that another currency ran, home()) the currency's mechanism that makes
    the same exact release."""
    here = allowed(currency, method)
    if mechanism in here:
        return mechanism
    release = mechanisms.get(mechanism).exact_release()
    return next((m for m in sorted(here) if mechanisms.get(m).exact_release() == release), mechanism)


def home(currencies, method, eps, name):
    """The currency (its name) whose files hold the runs of `method` at `eps` that currency `name`'s
    table reads: its own at a finite eps (and for a method it does not name). At eps = inf, where
    the currencies whose mechanisms make the same exact release (exact()) differ in their ledger
    rows' labels alone, the first of them in `currencies` (the headline first): those runs run
    once, and every such currency's table reads them (check_ledgers checks their rows apart)."""
    if not math.isinf(float(eps)) or method not in currencies[name].mechanisms:
        return name
    release = exact(currencies[name], method)
    return next(
        c for c, currency in currencies.items() if method in currency.mechanisms and exact(currency, method) == release
    )


# The ledgers' accountants round up; as the ledger's own check allows (expril.privacy.ledger).
SLACK = 1 + 1e-9


def check_ledgers(rows, currency):
    """Refuse a table whose runs' ledger rows disagree with its currency: each row (a ledger's,
    with the run's `method`, `eps` and `ledger` file) must hold the currency's relation, the run's eps
    and the currency's delta as its budget, a mechanism the currency names for the method, and
    totals within them. A row of a run at eps = inf, which currencies share (home()), must hold the
    relation and the budget eps = inf, a mechanism whose exact release is that of one the currency
    names for the method, and draw no noise (scale 0 or none) nor spend any delta; its mechanism and
    delta budget are those of the currency that ran it. The error names the ledger file, the row and
    the value expected."""
    # Per method, not per row: a table's ledgers hold thousands of rows and a handful of methods.
    mechanisms_of = {m: allowed(currency, m) for m in rows.method.unique()}
    exact_of = {m: exact(currency, m) for m in rows.method.unique()}
    checks = {
        "neighbours": (lambda r: r.neighbours == currency.relation, lambda r: currency.relation),
        "delta_budget": (lambda r: r.delta_budget == currency.delta, lambda r: currency.delta),
        "eps_budget": (lambda r: r.eps_budget == r.eps, lambda r: r.eps),
        "mechanism": (
            lambda r: r.mechanism in mechanisms_of[r.method],
            lambda r: " or ".join(sorted(mechanisms_of[r.method])),
        ),
        "eps_total": (lambda r: r.eps_total <= r.eps * SLACK, lambda r: f"at most {r.eps}"),
        "delta_total": (lambda r: r.delta_total <= currency.delta * SLACK, lambda r: f"at most {currency.delta}"),
    }
    noiseless = {
        "neighbours": checks["neighbours"],
        "eps_budget": checks["eps_budget"],
        "mechanism": (
            lambda r: mechanisms.get(r.mechanism).exact_release() in exact_of[r.method],
            lambda r: "one whose exact release (eps = inf) is " + " or ".join(sorted(exact_of[r.method])),
        ),
        "scale": (lambda r: not r.scale > 0, lambda r: "0 or none (no noise at eps = inf)"),
        "delta_total": (lambda r: r.delta_total == 0, lambda r: "0 (no noise at eps = inf)"),
    }
    for row in rows.itertuples():
        for column, (holds, expected) in (noiseless if math.isinf(row.eps) else checks).items():
            if not holds(row):
                raise ValueError(
                    f"{row.ledger}: seed {row.seed}, query {row.query!r} ({row.method} at eps {row.eps}) has "
                    f"{column} {getattr(row, column)!r} where currency {currency.name!r} expects "
                    f"{expected(row)}"
                )
