# The privacy plan of ExPriL's releases (a plug-in method's is its own, expril/plugins/): each
# releasing rule's `mechanism` param (expril/privacy/mechanisms.py), the mechanism's settings for
# the job's dataset and eps plus the secret's digest, so that a new secret or plan reruns exactly
# the releases it changes.


PLANS = {
    # ExPriL's bin counts and error queries (Eq. 14: lambda = d (T+1) / eps), on the dataset's bins.
    "expril": lambda wildcards, eps, delta: mechanisms.get(config["mechanism"])(
        eps,
        delta,
        settings.feature_count(spec(wildcards)),
        T,
        spec(wildcards)["importance_sampling"],
    ),
}


def privacy_plan(release):
    """The `mechanism` param of the rules making (or reading) `release`, a key of PLANS."""
    return lambda wildcards: PLANS[release](
        wildcards, settings.parse_eps(wildcards.eps), config["delta"]
    ).param() | {"secret_digest": SECRET_DIGEST}
