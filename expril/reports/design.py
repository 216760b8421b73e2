"""How each dataset's runs are drawn, which decides the comparison's paired test (docs/comparison.md,
"Statistics"). Apart from expril.settings, whose every change reruns the study's jobs: this is read
by the comparison's report alone."""

from dataclasses import dataclass

from expril import settings, tables


@dataclass(frozen=True)
class Design:
    """How a dataset's runs are drawn, which decides its paired test: `n_test` the test split's
    records, `n_train` those a run learns from (the source and the curator's validation split),
    `resampled` whether the runs split one record pool anew (overlapping) instead of drawing fresh
    data, `held_out` whether a share of its records is held for the calibration's runs, which read
    no record of the reported runs' (expril.datasets._part)."""

    n_test: int
    n_train: int
    resampled: bool
    held_out: bool = False

    @property
    def transferred(self):
        """No calibration run may read its records (its runs resample one pool and no part is held
        out for the calibration): each method's setting there is transferred (expril.reports.tuning)."""
        return self.resampled and not self.held_out


def designs(config):
    """Each benchmark's Design under the configuration. Its runs resample one pool when it reads a
    file (each run splits the file's records anew) but for `draw: disjoint` (each run its own
    records), or when it redraws the split only (`redraw: split`, every run on data set 0);
    otherwise each run draws fresh data from the generator."""
    return {
        name: Design(
            n_test=settings.benchmark_n_test(config, spec),
            n_train=spec["n_source"] + settings.benchmark_n_val(config, spec),
            resampled=(tables.is_table(spec) and spec.get("draw", "resample") == "resample")
            or settings.benchmark_setting(config, spec, "redraw") == "split",
            held_out="calibration" in spec,
        )
        for name, spec in config["benchmarks"].items()
    }
