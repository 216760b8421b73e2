# Helpers of the comparison's rules (rules/compare.smk, rules/plugins.smk, docs/comparison.md):
# the compared methods, the rivals' inputs, and the runs the comparison and the tuning read.

COMPARISON = config["comparison"]
# The methods other than ExPriL's chain, one module each (expril/plugins/, rules/plugins.smk), and
# the compared methods they report, each its method's (most report one model, named as the method).
PLUGINS = registry.methods()
COMPARED = registry.reported()
for _method in COMPARISON["methods"]:
    if _method not in grids.VARIANT and _method not in COMPARED:
        raise ValueError(
            f"config: comparison: methods lists {_method!r}, neither ExPriL's "
            f"({', '.join(grids.VARIANT)}) nor reported by a plug-in method (expril/plugins/: "
            f"{', '.join(COMPARED)})"
        )
    if grids.VARIANT.get(_method, config["variants"][0]) not in config["variants"]:
        raise ValueError(
            f"config: comparison: methods lists {_method}-ExPriL, which 'variants' does not run"
        )
RIVALS = [m for m in COMPARISON["methods"] if m in COMPARED]


# A published study whose other methods the comparison reads (docs/extending.md).
PUBLISHED = COMPARISON["published"]
if PUBLISHED and not os.path.exists(f"{PUBLISHED}/{published.RUNS}"):
    raise ValueError(
        f"config: comparison: published: {PUBLISHED} holds no {published.RUNS} (a folder "
        "publish_comparison wrote, as summary/comparison)"
    )


def rival_model(wildcards):
    """The model a plug-in method reports as the compared method `rival`, which the evaluator scores."""
    method = COMPARED[wildcards.rival]
    return method.model(job_context(method, wildcards), wildcards.rival)


def configured_bins(wildcards):
    """ExPriL's bins as configured (AIM discretises on them, whatever ExPriL's setting)."""
    return f"{R}/learner/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/marginal_bins.npz"


def histories():
    """The append-only record of every release of a plug-in whose noise cannot be replayed (its
    release takes `history_path`: AIM's), reruns included, for every reported run's release.
    """
    methods = {COMPARED[m].name: COMPARED[m] for m in RIVALS}
    return [
        base.PROVIDED["history_path"](method, plugin_context(method, d, b, e, ""))
        for d in config["datasets"]
        for b in BLOCKS
        for e in EPSILONS
        for method in methods.values()
        if "history_path" in method.release.arguments()
    ]


# The tuned settings (data/tuning/choice.yaml, written by `snakemake tune`): {method: {dataset:
# {eps: setting}}}; without it, the comparison runs as configured only.
CHOICE = (
    yaml.safe_load(open(COMPARISON["choice"]))
    if os.path.exists(COMPARISON["choice"])
    else None
)


def base_method(method, dataset):
    """The compared method whose runs, files and setting `method` has on `dataset`: its base where
    its plug-in repeats it there (Method.bases), else itself."""
    plugin = COMPARED.get(method)
    if (
        plugin
        and method in plugin.bases
        and plugin.repeats_on(config["benchmarks"][dataset])
    ):
        return plugin.bases[method]
    return method


def method_files(method, dataset, eps, block, suffix):
    """One method's evaluation file and ledger (the run's account) in one block, under the
    setting `suffix` of its family."""
    method = base_method(method, dataset)
    folder = f"{dataset}/{block}/eps{eps}"
    if method in grids.VARIANT:
        run = f"{folder}{suffix}"
        last = f"{variant_dir(grids.VARIANT[method], T - 1)}/errors_t{T - 1}.ledger.csv"
        return f"{R}/eval/{run}/accuracy.csv", f"{R}/oracle/{run}/{last}"
    plugin = COMPARED[method]
    return (
        f"{R}/eval/{folder}/{method}{suffix}.csv",
        plugin.ledger(plugin_context(plugin, dataset, block, eps, suffix), method),
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


# How each benchmark's runs are drawn (expril/reports/design.py), and those of the study's
# datasets that resample one record pool: no calibration run reads their records; each method's
# choice there is transferred (expril/reports/tuning.py).
DESIGNS = design.designs(config)
RESAMPLED = [d for d in config["datasets"] if DESIGNS[d].resampled]


def transferred():
    """Per compared method, the datasets whose choice is transferred: RESAMPLED, but those where it
    repeats another method's runs (base_method)."""
    return {
        m: [d for d in RESAMPLED if base_method(m, d) == m]
        for m in COMPARISON["methods"]
    }


@functools.cache
def calibration_runs():
    """Every setting of every compared method's grid on the calibration seeds (config/tuning.yaml),
    on the datasets that draw fresh data (not RESAMPLED), but those where it repeats another
    method's runs (base_method).
    """
    c = GRID["calibration"]
    block = f"{c['first_seed']}-{c['first_seed'] + c['runs'] - 1}"
    calibrated = [settings.format_eps(e) for e in c["epsilons"]]
    runs = []
    for method in COMPARISON["methods"]:
        grid = registry.family(method)
        for s in grids.settings(GRID, grid):
            suffix = grids.suffix(GRID, grid, s)
            runs += [
                r
                for r in compared_runs(
                    [block], {suffix: lambda m, d, e, s=suffix: s}, [method]
                )
                if base_method(method, r["dataset"]) == method
                and r["dataset"] not in RESAMPLED
                and settings.format_eps(r["eps"]) in calibrated
                # Without noise the bins do not follow the snr rule: those runs repeat as configured.
                and not (
                    math.isinf(r["eps"])
                    and s.get("snr", grids.CONFIGURED) != grids.CONFIGURED
                )
            ]
    return runs


def checked_cells():
    """The published cells rerun here before mixing (expril.reports.published)."""
    epsilons = [settings.parse_eps(e) for e in EPSILONS]
    return published.checked_cells(PUBLISHED, config["datasets"], epsilons)


def checked_evaluations():
    """Per checked cell, its evaluation files here, one per seed block."""
    return [
        [method_files(published.CHECKED, d, e, b, setting)[0] for b in BLOCKS]
        for d, e, _, setting in checked_cells()
    ]


def grid_order():
    """Each compared method's settings in its grid's order ('' as configured)."""
    return {
        m: [
            grids.suffix(GRID, registry.family(m), s)
            for s in grids.settings(GRID, registry.family(m))
        ]
        for m in COMPARISON["methods"]
    }
