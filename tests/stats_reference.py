"""The comparison's paired tests computed apart from expril.reports (scipy's Wilcoxon, Nadeau and
Bengio's corrected t and Holm's step-down written out here), the known answer for tests that rerun
the statistics on published runs: a test compares the package with this, never with the
package's own earlier output."""

import numpy as np
import pytest
from scipy import stats

LEVEL = 0.05
BASES = {"C-mmd": "C", "I-mmd": "I"}


def corrected_t(d, n_train, n_test):
    """Two-sided p of the corrected resampled t-test on the paired differences d."""
    if not d.any():
        return 1.0
    variance = (1 / len(d) + n_test / n_train) * d.var(ddof=1)
    return 0.0 if variance == 0 else 2 * stats.t.sf(abs(d.mean()) / np.sqrt(variance), len(d) - 1)


def holm(p):
    """{key: Holm-adjusted p} of {key: p}."""
    adjusted, running = {}, 0.0
    for i, key in enumerate(sorted(p, key=p.get)):
        running = max(running, min(1.0, (len(p) - i) * p[key]))
        adjusted[key] = running
    return adjusted


def repeats(runs):
    """The (dataset, method) pairs where a method built on another (C-mmd on C, I-mmd on I) has
    exactly its base's runs, every eps, column and seed: the report does not test them."""
    found = set()
    for (dataset, method), own in runs[runs.method.isin(BASES)].groupby(["dataset", "method"]):
        base = runs[(runs.dataset == dataset) & (runs.method == BASES[method])]
        both = own.merge(base, on=["eps", "column", "seed"])
        if len(both) == len(own) == len(base) and (both.accuracy_x == both.accuracy_y).all():
            found.add((dataset, method))
    return found


def paired_tests(runs, finite, designs=None):
    """{(dataset, eps, method): Holm-adjusted p} of every method against C-ExPriL in the tuned
    column of `runs` (comparison_runs.csv's columns) but those that repeat their base, at finite
    eps or every eps. Without `designs` round 1's rules: Wilcoxon on float accuracies. With them
    round 2's: counts of correct records, the corrected resampled t-test where a dataset's design
    resamples, Wilcoxon otherwise."""
    skipped = repeats(runs)
    runs = runs[(runs.column == "tuned") & (np.isfinite(runs.eps) | (not finite))]
    if designs is not None:
        runs = runs.assign(accuracy=np.rint(runs.accuracy * runs.dataset.map(lambda d: designs[d].n_test)))
    wide = runs.pivot_table(index=["dataset", "eps", "seed"], columns="method", values="accuracy")
    p = {}
    for (dataset, eps), cell in wide.groupby(level=["dataset", "eps"]):
        for method in cell.columns.drop("C"):
            pairs = cell[[method, "C"]].dropna()
            d = (pairs[method] - pairs.C).to_numpy()
            if not len(d) or not d.any() or (dataset, method) in skipped:
                continue
            design = None if designs is None else designs[dataset]
            if design is not None and design.resampled:
                p[dataset, eps, method] = corrected_t(d, design.n_train, design.n_test)
            else:
                p[dataset, eps, method] = stats.wilcoxon(pairs[method], pairs.C, zero_method="zsplit").pvalue
    return holm(p)


def assert_tests_are(tests, expected, rel):
    """A comparison_tests.csv frame's Holm-adjusted p-values are the reference's, row for row."""
    found = tests.set_index(["dataset", "eps", "method"]).p_holm
    assert sorted(found.index) == sorted(expected)
    assert found.to_numpy() == pytest.approx([expected[key] for key in found.index], rel=rel, abs=1e-6)


def significant(adjusted):
    return sum(p < LEVEL for p in adjusted.values())
