"""The comparison's statistics (expril.reports.statistics) on known answers: Holm's step-down
adjustment, the Friedman test with Iman and Davenport's F, Nemenyi's critical difference and the
groups a critical-difference diagram joins."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from expril.reports import statistics


def test_holm_adjusts_step_down_and_keeps_the_order():
    # sorted: 0.01 x4 = 0.04, 0.02 x3 = 0.06, 0.03 x2 = 0.06 (monotone), 0.5 x1 = 0.5
    assert statistics.holm([0.03, 0.5, 0.01, 0.02]).tolist() == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert statistics.holm([0.2, 0.9]).tolist() == pytest.approx([0.4, 0.9])
    assert statistics.holm([0.6, 0.7]).tolist() == pytest.approx([1.0, 1.0])  # capped at 1


def test_wilcoxon_is_two_sided_exact_and_one_when_every_pair_ties():
    a = np.array([0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78])
    assert statistics.wilcoxon(a + 0.05, a) == pytest.approx(2 / 2**8)  # all 8 pairs one way
    assert statistics.wilcoxon(a, a) == 1.0


def test_friedman_and_iman_davenport_on_a_known_table():
    """4 datasets, 3 methods; ranks (1, 2, 3) three times and (3, 2, 1) once: average ranks 1.5,
    2, 2.5; chi2 = 12 N / (k (k+1)) (sum R^2 - k (k+1)^2 / 4) = 2; F = (N-1) chi2 / (N (k-1) - chi2)
    = 1, on F(2, 6)."""
    means = pd.DataFrame([[90, 80, 70], [91, 81, 71], [70, 80, 90], [92, 82, 72]], columns=["a", "b", "c"])
    assert statistics.average_ranks(means).tolist() == [1.5, 2.0, 2.5]
    result = statistics.friedman(means)
    assert result["chi2"] == pytest.approx(2.0) and result["F"] == pytest.approx(1.0)
    assert result["p_F"] == pytest.approx(scipy_stats.f.sf(1.0, 2, 6))


def test_the_critical_difference_is_demsars():
    """Demšar's Table 5a, q_0.05 = 3.031 for 8 methods: CD = 3.031 sqrt(8 x 9 / (6 x 7)) = 3.97 on
    7 datasets; 2.343 for 3 methods."""
    assert statistics.critical_difference(8, 7) == pytest.approx(3.031 * math.sqrt(72 / 42), abs=2e-3)
    assert statistics.critical_difference(3, 10) == pytest.approx(2.343 * math.sqrt(12 / 60), abs=1e-3)


def test_a_diagram_joins_the_methods_closer_than_the_critical_difference():
    ranks = pd.Series({"a": 1.0, "b": 1.5, "c": 2.5, "d": 4.5})
    assert statistics.cliques(ranks, 0.75) == [["a", "b"]]
    assert statistics.cliques(ranks, 1.5) == [["a", "b"], ["b", "c"]]  # a and c exactly CD apart: not joined
    assert statistics.cliques(ranks, 1.75) == [["a", "b", "c"]]
    assert statistics.cliques(ranks, 0.25) == []
