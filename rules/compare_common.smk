# Helpers of the comparison's rules (rules/compare.smk, rules/synthetic.smk, docs/comparison.md):
# the compared methods, the rivals' inputs, and the runs the comparison and the tuning read.

COMPARISON = config["comparison"]
for _method in COMPARISON["methods"]:
    if grids.VARIANT.get(_method, config["variants"][0]) not in config["variants"]:
        raise ValueError(
            f"config: comparison: methods lists {_method}-ExPriL, which 'variants' does not run"
        )
RIVALS = [m for m in COMPARISON["methods"] if m not in grids.VARIANT]


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


def aim_history(dataset, seeds, eps):
    """The append-only record of every AIM release a split has had at an eps, reruns included
    (expril/privacy/ledger.py: append_history); one file per job, so no two jobs write one.
    """
    return f"{R}/oracle/{dataset}/{seeds}/eps{eps}/aim/history.csv"


# The tuned settings (data/tuning/choice.yaml, written by `snakemake tune`): {method: {dataset:
# {eps: setting}}}; without it, the comparison runs as configured only.
CHOICE = (
    yaml.safe_load(open(COMPARISON["choice"]))
    if os.path.exists(COMPARISON["choice"])
    else None
)


def base_method(method, dataset):
    """Without an IS step, ExPriL by MMD is plain ExPriL: its runs, files and setting."""
    if method in ("C-mmd", "I-mmd") and not importance_sampling(dataset):
        return grids.VARIANT[method]
    return method


def method_files(method, dataset, eps, block, suffix):
    """One method's evaluation file and ledger (the run's account) in one block, under the
    setting `suffix` of its family."""
    method = base_method(method, dataset)
    family, base = grids.FAMILY[method], f"{dataset}/{block}/eps{eps}"
    if method in grids.VARIANT:
        run = f"{base}{'-mmd' if family == 'mmd' else ''}{suffix}"
        last = f"{variant_dir(grids.VARIANT[method], T - 1)}/errors_t{T - 1}.ledger.csv"
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
    """The setting `snakemake tune` chose (COMPARISON["choice"]); an eps it did not see takes the
    choice of the nearest it did."""
    method = base_method(method, dataset)
    if dataset not in CHOICE.get(method, {}):
        raise ValueError(
            f"{COMPARISON['choice']} has no setting for {method} on {dataset}: run `snakemake tune` "
            "(and `publish_tuning`) with this configuration, or set comparison: columns: [as configured]"
        )
    chosen = CHOICE[method][dataset]
    if eps not in chosen:
        near = grids.nearest(
            settings.parse_eps(eps), [settings.parse_eps(e) for e in chosen]
        )
        eps = settings.format_eps(near)
    return chosen[eps]


@functools.cache
def reported_runs():
    """The study's runs: each method as configured and, where a choice exists, tuned
    (COMPARISON["columns"]); computed when the comparison is planned."""
    columns = {"as configured": lambda m, d, e: ""} | (
        {"tuned": tuned} if CHOICE else {}
    )
    return compared_runs(
        BLOCKS, {c: columns[c] for c in COMPARISON["columns"] if c in columns}
    )


@functools.cache
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


def grid_order():
    """Each compared method's settings in its grid's order ('' as configured)."""
    return {
        m: [
            grids.suffix(GRID, grids.FAMILY[m], s)
            for s in grids.settings(GRID, grids.FAMILY[m])
        ]
        for m in COMPARISON["methods"]
    }
