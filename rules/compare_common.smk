# Helpers of the comparison's rules (rules/compare.smk, rules/synthetic.smk, docs/comparison.md):
# the compared methods, the rivals' inputs, and the runs the comparison and the tuning read.

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


def rival_model(wildcards):
    return {
        "llp": rules.train_llp.output[0],
        "dpsgd": rules.train_dpsgd.output.model,
        "aim": rules.train_aim.output[0],
        "dpmerf": rules.train_dpmerf.output[0],
    }[wildcards.rival]


def configured_bins(wildcards):
    """ExPriL's bins as configured (AIM discretises on them, whatever ExPriL's setting)."""
    return f"{R}/learner/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/marginal_bins.npz"


def llp_file(wildcards, part, name):
    """LLP's bins or release, which depend on its setting's snr alone."""
    snr_only = upstream(wildcards, "llp", ["snr"])
    return f"{R}/{part}/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/llp{snr_only}/{name}.npz"


def dpmerf_file(wildcards, part, name):
    """DP-MERF's release or samples, which depend on its setting's generator alone."""
    generator = upstream(wildcards, "dpmerf", ["generator"])
    return f"{R}/{part}/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/dpmerf{generator}/{name}.npz"


def aim_history(dataset, seeds):
    """The append-only record of every AIM release a split has had, reruns included
    (expril/privacy/ledger.py: append_history)."""
    return f"{R}/oracle/{dataset}/{seeds}/aim_history.csv"


# The tuned settings (data/tuning/choice.yaml, written by `snakemake tune`): {method: {dataset:
# {eps: setting}}}; without it, the comparison runs as configured only.
CHOICE = (
    yaml.safe_load(open(COMPARISON["choice"]))
    if os.path.exists(COMPARISON["choice"])
    else None
)


def method_files(method, dataset, eps, block, suffix):
    """One method's evaluation file and ledger (the run's account) in one block, under the
    setting `suffix` of its family. Without an IS step, ExPriL by MMD is plain ExPriL.
    """
    if method in ("C-mmd", "I-mmd") and not importance_sampling(dataset):
        method = EXPRIL[method]
    family, base = grids.FAMILY[method], f"{dataset}/{block}/eps{eps}"
    if method in EXPRIL:
        run = f"{base}{'-mmd' if family == 'mmd' else ''}{suffix}"
        last = f"{variant_dir(EXPRIL[method], T - 1)}/errors_t{T - 1}.ledger.csv"
        return f"{R}/eval/{run}/accuracy.csv", f"{R}/oracle/{run}/{last}"
    parsed = grids.parse(GRID, family, suffix)
    release = {
        "llp": f"llp{grids.suffix(GRID, family, parsed, ['snr'])}/proportions",
        "dpsgd": f"dpsgd{suffix}/model",
        "aim": "aim/records",
        "dpmerf": f"dpmerf{grids.suffix(GRID, family, parsed, ['generator'])}/embedding",
    }[method]
    return (
        f"{R}/eval/{base}/{method}{suffix}.csv",
        f"{R}/oracle/{base}/{release}.ledger.csv",
    )


def compared_runs(blocks, columns, methods=COMPARISON["methods"]):
    """The runs of `methods` in `blocks`, a dict each: method, dataset, eps, the column it stands in
    and its setting, its evaluation file and ledger. `columns` maps a column's name to the setting
    of a method at a dataset and eps."""
    return [
        {
            "method": m,
            "dataset": d,
            "eps": settings.parse_eps(e),
            "column": column,
            "setting": choose(m, d, e),
            **dict(
                zip(("evaluation", "ledger"), method_files(m, d, e, b, choose(m, d, e)))
            ),
        }
        for column, choose in columns.items()
        for m in methods
        for d in config["datasets"]
        for e in EPSILONS
        for b in blocks
    ]


def tuned(method, dataset, eps):
    if method in ("C-mmd", "I-mmd") and not importance_sampling(dataset):
        method = EXPRIL[method]
    return CHOICE[method][dataset][eps]


COLUMNS = {"as configured": lambda m, d, e: ""} | ({"tuned": tuned} if CHOICE else {})
REPORTED = compared_runs(
    BLOCKS, {c: COLUMNS[c] for c in COMPARISON["columns"] if c in COLUMNS}
)


def calibration_runs():
    """Every setting of every compared method's grid on the calibration seeds (config/tuning.yaml):
    ExPriL by MMD on the datasets with an IS step only (elsewhere it is plain ExPriL).
    """
    c = GRID["calibration"]
    block = f"{c['first_seed']}-{c['first_seed'] + c['runs'] - 1}"
    calibrated = [settings.format_eps(e) for e in c["epsilons"]]
    runs = []
    for method in COMPARISON["methods"]:
        family = grids.FAMILY[method]
        for s in grids.settings(GRID, family):
            suffix = grids.suffix(GRID, family, s)
            runs += [
                r
                for r in compared_runs(
                    [block], {suffix: lambda m, d, e, s=suffix: s}, [method]
                )
                if (family != "mmd" or importance_sampling(r["dataset"]))
                and settings.format_eps(r["eps"]) in calibrated
                # Without noise the bins do not follow the snr rule: those runs repeat as configured.
                and not (
                    math.isinf(r["eps"])
                    and s.get("snr", grids.CONFIGURED) != grids.CONFIGURED
                )
            ]
    return runs
