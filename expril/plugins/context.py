"""What a plug-in method knows of one job when the workflow plans it (expril.plugins.base): the
functions of a method (its mechanism, its steps' params and inputs) take it as `ctx`."""

from collections.abc import Callable
from dataclasses import dataclass, field

from expril import settings
from expril.workflow import grids


@dataclass(frozen=True)
class Context:
    """What a method knows of one job when the workflow plans it: the configuration, the tuning
    grid, the job's dataset, seed block, eps, setting and privacy currency
    (expril.workflow.currency), and the step's own wildcards."""

    config: dict
    grid: dict
    family: str
    dataset: str
    seeds: str
    eps_text: str
    setting_text: str
    # D -> the learner's random feature map of the job's block with D features (rules/settings.smk).
    feature_map: Callable = field(repr=False)
    currency: object = None  # a Currency; None outside the comparison's currencies
    # The values of the step's own wildcards for the job (Step.fields): {'variant': 'C', 't': '2'}.
    fields: dict = field(default_factory=dict)

    @property
    def eps_folder(self):
        """The eps part of the job's paths: its eps and its currency's tag (1@approx)."""
        return self.eps_text + (self.currency.tag if self.currency else "")

    @property
    def spec(self):
        return self.config["benchmarks"][self.dataset]

    @property
    def eps(self):
        return settings.parse_eps(self.eps_text)

    @property
    def delta(self):
        """The delta of the run's budget: its currency's (else the configuration's `delta`)."""
        return self.currency.delta if self.currency else self.config["delta"]

    @property
    def mechanism(self):
        """The registered mechanism the job's currency names for this method (`comparison:
        currencies: <name>: mechanisms`)."""
        return self.mechanism_for([self.family])

    def mechanism_for(self, methods):
        """The registered mechanism the job's currency names for the compared `methods`, which one
        run of a method reports (ExPriL by MMD's C-mmd and I-mmd: one chain, so one mechanism)."""
        known = self.currency.mechanisms if self.currency else {}
        named = {known[m] for m in methods if m in known}
        if len(named) != 1:
            where = f"currency {self.currency.name!r}" if self.currency else "no currency"
            what = "no mechanism" if not named else f"several mechanisms ({', '.join(sorted(named))})"
            raise ValueError(
                f"{', '.join(methods)} on {self.dataset} at eps {self.eps_text}: {where} names {what} for "
                "it (config: comparison: currencies: <name>: mechanisms)"
            )
        return named.pop()

    @property
    def setting(self):
        return grids.parse(self.grid, self.family, self.setting_text)

    @property
    def n_val(self):
        return settings.benchmark_n_val(self.config, self.spec)

    @property
    def features(self):
        return settings.feature_count(self.spec)

    def suffix(self, axes=None):
        """The setting's path suffix over `axes` (all by default)."""
        return grids.suffix(self.grid, self.family, self.setting, axes)

    def network(self):
        """The final network of the setting (the grid's model family)."""
        return grids.network(self.grid, self.setting, self.spec["hidden"])

    def recipe(self, axis, configured):
        """The knobs of the setting's recipe on `axis`, over the `configured` ones."""
        return grids.recipe(self.grid, self.setting, axis, configured)

    def knob(self, name, configured):
        """The value the setting gives the knob `name` (an axis's, or a recipe's), else `configured`."""
        return grids.knob(self.grid, self.setting, name, configured)

    def snr(self):
        """The bins' signal-to-noise target of the setting."""
        return self.knob("snr", self.config["bins"]["snr"])

    def bins_per_feature(self, snr, iterations, mechanism=None):
        """q by the paper's signal-to-noise rule at `snr`, for a plan of `iterations` error queries, sized
        for the noise of `mechanism` (a registered class; by default the one the job's currency names
        for its method, else the configuration's `mechanism`): Histogram.bins_std, or Laplace's by the
        configuration's `bins: sized_for`."""
        from expril.privacy import mechanisms  # here: a plug-in's import stays light

        if mechanism is None:
            mechanism = mechanisms.get(self.mechanism if self.currency else self.config["mechanism"])
        std = settings.bins_std(
            self.config["bins"]["sized_for"], mechanism, self.eps, self.delta, self.features, iterations
        )
        noiseless = self.config["bins"]["noiseless"]
        return settings.bins_per_feature(self.n_val, self.features, iterations, self.eps, snr, noiseless, std)
