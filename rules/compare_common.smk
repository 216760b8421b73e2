# Helpers of the comparison's rules (rules/compare.smk, rules/synthetic.smk, docs/comparison.md):
# the compared methods and the rivals' privacy plans and inputs.

COMPARISON = config["comparison"]
EXPRIL = {
    "C": "C",
    "I": "I",
    "C-mmd": "C",
    "I-mmd": "I",
}  # compared ExPriL method: its variant
for _method in COMPARISON["methods"]:
    if _method in EXPRIL and EXPRIL[_method] not in config["variants"]:
        raise ValueError(
            f"config: comparison: methods lists {_method}-ExPriL, which 'variants' does not run"
        )
RIVALS = [m for m in COMPARISON["methods"] if m not in EXPRIL]


def llp_bins_per_feature(wildcards):
    """q by the paper's signal-to-noise rule, for LLP's noise."""
    return bins_per_feature(wildcards, iterations=1)


def rival_model(wildcards):
    return {
        "llp": rules.train_llp.output[0],
        "dpsgd": rules.train_dpsgd.output.model,
        "aim": rules.train_aim.output[0],
        "dpmerf": rules.train_dpmerf.output.model,
    }[wildcards.rival]


def aim_history(dataset, seeds):
    """The append-only record of every AIM release a split has had, reruns included
    (expril/privacy/ledger.py: append_history)."""
    return f"{R}/oracle/{dataset}/{seeds}/aim_history.csv"


def compared(pattern, **wildcards):
    return expand(
        pattern, dataset=config["datasets"], seeds=BLOCKS, eps=EPSILONS, **wildcards
    )


def mmd_runs(pattern, **wildcards):
    """ExPriL's files with Pb. 1 by MMD: the eps<e>-mmd/ runs on datasets with an IS step, the
    plain ones (no Pb. 1 to replace) elsewhere."""
    return sorted(
        {
            f
            for d in config["datasets"]
            for f in expand(
                pattern,
                dataset=d,
                seeds=BLOCKS,
                eps=EPSILONS,
                weighting="-mmd" if importance_sampling(d) else "",
                **wildcards,
            )
        }
    )


def comparison_inputs(wildcards):
    """Every compared method's accuracies and ledgers, and the references."""
    release = {
        "llp": rules.oracle_proportions.output.ledger,
        "dpsgd": rules.train_dpsgd.output.ledger,
        "aim": rules.aim_release.output.ledger,
        "dpmerf": rules.dpmerf_release.output.ledger,
    }
    inputs = {
        "reference": expand(
            rules.reference_models.output.accuracy,
            dataset=config["datasets"],
            seeds=BLOCKS,
        ),
        "rivals": compared(rules.evaluate_rival.output[0], rival=RIVALS),
        "expril": [],
        "ledgers": [f for rival in RIVALS for f in compared(release[rival])],
        "expril_mmd": [],
        "mmd_ledgers": [],
    }
    if set(COMPARISON["methods"]) & {"C", "I"}:
        inputs["expril"] = compared(rules.evaluate_hypotheses.output[0], weighting="")
        inputs["ledgers"] += run_ledgers()
    if set(COMPARISON["methods"]) & {"C-mmd", "I-mmd"}:
        inputs["expril_mmd"] = mmd_runs(rules.evaluate_hypotheses.output[0])
        # The ledger of every run's last query, which holds its earlier queries too.
        inputs["mmd_ledgers"] = mmd_runs(
            rules.oracle_errors.output.ledger,
            t=T - 1,
            variant=[variant_dir(v, T - 1) for v in config["variants"]],
        )
    return inputs
