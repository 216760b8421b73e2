"""What a plug-in method knows of one job when the workflow plans it (expril.plugins.base): the
functions of a method (its mechanism, its steps' params and inputs) take it as `ctx`."""

from collections.abc import Callable
from dataclasses import dataclass, field

from expril import settings
from expril.workflow import grids


@dataclass(frozen=True)
class Context:
    """What a method knows of one job when the workflow plans it: the configuration, the tuning
    grid, the job's dataset, seed block, eps and setting, and the step's own wildcards."""

    config: dict
    grid: dict
    family: str
    dataset: str
    seeds: str
    eps_text: str
    setting_text: str
    # D -> the learner's random feature map of the job's block with D features (rules/settings.smk).
    feature_map: Callable = field(repr=False)
    # The values of the step's own wildcards for the job (Step.fields): {'variant': 'C', 't': '2'}.
    fields: dict = field(default_factory=dict)

    @property
    def spec(self):
        return self.config["benchmarks"][self.dataset]

    @property
    def eps(self):
        return settings.parse_eps(self.eps_text)

    @property
    def delta(self):
        return self.config["delta"]

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

    def snr(self):
        """The bins' signal-to-noise target of the setting."""
        return grids.value(self.setting, "snr", self.config["bins"]["snr"])

    def bins_per_feature(self, snr, iterations):
        """q by the paper's signal-to-noise rule at `snr`, for a plan of `iterations` error queries."""
        noiseless = self.config["bins"]["noiseless"]
        return settings.bins_per_feature(self.n_val, self.features, iterations, self.eps, snr, noiseless)
