# The privacy plan of ExPriL's releases (a plug-in method's is its own, expril/plugins/): each
# releasing rule's `mechanism` param (expril/privacy/mechanisms.py), the mechanism's settings for
# the job's dataset and eps plus the secret's digest, so that a new secret or plan reruns exactly
# the releases it changes.


def expril_plan(wildcards, eps, delta):
    """ExPriL's bin counts and error queries (Eq. 14: lambda = d (T+1) / eps), on the dataset's
    bins, at the T and budget split of the job's setting (a split only where it sets one).
    """
    split = budget_split(wildcards)
    return chain_mechanism(wildcards)(
        eps,
        delta,
        settings.feature_count(spec(wildcards)),
        iterations(wildcards),
        spec(wildcards)["importance_sampling"],
        **({} if split is None else {"split": split}),
    )


PLANS = {
    "expril": expril_plan,
}


def privacy_plan(release):
    """The `mechanism` param of the rules making (or reading) `release`, a key of PLANS."""
    return lambda wildcards: PLANS[release](
        wildcards, settings.parse_eps(wildcards.eps), run_delta(wildcards)
    ).param() | {"secret_digest": SECRET_DIGEST}
