# The privacy plan of every release, in one place: each releasing rule's `mechanism` param
# (expril/privacy/mechanisms.py), the mechanism's settings for the job's dataset and eps plus the
# secret's digest, so that a new secret or plan reruns exactly the releases it changes.


def _histogram(name, iterations):
    """An oracle histogram mechanism on the dataset's bins, planned for `iterations` error queries."""
    return lambda wildcards, eps, delta: mechanisms.get(name)(
        eps,
        delta,
        settings.feature_count(spec(wildcards)),
        iterations,
        spec(wildcards)["importance_sampling"],
    )


PLANS = {
    # ExPriL's bin counts and error queries (Eq. 14: lambda = d (T+1) / eps).
    "expril": _histogram(config["mechanism"], T),
    # LLP: `counts` for one iteration, its bin counts query and its error query on h_0 = 1
    # spending the run's eps (lambda = 2d/eps).
    "llp": _histogram("counts", 1),
    # Pb. 1 by MMD: a Gaussian release with the bin counts query's share of eps, eps / (T+1).
    "embedding": lambda wildcards, eps, delta: mechanisms.MeanEmbedding(
        eps, delta, n_val(wildcards), T
    ),
    # DP-SGD: Poisson batches on the validation split, at its setting's rate, epochs and clipping.
    "dpsgd": lambda wildcards, eps, delta: mechanisms.DPSGD(
        eps,
        delta,
        dpsgd_sample_rate(wildcards),
        dpsgd_recipe(wildcards)["epochs"],
        dpsgd_recipe(wildcards)["max_grad_norm"],
    ),
    # DP-MERF: one Gaussian release with the run's (eps, delta).
    "dpmerf": lambda wildcards, eps, delta: mechanisms.DPMERF(
        eps, delta, n_val(wildcards)
    ),
    # AIM (or MST): one release in pure DP with the run's eps (its delta unspent).
    "aim": lambda wildcards, eps, delta: mechanisms.get(
        config["comparison"]["aim"]["algorithm"]
    )(eps, delta),
}


def privacy_plan(release):
    """The `mechanism` param of the rules making (or reading) `release`, a key of PLANS."""
    return lambda wildcards: PLANS[release](
        wildcards, settings.parse_eps(wildcards.eps), config["delta"]
    ).param() | {"secret_digest": SECRET_DIGEST}
