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


def test_accuracies_become_counts_of_correct_test_records():
    # 0.7 + 0.0136 is 892 / 1250 up to its last bits; 0.595238 is 125 / 210 to 6 digits, as the CSV files hold it
    counts = statistics.correct([0.7 + 0.0136, 0.595238, 0.25, 1.0], [1250, 210, 4, 3])
    assert counts.tolist() == [892, 125, 1, 3] and counts.dtype == np.int64
    assert statistics.correct(np.array([0.2, 0.4]), 5).tolist() == [1, 2]  # one n_test for every run
    with pytest.raises(ValueError, match="accuracy 0.5 is no count of correct records out of 3 test records"):
        statistics.correct([2 / 3, 0.5], 3)  # 1.5 records: the wrong test split


def test_wilcoxon_ties_differences_equal_in_correct_records():
    """20 runs on 1250 test records; differences +17, -17 (tied at rank 1.5), -20, -21, then +22 to
    +37 (ranks 3 to 20). As accuracies, the two |differences| of 0.0136 differ in their last bits,
    and SciPy, seeing no tie, takes the exact distribution. As counts they tie: the normal
    approximation with the tie correction, T+ = 210 - (1.5 + 3 + 4) = 201.5, mean n(n+1)/4 = 105,
    variance n(n+1)(2n+1)/24 - (2^3 - 2)/48 = 717.375."""
    d = np.array([17, -17, -20, -21, *range(22, 38)])
    base = 800 + 5 * np.arange(20)
    base[1] = 917
    a, b = (base + d) / 1250, base / 1250
    assert abs(a[0] - b[0]) != abs(a[1] - b[1])  # the float noise the counts remove
    by_hand = 2 * scipy_stats.norm.sf((201.5 - 105) / math.sqrt(717.375))
    counts = statistics.correct(a, 1250), statistics.correct(b, 1250)
    assert statistics.wilcoxon(*counts) == pytest.approx(by_hand, rel=1e-9)
    assert statistics.wilcoxon(a, b) != pytest.approx(by_hand, rel=0.5)  # the untied accuracies: exact, 5x smaller


def test_corrected_resampled_t_on_a_known_case():
    """d = (2, 4, 6), J = 3: mean 4, var 4; n_test / n_train = 2 / 3, so t = 4 / sqrt((1/3 + 2/3) 4) = 2
    on 2 degrees of freedom, whose two-sided p is 1 - t / sqrt(2 + t^2) = 1 - 2 / sqrt(6). Without the
    correction (n_test = 0) it is the one-sample t-test: t = 4 / sqrt(4 / 3), p = 1 - t / sqrt(2 + t^2)."""
    a, b = np.array([12, 24, 36]), np.array([10, 20, 30])
    assert statistics.corrected_t(a, b, n_train=150, n_test=100) == pytest.approx(1 - 2 / math.sqrt(6))
    assert statistics.corrected_t(b, a, n_train=150, n_test=100) == pytest.approx(1 - 2 / math.sqrt(6))
    t, plain = 4 / math.sqrt(4 / 3), statistics.corrected_t(a, b, n_train=150, n_test=0)
    assert plain == pytest.approx(1 - t / math.sqrt(2 + t**2)) == scipy_stats.ttest_1samp(a - b, 0).pvalue
    assert statistics.corrected_t(a, a, 150, 100) == 1.0 and statistics.corrected_t(a + 3, a, 150, 100) == 0.0
