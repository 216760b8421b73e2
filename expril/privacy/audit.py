"""Empirical differential-privacy audit of any mechanism's release (docs/privacy_audit.md).

An eps-DP mechanism M has P[M(D) in S] <= exp(eps) P[M(D') in S] for all neighbouring data sets
D, D' and every event S. The audit samples M on neighbouring one-bin data sets, picks the ordered
pair and the event S that look most distinguishing on a first half of the samples, then turns the
counts on the second, independent half into a lower bound on ln(P[M(D) in S] / P[M(D') in S])
with Clopper-Pearson intervals. Selecting on one half and bounding on the other keeps the bound
valid despite the search. A lower bound above the claimed eps refutes the claim; one below it is
merely consistent with it. An (eps, delta) claim, P[M(D) in S] <= exp(eps) P[M(D') in S] + delta,
is bounded by ln((P[M(D) in S] - delta) / P[M(D') in S]) instead.

`bound` is the one path every audit takes. The oracle's mechanisms (`audit`) are sampled through
their own releases, vectorised; any other release is audited as a black box (`audit_release`): a
function of the records and a noise key, D and D' = D less a canary (the record whose removal
moves the release most), and, for a release of more than two values, one test statistic fitted on
the selection half (Fisher's discriminant).

The oracle's own releases (expril.privacy.mechanisms) are sampled on one feature with one bin,
except `paper-counts`: the `paper` mechanism's bin counts query on one feature with a few bins, whose
divisor is the realised number of records n, so that removing one record changes every bin's answer.
Its exact loss is `exact_counts_query_epsilon` (docs/privacy.md, "The bin counts query").
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from expril.privacy import calibration, mechanisms
from expril.seeds import rng

# The releases audited, by name: (claimed eps in units of 1/scale, names of the released values)
AUDITED = {
    "paper": (1, ["rate"]),  # Eq. 7, clip((E + Lap) / N): the Lemma claims 1/lambda
    "counts-bins": (1, ["N~"]),  # N + Lap: histogram, sensitivity 1
    "counts-errors": (1, ["E~"]),  # E + Lap: histogram, sensitivity 1
    "counts-pair": (2, ["N~", "E~"]),  # both, independent noises: basic composition
    "dirichlet": (1, ["rate"]),  # Beta(sigma E, sigma (N - E)) or fallback: (1/scale, DIRICHLET_DELTA)
    # Paper.release_counts on one feature's bins, clip((N_k + Lap) / n, 0, 1): the Lemma claims 1/lambda
    # per feature. Audited on its first two bins: an event on them is an event on the whole release.
    "paper-counts": (1, ["r1", "r2"]),
}
# The releases sampled on one bin (BinData); `paper-counts` is sampled on a feature's bins (FeatureData).
ONE_BIN = tuple(m for m in AUDITED if m != "paper-counts")
# The dirichlet rows' claimed delta per bin, near a run's (1e-5 over T = 2 queries of d = 5 features).
DIRICHLET_DELTA = 1e-6
CLIP_POINTS = (0.0, 1.0)
# Cut points just above the clip points: the cell [a, _ABOVE[a]) holds exactly the atom a.
_ABOVE = {a: np.nextafter(a, np.inf) for a in CLIP_POINTS}
_ATOM_BELOW = {cut: a for a, cut in _ABOVE.items()}
# Quantile cuts per output value, for 1-D outputs (intervals: ~r^2 / 2 candidate events) and 2-D
# ones (orthants: ~4 r^2), keeping each audit's search to about a second.
RESOLUTION = {1: 100, 2: 40}


@dataclass(frozen=True)
class BinData:
    """One feature, one bin: `size` records, `errors` of them misclassified by the hypothesis."""

    size: int
    errors: int
    n_bins = 1  # not a field

    def records(self):
        ids = np.zeros((self.size, 1), dtype=int)
        wrong = (np.arange(self.size) < self.errors).astype(float)
        return ids, wrong

    @property
    def key(self):
        """What keys its samples' random stream."""
        return self.size, self.errors

    def __str__(self):
        return f"(N={self.size}, E={self.errors})"


@dataclass(frozen=True)
class FeatureData:
    """One feature with len(counts) bins, counts[k] records in bin k (their labels play no part)."""

    counts: tuple

    def records(self):
        ids = np.repeat(np.arange(len(self.counts)), self.counts)[:, None]
        return ids, np.zeros(len(ids))

    @property
    def n_bins(self):
        return len(self.counts)

    @property
    def key(self):
        return self.counts

    def __str__(self):
        return f"(N={list(self.counts)})"


def neighbours(bin_size):
    """Ordered pairs (D, D'), D' being D less one record, an error or a correct one, in both orders.

    The rest of the bin is of the other kind: for Eq. 7 the loss then peaks at ln(N / (N - 1)) +
    (N - 1) / (N lambda) (docs/privacy_audit.md); the count mechanisms are shift-invariant."""
    if bin_size < 1:
        raise ValueError(f"the bin must hold at least one record, got {bin_size}")
    removed_error = (BinData(bin_size, 1), BinData(bin_size - 1, 0))
    removed_correct = (BinData(bin_size, bin_size - 1), BinData(bin_size - 1, bin_size - 1))
    return [removed_error, removed_correct, removed_error[::-1], removed_correct[::-1]]


def count_neighbours(counts):
    """Ordered pairs (D, D') for the bin counts query: D' is D (a FeatureData of `counts`, at least
    2 records) less one record of bin j, for each non-empty bin j; both orders."""
    counts = tuple(int(c) for c in counts)
    if sum(counts) < 2:
        raise ValueError(f"the feature must hold at least 2 records (D' divides by n - 1), got {counts}")
    pairs = [
        (FeatureData(counts), FeatureData(counts[:j] + (c - 1,) + counts[j + 1 :])) for j, c in enumerate(counts) if c
    ]
    return pairs + [pair[::-1] for pair in pairs]


def label_neighbours(bin_size, errors):
    """Ordered pairs (D, D') under the label relation: D' has one more error in the bin of
    `bin_size` records than D, for each count of `errors`; both orders."""
    pairs = [(BinData(bin_size, e), BinData(bin_size, e + 1)) for e in errors]
    return pairs + [pair[::-1] for pair in pairs]


def dirichlet_pairs(scale, bin_size):
    """The dirichlet mechanism's label pairs, by what releases them: the fallback on both sides
    (no error vs one), a `switch` from it to the Beta draw (the largest count falling back vs the
    smallest drawn, E*), and the Beta draw on both at the `Beta edge` (E* vs E* + 1), where sigma
    grows fastest with the count, and in the `Beta middle` (N/2 vs N/2 + 1). A bin too small for
    any sigma has fallback pairs only."""
    errors = np.arange(bin_size + 1)
    drawn = errors[~np.isnan(calibration.search_sigma(1 / scale, DIRICHLET_DELTA, errors, bin_size - errors))]
    kinds = {"fallback": label_neighbours(bin_size, [0])}
    if drawn.size:
        kinds |= {
            "switch": label_neighbours(bin_size, [drawn[0] - 1]),
            "Beta edge": label_neighbours(bin_size, [drawn[0]]),
            "Beta middle": label_neighbours(bin_size, [bin_size // 2]),
        }
    return kinds


def claimed_epsilon(mechanism, scale):
    return np.inf if scale == 0 else AUDITED[mechanism][0] / scale


def claimed_delta(mechanism):
    return DIRICHLET_DELTA if mechanism == "dirichlet" else 0.0


def counts_query_bin_losses(counts, removed, scale):
    """Per bin k of one feature's `paper` counts release r_k = clip((N_k + Lap(scale)) / n, 0, 1),
    the supremum over r_k of the log ratio of its densities (atoms at 0 and 1 included) between D,
    with bin counts `counts` and n = sum(counts) >= 2 records, and D', D less one record of bin
    `removed`: (removal, addition), the sups of ln(f_D / f_D') and of ln(f_D' / f_D).

    On (0, 1) the ratio f_D / f_D' is n / (n - 1) exp((|r (n - 1) - N'_k| - |r n - N_k|) / scale).
    Removal: at r = N_k / n, ln(n / (n - 1)) + N_k / (n scale) for k != j, ln(n / (n - 1)) + (n - N_j) /
    (n scale) for the record's bin j (the atoms give 0 or -1/scale). Addition: 1/scale in every bin,
    at the atom r_k = 1 for k != j (D' clips at N_k + L >= n - 1, D at n) and r_j = 0 for bin j."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum()
    if n < 2 or not 0 <= removed < len(counts) or counts[removed] < 1:
        raise ValueError(f"need n >= 2 records and a record in bin {removed}, got counts {counts.tolist()}")
    if scale == 0:
        return np.full(len(counts), np.inf), np.full(len(counts), np.inf)
    spread = counts.copy()
    spread[removed] = n - counts[removed]
    return math.log(n / (n - 1)) + spread / (n * scale), np.full(len(counts), 1 / scale)


def exact_counts_query_epsilon(counts, removed, scale, bins=None):
    """The exact privacy loss of `paper`'s bin counts query on one feature (Paper.release_counts)
    between D (`counts`) and D less one record of bin `removed`, in both orders:

        max(q ln(n / (n - 1)) + 2 (n - N_j) / (n scale),  q / scale),   q bins, n records.

    The bins' noises are independent, so the log density ratio is a sum over bins and its
    supremum the sum of theirs (counts_query_bin_losses), in one direction at a time. `bins`:
    the released bins audited (all by default). For d features, the query's loss is the max of
    the two directions' sums over the features."""
    removal, addition = counts_query_bin_losses(counts, removed, scale)
    bins = slice(None) if bins is None else list(bins)
    return float(max(removal[bins].sum(), addition[bins].sum()))


def worst_counts_query_epsilon(bins, records, scale, features=1):
    """The exact loss of `paper`'s bin counts query over every pair of neighbours with `records`
    (n >= 2) in D and `bins` (q) bins in each of `features` (d) features: d max(q ln(n / (n - 1)) +
    2 (n - 1) / (n scale), q / scale), a record alone in its bin of every feature (for q = 1 it
    holds all n: d max(ln(n / (n - 1)), 1 / scale)). The Lemma claims d / scale."""
    if bins == 1:
        return features * exact_counts_query_epsilon((records,), 0, scale)
    return features * exact_counts_query_epsilon((1, records - 1) + (0,) * (bins - 2), 0, scale)


def exact_epsilon(mechanism, scale, bin_size):
    """The true privacy loss on `neighbours(bin_size)`: the claim, except for Eq. 7 where dividing
    by the true count adds a Jacobian factor N / (N - 1) (docs/privacy_audit.md). For
    `paper-counts`, `bin_size` is the feature's bin counts, and the loss that of its audited bins
    (the first two) on count_neighbours."""
    if mechanism == "dirichlet":
        return np.nan  # not derived: the Beta draw's sigma differs between D and D'
    if mechanism == "paper-counts":
        bins = range(len(AUDITED[mechanism][1]))
        return max(exact_counts_query_epsilon(bin_size, j, scale, bins) for j, c in enumerate(bin_size) if c)
    claimed = claimed_epsilon(mechanism, scale)
    if mechanism != "paper" or bin_size < 2 or scale == 0:
        return claimed
    n = bin_size
    return max(claimed, np.log(n / (n - 1)) + (n - 1) / (n * scale))


class _Draws:
    """Stands in for the oracle's numpy Generator: every Laplace call returns n rows of noise, so
    one call to the oracle's own functions broadcasts into n independent releases."""

    def __init__(self, generator, n):
        self.generator, self.n = generator, n

    def laplace(self, loc, scale, size):
        return self.generator.laplace(loc, scale, (self.n, size))

    def beta(self, a, b):
        return self.generator.beta(a, b, (self.n,) + np.shape(a))


def _release(mechanism, ids, wrong, scale, noise, n_bins=1):
    if mechanism == "paper":
        return mechanisms.Paper.at_scale(scale).release_errors(ids, 1, wrong, noise)
    if mechanism == "paper-counts":
        # Every bin is drawn, as the oracle does; the audited ones are kept.
        return mechanisms.Paper.at_scale(scale).release_counts(ids, n_bins, noise)[..., : len(AUDITED[mechanism][1])]
    if mechanism == "counts-bins":
        return mechanisms.Counts.at_scale(scale).release_counts(ids, 1, noise)
    if mechanism == "counts-errors":
        return mechanisms.Counts.at_scale(scale).release_errors(ids, 1, wrong, noise)
    if mechanism == "dirichlet":
        # One feature, one query: the mechanism's bin share is the whole claim.
        return mechanisms.Dirichlet(1 / scale, DIRICHLET_DELTA, 1, 1, False).release_errors(ids, 1, wrong, noise)
    if mechanism == "counts-pair":
        return np.concatenate(
            [_release(m, ids, wrong, scale, noise) for m in ("counts-bins", "counts-errors")], axis=-1
        )
    raise ValueError(f"unknown mechanism {mechanism!r}, expected one of {list(AUDITED)}")


def sample(mechanism, dataset, scale, n, generator):
    """n independent outputs of `mechanism` on `dataset` (a BinData, or a FeatureData for
    `paper-counts`), as an (n, values) array."""
    ids, wrong = dataset.records()
    out = _release(mechanism, ids, wrong, scale, _Draws(generator, n), dataset.n_bins)
    # Without noise (scale 0) the oracle returns its single exact answer.
    return np.broadcast_to(out, (n, len(AUDITED[mechanism][1])))


def clopper_pearson(successes, trials, alpha):
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha:
    (lower, upper) on the success probability of a binomial."""
    k = np.asarray(successes, dtype=float)
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), trials - k + 1), 0.0)
    upper = np.where(k < trials, stats.beta.ppf(1 - alpha, k + 1, np.maximum(trials - k, 1)), 1.0)
    return lower, upper


def _log_ratio_bound(count_p, count_q, trials, alpha, delta=0.0):
    """Lower bound on ln((p - delta) / q) from a lower bound on p and an upper bound on q: the
    smallest eps for which p <= e^eps q + delta can hold (ln(p / q) for delta = 0)."""
    p_lower, _ = clopper_pearson(count_p, trials, alpha)
    _, q_upper = clopper_pearson(count_q, trials, alpha)
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(p_lower - delta, 0.0)) - np.log(q_upper), p_lower, q_upper


def _cuts(values, resolution):
    """Cut points on one output value: quantiles of the selection samples, plus cells holding
    exactly 0 and exactly 1, where clipping puts a mass."""
    atoms = [x for a in CLIP_POINTS for x in (a, _ABOVE[a])]
    return np.unique(np.concatenate([np.quantile(values, np.linspace(0, 1, resolution)), atoms]))


def _candidate_sets(cuts, intervals):
    """Sets on one output value as [lo, hi) bounds and as masks over the cells between cuts: all
    intervals of cells (1-D outputs), or the half-lines and the whole line (factors of 2-D
    product events, i.e. orthants and single-value thresholds)."""
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    if intervals:
        lo, hi = np.triu_indices(len(edges), k=1)
        bounds = np.column_stack([edges[lo], edges[hi]])
    else:
        ends = np.full_like(cuts, np.inf)
        bounds = np.concatenate([[[-np.inf, np.inf]], np.column_stack([-ends, cuts]), np.column_stack([cuts, ends])])
    masks = (bounds[:, :1] <= edges[:-1]) & (edges[1:] <= bounds[:, 1:])
    return bounds, masks.astype(float)


def _event_counts(samples, cuts, masks):
    """How many samples fall in every candidate event (flattened over the product of sets)."""
    shape = [len(c) + 1 for c in cuts]
    cells = np.ravel_multi_index([np.searchsorted(c, samples[:, j], side="right") for j, c in enumerate(cuts)], shape)
    hist = np.bincount(cells, minlength=np.prod(shape)).reshape(shape)
    return masks[0] @ hist if len(masks) == 1 else (masks[0] @ hist @ masks[1].T).ravel()


def _inside(samples, event):
    return np.all([(lo <= samples[:, j]) & (samples[:, j] < hi) for j, (lo, hi) in enumerate(event)], axis=0)


def _describe(event, names):
    parts = []
    for name, (lo, hi) in zip(names, event):
        if lo in CLIP_POINTS and hi == _ABOVE[lo]:
            parts.append(f"{name} == {lo:g}")
            continue
        left = "" if lo == -np.inf else f"{_ATOM_BELOW[lo]:g} < " if lo in _ATOM_BELOW else f"{lo:.4g} <= "
        right = "" if hi == np.inf else f" <= {_ATOM_BELOW[hi]:g}" if hi in _ATOM_BELOW else f" < {hi:.4g}"
        if left or right:
            parts.append(left + name + right)
    return " and ".join(parts) or "always"


def pairs_by_kind(mechanism, scale, bin_size):
    """The audited neighbour pairs, by kind: the record relation's for the Laplace releases, the
    label relation's (dirichlet_pairs) for dirichlet; for `paper-counts`, `bin_size` is the
    feature's bin counts (count_neighbours)."""
    if mechanism == "dirichlet":
        return dirichlet_pairs(scale, bin_size)
    if mechanism == "paper-counts":
        if len(bin_size) < len(AUDITED[mechanism][1]):
            raise ValueError(f"paper-counts audits the first two bins of a feature, got bin counts {bin_size}")
        return {"add/remove": count_neighbours(bin_size)}
    return {"add/remove": neighbours(bin_size)}


def audit(mechanism, scale, bin_size, n_samples, seed, confidence=0.95, pairs=None):
    """Lower bound, holding with probability `confidence`, on the privacy loss of `mechanism` at
    noise `scale` between one-bin data sets of `bin_size` records (for `paper-counts`, a feature
    with bin counts `bin_size`) and their neighbours (`pairs`, by default all of pairs_by_kind), at
    the mechanism's claimed delta: `bound` on n_samples outputs per data set."""
    if pairs is None:
        pairs = [pair for kind in pairs_by_kind(mechanism, scale, bin_size).values() for pair in kind]
    datasets = {data for pair in pairs for data in pair}
    draws = {
        data: sample(mechanism, data, scale, n_samples, rng("dp-audit", mechanism, scale, *data.key, seed))
        for data in datasets
    }
    delta = claimed_delta(mechanism)
    return {
        "mechanism": mechanism,
        "scale": scale,
        "bin_size": bin_size,
        "n_samples": n_samples,
        "claimed_eps": claimed_epsilon(mechanism, scale),
        "claimed_delta": delta,
        "exact_eps": exact_epsilon(mechanism, scale, bin_size),
    } | bound(draws, pairs, delta, confidence, AUDITED[mechanism][1])


def bound(draws, pairs, delta, confidence=0.95, names=None):
    """The audit's one path, for the oracle's mechanisms and any other release: `draws` {data set:
    (n, values) array of independent releases}, `pairs` the ordered neighbours (D, D') among its
    keys. The first half of each data set's draws selects the ordered pair and the event (on the
    release's values where it has one or two, else on one test statistic, `_statistic`); the second
    bounds ln((P[M(D) in S] - delta) / P[M(D') in S]) from below, with probability `confidence`."""
    alpha = (1 - confidence) / 2
    n_samples = min(len(d) for d in draws.values())
    half = n_samples // 2
    values = next(iter(draws.values())).shape[1]
    names = names or [f"M{j + 1}" for j in range(values)]
    best_score, best = -np.inf, None
    for d, d_prime in pairs:
        select_p, select_q = draws[d][:half], draws[d_prime][:half]
        project, shown = _statistic(select_p, select_q, names)
        select_p, select_q = project(select_p), project(select_q)
        cuts = [
            _cuts(np.concatenate([select_p[:, j], select_q[:, j]]), RESOLUTION[len(shown)]) for j in range(len(shown))
        ]
        sets = [_candidate_sets(c, intervals=len(shown) == 1) for c in cuts]
        masks = [m for _, m in sets]
        count_p, count_q = _event_counts(select_p, cuts, masks), _event_counts(select_q, cuts, masks)
        # Scored by a bound that holds for all candidates at once: among thousands of events, the
        # raw ratio (or a per-event bound) favours rare events whose ratio was lucky on this half.
        scores = _log_ratio_bound(count_p, count_q, half, alpha / len(count_p), delta)[0]
        index = int(np.argmax(scores))
        if best is None or scores[index] > best_score:
            chosen = np.unravel_index(index, [len(b) for b, _ in sets])
            best_score, best = scores[index], (d, d_prime, project, shown, [b[i] for (b, _), i in zip(sets, chosen)])

    d, d_prime, project, shown, event = best
    test_p, test_q = project(draws[d][half:n_samples]), project(draws[d_prime][half:n_samples])
    count_p, count_q = _inside(test_p, event).sum(), _inside(test_q, event).sum()
    eps_lower, p_lower, q_upper = _log_ratio_bound(count_p, count_q, len(test_p), alpha, delta)
    return {
        "eps_lower": float(eps_lower),
        "neighbours": f"{d} vs {d_prime}",
        "event": _describe(event, shown),
        "p": float(count_p / len(test_p)),
        "q": float(count_q / len(test_q)),
        "p_lower": float(p_lower),
        "q_upper": float(q_upper),
    }


def _statistic(select_p, select_q, names):
    """(a projection of the releases, the names of its values): the release itself where it has
    one or two values; else t = w . M, w Fisher's discriminant fitted on the selection half,
    (S + r I)^-1 (mean_D - mean_D'), S the pooled covariance and r a ridge 1e-6 of its mean
    variance: the most powerful statistic for Gaussian noise, and a noise-free direction (a draw of
    noise shared by two answers, a value without noise) gets all the weight."""
    if select_p.shape[1] <= 2:
        return (lambda draws: draws), names
    w = np.linalg.solve(_regularised_covariance(select_p, select_q), select_p.mean(0) - select_q.mean(0))
    return (lambda draws: (draws @ w)[:, None]), ["t"]


def _regularised_covariance(p, q):
    pooled = np.atleast_2d((np.cov(p, rowvar=False) + np.cov(q, rowvar=False)) / 2)
    variance = np.trace(pooled) / len(pooled)
    return pooled + np.eye(len(pooled)) * (1e-6 * variance if variance > 0 else 1.0)


def audit_release(release, x, y, candidates, eps, delta, n_samples, seed, confidence=0.95):
    """Black-box audit of a release claimed (eps, delta)-DP under add/remove-one-record: `release(x,
    y, keys)` returns one release per noise key (an int), as a (len(keys), values) array. D is the
    records (x, y); D' is D less the canary, the record of `candidates` (indices) whose removal moves
    the release most in its noise's own metric (`canary`, on a pilot of a quarter as many draws,
    at most 512, not used after); then n_samples releases of D and of D' with independent keys,
    `bound` in both orders. The result adds the claim, the canary and the draws."""
    pilot = max(2, min(512, n_samples // 4))
    keys = rng("dp-audit", "release", seed).integers(0, 2**62, size=(3, max(n_samples, pilot)))
    removed = canary(release, x, y, candidates, keys[0, :pilot])
    keep = np.arange(len(x)) != removed
    draws = {
        "D": _releases(release, x, y, keys[1, :n_samples]),
        f"D less record {removed}": _releases(release, x[keep], y[keep], keys[2, :n_samples]),
    }
    pairs = [tuple(draws), tuple(draws)[::-1]]
    return {"claimed_eps": eps, "claimed_delta": delta, "canary": removed, "n_samples": n_samples} | bound(
        draws, pairs, delta, confidence
    )


def canary(release, x, y, candidates, keys, common=2):
    """The record of `candidates` whose removal moves the release most: the largest d' S^-1 d, S the
    covariance of the releases of D over `keys` (regularised as `_statistic`'s) and d the mean
    change of the release on its first `common` keys, the same noise keys on both sides (an
    additive noise cancels)."""
    full = _releases(release, x, y, keys)
    spread = _regularised_covariance(full, full)
    scores = []
    for i in candidates:
        keep = np.arange(len(x)) != i
        move = (full[:common] - _releases(release, x[keep], y[keep], keys[:common])).mean(axis=0)
        scores.append(move @ np.linalg.solve(spread, move))
    return int(candidates[int(np.argmax(scores))])


def _releases(release, x, y, keys):
    out = np.asarray(release(x, y, keys), dtype=float)
    return out.reshape(len(keys), -1)


def audit_table(mechanisms=ONE_BIN, bin_sizes=(1, 2, 3, 5, 10, 50), scales=(1, 2, 5), n_samples=400_000, seed=0):
    """One `audit` row per mechanism, bin size, scale and kind of neighbours (pairs_by_kind)."""
    return pd.DataFrame(
        [
            audit(m, s, b, n_samples, seed, pairs=pairs) | {"pairs": kind}
            for m in mechanisms
            for b in bin_sizes
            for s in scales
            for kind, pairs in pairs_by_kind(m, s, b).items()
        ]
    )
