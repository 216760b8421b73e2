"""The comparison's statistics (Demšar, "Statistical comparisons of classifiers over multiple
data sets", JMLR 2006): paired two-sided tests, Wilcoxon's signed-rank test or, where runs
resample one record pool, Nadeau and Bengio's corrected resampled t-test, with Holm's correction
over every test made, and per ε the Friedman test over datasets on the methods' average ranks with
the Nemenyi critical difference, drawn as a critical-difference diagram. Accuracies enter them as
counts of correct test records (correct())."""

import math

import numpy as np
from scipy import stats

# How far from a whole count accuracy * n_test may be: the comparison's CSV files hold 6
# significant digits, a few thousandths of a record on test splits of some thousand records.
COUNT_TOLERANCE = 0.01


def correct(accuracy, n_test):
    """Each run's count of correct test records, round(accuracy * n_test): runs that got as many
    records right compare equal exactly, whatever the float noise of their accuracies. Refuses an
    accuracy that is no fraction of its n_test (a wrong test split size)."""
    accuracy = np.asarray(accuracy, dtype=float)
    n_test = np.broadcast_to(np.asarray(n_test), accuracy.shape)
    counts = accuracy * n_test
    whole = np.rint(counts)
    off = np.abs(counts - whole)
    if off.size and off.max() > COUNT_TOLERANCE:
        i = off.argmax()
        raise ValueError(
            f"accuracy {accuracy[i]} is no count of correct records out of {n_test[i]} test records: "
            "is the test split's size right?"
        )
    return whole.astype(np.int64)


def wilcoxon(a, b):
    """Two-sided Wilcoxon signed-rank p of paired samples (counts of correct records, so that equal
    differences tie); zero differences split between the signs (Demšar 2006, 3.1.3; test
    accuracies tie often on small test sets); 1 when all pairs tie."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.all(a == b):
        return 1.0
    return float(stats.wilcoxon(a, b, zero_method="zsplit", alternative="two-sided").pvalue)


def corrected_t(a, b, n_train, n_test):
    """Two-sided p of Nadeau and Bengio's corrected resampled t-test (Machine Learning 52, 2003)
    on paired samples of J runs that split one record pool anew: t = mean(d) / sqrt((1/J +
    n_test/n_train) var(d)) on J - 1 degrees of freedom, d = a - b. The n_test/n_train term allows
    for the runs' overlapping training and test sets, which correlate their results: the plain
    t-test's 1/J alone understates the variance and rejects far too often. 1 when all pairs tie, 0
    when every pair differs by the same nonzero amount."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not d.any():
        return 1.0
    spread = np.sqrt((1 / len(d) + n_test / n_train) * d.var(ddof=1))
    if spread == 0:
        return 0.0
    return float(2 * stats.t.sf(abs(d.mean()) / spread, len(d) - 1))


def paired_interval(d, overlap=0.0, level=0.95):
    """The `level` confidence interval of the mean of paired differences `d` (J runs): mean(d) +-
    t_{J-1} sqrt((1/J + overlap) var(d)), `overlap` = n_test/n_train for runs that resample one
    record pool (corrected_t's variance), 0 for independent runs. (mean, low, high)."""
    d = np.asarray(d, dtype=float)
    mean = float(d.mean())
    if len(d) < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf((1 + level) / 2, len(d) - 1) * math.sqrt((1 / len(d) + overlap) * d.var(ddof=1))
    return mean, mean - half, mean + half


def holm(p_values):
    """Holm's step-down adjusted p-values (Holm 1979): controls the family-wise error rate over
    all the tests at once, p_(i) adjusted to max_{j <= i} min(1, (m - j + 1) p_(j))."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="mergesort")
    scaled = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def average_ranks(means):
    """Each method's average rank over datasets (rows), 1 the best (highest mean), ties averaged."""
    ranks = means.rank(axis=1, ascending=False, method="average")
    return ranks.mean(axis=0)


def friedman(means):
    """The Friedman test on a (datasets x methods) table of mean accuracies: its chi-square (tie
    corrected, scipy) with its p, and Iman and Davenport's F, (N-1) chi2 / (N (k-1) - chi2), on
    F(k-1, (k-1)(N-1)) degrees of freedom, which Demšar prefers, with its p."""
    n, k = means.shape
    chi2, p = stats.friedmanchisquare(*(means[c].to_numpy() for c in means.columns))
    f = (n - 1) * chi2 / (n * (k - 1) - chi2) if n * (k - 1) > chi2 else np.inf
    return {
        "chi2": float(chi2),
        "p_chi2": float(p),
        "F": float(f),
        "p_F": float(stats.f.sf(f, k - 1, (k - 1) * (n - 1))),
    }


def critical_difference(k, n, alpha=0.05):
    """Nemenyi's critical difference of average ranks, q_alpha sqrt(k (k+1) / (6 N)), q_alpha the
    studentized range's 1 - alpha quantile for k groups (infinite df) over sqrt(2) (Demšar's
    Table 5a)."""
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6 * n)))


def cliques(ranks, cd):
    """The maximal groups of methods (by average rank) whose ranks differ by less than `cd`, the
    critical difference, from each other: the bars of a critical-difference diagram."""
    ordered = ranks.sort_values()
    names, values = list(ordered.index), ordered.to_numpy()
    groups = []
    for i in range(len(values)):
        j = int(np.searchsorted(values, values[i] + cd, side="left"))
        group = names[i:j]
        if len(group) > 1 and not any(set(group) <= set(g) for g in groups):
            groups.append(group)
    return groups


def cd_diagram(ax, ranks, cd, title):
    """Demšar's critical-difference diagram on `ax`: the methods on an axis of average rank (1,
    the best, on the right), joined by a bar where their ranks differ by less than `cd`."""
    k = len(ranks)
    ordered = ranks.sort_values()
    ax.set_xlim(1, k)
    ax.set_ylim(0, 1)
    ax.invert_xaxis()
    ax.xaxis.set_ticks_position("top")
    ax.set_xticks(range(1, k + 1))
    ax.spines[["bottom", "left", "right"]].set_visible(False)
    ax.set_yticks([])
    half = (len(ordered) + 1) // 2
    for i, (name, rank) in enumerate(ordered.items()):
        best = i < half  # the better half on the right (rank 1), the other on the left
        y = 0.7 - 0.12 * (i if best else len(ordered) - 1 - i)
        end = 1 - 0.3 if best else k + 0.3
        ax.plot([rank, rank, end], [1, y, y], color="black", linewidth=0.8, clip_on=False)
        ax.text(
            end,
            y,
            f" {name} ({rank:.2f})" if best else f"({rank:.2f}) {name} ",
            ha="left" if best else "right",
            va="center",
            fontsize=8,
        )
    for level, group in enumerate(cliques(ranks, cd)):
        y = 0.95 - 0.05 * level
        ax.plot([ordered[group[0]], ordered[group[-1]]], [y, y], color="black", linewidth=2.5)
    ax.plot([1, 1 + cd], [0.05, 0.05], color="black", linewidth=1)
    ax.text(1 + cd / 2, 0.09, f"CD = {cd:.2f}", ha="center", fontsize=8)
    ax.set_title(title, fontsize=9, pad=18)
