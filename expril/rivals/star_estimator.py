"""mbi's mirror descent (McKenna, Sheldon and Miklau, ICML 2019, Algorithm 1, as
`mbi.estimation.mirror_descent` runs it) for AIM's workload, compiled once per process and data set.

OpenDP's AIM calls its estimator after every measurement of every release. mbi's builds a new
jitted closure each time, with the measurements baked in, so JAX traces and compiles it anew:
about a fifth of a release's time (benchmarks/RESULTS.md (k)). Here the compiled program depends
on the data set's columns alone:

- the model's cliques are the whole star of (feature, label) pairs, whichever AIM has measured so
  far; a pair it has not measured gets updates that are functions of the feature alone (the
  gradient of its one-way term), so it carries no dependence on the label and the model is the
  distribution mbi's smaller set of cliques would hold;
- the measurements enter as arguments, summed per clique into their precision and
  precision-weighted mean: 0.5 sum_m ||(mu - y_m) / s_m||^2 is 0.5 p ||mu - ybar||^2 plus a
  constant, with p = sum_m 1 / s_m^2 and ybar = sum_m y_m / s_m^2 / p.

The rest is mbi's: its marginal oracle, its known total, its Armijo line search from 2 / (L total)
and its 1000 iterations. L, the largest eigenvalue of the loss's Hessian, is exact here (the
Hessian is block diagonal by clique; mbi estimates it by power iteration on its own cliques), so
the first step may differ from mbi's and the line search adapts it: the fitted model equals mbi's
to the tolerance tests/rivals/test_star_estimator.py states, not bit for bit. What AIM measures and
spends is OpenDP's alone; the estimator only post-processes its releases.
"""

import jax
import jax.numpy as jnp
import numpy as np
from mbi import CliqueVector, Factor, MarkovRandomField, marginal_oracles
from mbi.estimation import minimum_variance_unbiased_total

ITERATIONS = 1000  # mbi's default, which OpenDP's estimator uses


def star(domain, label):
    """The (feature, label) cliques of a domain, in its columns' order."""
    return [(name, label) for name in domain.attrs if name != label]


def sufficient_statistics(domain, measurements, label):
    """Per clique of the star, each measured pair's, each feature's and the label's precision and
    precision-weighted mean (zero where nothing was measured), as arrays in the star's axes."""
    cliques = star(domain, label)
    index = {clique: j for j, clique in enumerate(cliques)}
    shapes = [domain.project(c).shape for c in cliques]
    stats = {
        "pair": [[0.0, np.zeros(s)] for s in shapes],
        "feature": [[0.0, np.zeros(s[0])] for s in shapes],
        "label": [0.0, np.zeros(domain[label])],
    }
    for m in measurements:
        if m.query != Factor.datavector:  # as mbi tells identity queries apart
            raise ValueError(f"the star estimator takes identity queries only, not {m.query} on {m.clique}")
        clique = tuple(m.clique)
        values = np.reshape(np.asarray(m.noisy_measurement, float), domain.project(clique).shape)
        if clique == (label,):
            entry = stats["label"]
        elif len(clique) == 1 and (clique[0], label) in index:
            entry = stats["feature"][index[clique[0], label]]
        elif clique in index or clique[::-1] in index:
            values = values if clique in index else values.T
            entry = stats["pair"][index.get(clique, index.get(clique[::-1]))]
        else:
            raise ValueError(f"clique {clique} is not in the star of (feature, {label!r}) pairs")
        precision = 1.0 / max(m.stddev, 1e-12) ** 2  # mbi's floor on the stddev
        entry[0] += precision
        entry[1] = entry[1] + precision * values

    def mean(entry):
        return (entry[0], entry[1] / entry[0] if entry[0] > 0 else entry[1])

    return {
        "pair": [mean(e) for e in stats["pair"]],
        "feature": [mean(e) for e in stats["feature"]],
        "label": mean(stats["label"]),
    }


def lipschitz(stats):
    """The largest eigenvalue of the loss's Hessian in the star's marginals: per clique, its pair's
    precision, plus its feature's times the label's values (a one-way marginal sums them; OpenDP
    adds a null category to each column), plus for the first clique, which holds the label's term,
    the label's precision times the feature's bins."""
    labels, first_bins = len(stats["label"][1]), len(stats["feature"][0][1])
    curvature = [p + labels * f for (p, _), (f, _) in zip(stats["pair"], stats["feature"])]
    curvature[0] += first_bins * stats["label"][0]
    return max(curvature)


def _loss(mu, stats, cliques):
    total = 0.0
    for clique, (p, mean), (f, feature_mean) in zip(cliques, stats["pair"], stats["feature"]):
        values = mu.arrays[clique].values
        total += 0.5 * p * jnp.sum((values - mean) ** 2)
        total += 0.5 * f * jnp.sum((values.sum(axis=1) - feature_mean) ** 2)
    p, mean = stats["label"]
    return total + 0.5 * p * jnp.sum((mu.arrays[cliques[0]].values.sum(axis=0) - mean) ** 2)


@jax.jit
def _descend(theta, alpha, stats, total):
    """mbi's mirror-descent iterations with its line search, as one program."""
    oracle = marginal_oracles.message_passing_fast

    def step(_, carry):
        theta, alpha = carry
        mu = oracle(theta, total)
        loss, grad = jax.value_and_grad(_loss)(mu, stats, theta.cliques)
        theta2 = theta - alpha * grad
        mu2 = oracle(theta2, total)
        decrease = loss - _loss(mu2, stats, theta.cliques) >= 0.5 * alpha * grad.dot(mu - mu2)
        theta = jax.lax.cond(decrease, lambda: theta2, lambda: theta)
        return theta, jax.lax.select(decrease, 1.01 * alpha, 0.5 * alpha)

    theta, _ = jax.lax.fori_loop(0, ITERATIONS, step, (theta, alpha))
    return theta, oracle(theta, total)


def mirror_descent(domain, measurements, *, potentials=None, label="y"):
    """The estimator OpenDP's `Algorithm.estimator` takes (its signature is OpenDP's
    `mirror_descent`'s): the model of the measurements on `domain`, started from `potentials`."""
    cliques = star(domain, label)
    total = minimum_variance_unbiased_total(measurements)
    stats = sufficient_statistics(domain, measurements, label)
    theta = CliqueVector.zeros(domain, cliques) if potentials is None else potentials.expand(cliques)
    theta, marginals = _descend(theta, 2.0 / (lipschitz(stats) * total), stats, total)
    return MarkovRandomField(potentials=theta, marginals=marginals, total=total)
