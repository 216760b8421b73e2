# Helpers of the comparison's rules (rules/compare.smk, rules/plugins.smk, docs/comparison.md):
# the compared methods, the rivals' inputs, and the runs the comparison and the tuning read.

COMPARISON = config["comparison"]
# The methods other than ExPriL's chain, one module each (expril/plugins/, rules/plugins.smk).
PLUGINS = registry.methods()
for _method in COMPARISON["methods"]:
    if _method not in grids.VARIANT and _method not in PLUGINS:
        raise ValueError(
            f"config: comparison: methods lists {_method!r}, neither ExPriL's "
            f"({', '.join(grids.VARIANT)}) nor a plug-in method (expril/plugins/: "
            f"{', '.join(PLUGINS)})"
        )
    if grids.VARIANT.get(_method, config["variants"][0]) not in config["variants"]:
        raise ValueError(
            f"config: comparison: methods lists {_method}-ExPriL, which 'variants' does not run"
        )
RIVALS = [m for m in COMPARISON["methods"] if m not in grids.VARIANT]
# A published study whose other methods the comparison reads (docs/extending.md).
PUBLISHED = COMPARISON["published"]
if PUBLISHED and not os.path.exists(f"{PUBLISHED}/{published.RUNS}"):
    raise ValueError(
        f"config: comparison: published: {PUBLISHED} holds no {published.RUNS} (a folder "
        "publish_comparison wrote, as summary/comparison)"
    )


def rival_model(wildcards):
    """The model a plug-in method's last step writes, which the evaluator scores."""
    method = PLUGINS[wildcards.rival]
    return method.output(method.steps[-1], job_context(method, wildcards))


def configured_bins(wildcards):
    """ExPriL's bins as configured (AIM discretises on them, whatever ExPriL's setting)."""
    return f"{R}/learner/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/marginal_bins.npz"


def histories():
    """The append-only record of every release of a plug-in whose noise cannot be replayed (its
    release takes `history_path`: AIM's), reruns included, for every reported run's release: as
    configured and, where the release depends on the setting (AIM's knobs), at the tuned one.
    """
    return sorted(
        {
            base.PROVIDED["history_path"](
                PLUGINS[m], plugin_context(PLUGINS[m], d, b, e, s)
            )
            for d in config["datasets"]
            for b in BLOCKS
            for e in EPSILONS
            for m in RIVALS
            if "history_path" in PLUGINS[m].release.arguments()
            for s in {
                "",
                tuned(m, d, e) if CHOICE and "tuned" in COMPARISON["columns"] else "",
            }
        }
    )


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
    last = run_iterations(method, suffix) - 1 if method in grids.VARIANT else None
    folder = f"{dataset}/{block}/eps{eps}"
    if method in grids.VARIANT:
        run = f"{folder}{'-mmd' if grids.family(method) == 'mmd' else ''}{suffix}"
        last = f"{variant_dir(grids.VARIANT[method], last)}/errors_t{last}.ledger.csv"
        return f"{R}/eval/{run}/accuracy.csv", f"{R}/oracle/{run}/{last}"
    plugin = PLUGINS[method]
    return (
        f"{R}/eval/{folder}/{method}{suffix}.csv",
        plugin.ledger(plugin_context(plugin, dataset, block, eps, suffix)),
    )


def run_iterations(method, suffix):
    """ExPriL's T in the setting `suffix` of one of its methods' (C, I, C-mmd, I-mmd) families."""
    chosen = grids.parse(GRID, grids.family(method), suffix)
    return int(grids.knob(GRID, chosen, "iterations", T))


def final_iteration(method, suffix):
    """{"iterations": T} for an ExPriL run whose setting sets another T than the configured: the
    comparison reads its h_T (expril.reports.comparison.read_runs); {} otherwise."""
    if method not in grids.VARIANT or run_iterations(method, suffix) == T:
        return {}
    return {"iterations": run_iterations(method, suffix)}


def compared_runs(blocks, columns, methods=COMPARISON["methods"], datasets=None):
    """The runs of `methods` in `blocks` on `datasets` (all by default), a dict each: method,
    dataset, eps, the column it stands in and its setting, its evaluation file and ledger.
    `columns` maps a column's name to the setting of a method at a dataset and eps (where ExPriL by
    MMD is plain ExPriL, base_method, a setting of plain ExPriL's grid)."""
    return [
        {
            "method": m,
            "dataset": d,
            "eps": settings.parse_eps(e),
            "column": column,
            "setting": choose(m, d, e),
            **final_iteration(base_method(m, d), choose(m, d, e)),
            **dict(
                zip(("evaluation", "ledger"), method_files(m, d, e, b, choose(m, d, e)))
            ),
        }
        for column, choose in columns.items()
        for m in methods
        for d in (config["datasets"] if datasets is None else datasets)
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
    """Per compared method, the datasets whose choice is transferred: RESAMPLED, for ExPriL by MMD
    those with an IS step (elsewhere it is plain ExPriL)."""
    return {
        m: [d for d in RESAMPLED if grids.family(m) != "mmd" or importance_sampling(d)]
        for m in COMPARISON["methods"]
    }


@functools.cache
def calibration_runs():
    """Every setting of every compared method's grid on the calibration seeds (config/tuning.yaml),
    on the datasets that draw fresh data (not RESAMPLED): ExPriL by MMD on the datasets with an IS
    step only (elsewhere it is plain ExPriL).
    """
    c = GRID["calibration"]
    block = f"{c['first_seed']}-{c['first_seed'] + c['runs'] - 1}"
    calibrated = [settings.format_eps(e) for e in c["epsilons"]]
    runs = []
    for method in COMPARISON["methods"]:
        grid = grids.family(method)
        datasets = [
            d
            for d in config["datasets"]
            if (grid != "mmd" or importance_sampling(d)) and d not in RESAMPLED
        ]
        for s in grids.settings(GRID, grid):
            suffix = grids.suffix(GRID, grid, s)
            runs += [
                r
                for r in compared_runs(
                    [block], {suffix: lambda m, d, e, s=suffix: s}, [method], datasets
                )
                if settings.format_eps(r["eps"]) in calibrated
                # Without noise, knobs of the noise alone change nothing: those runs repeat others.
                and not (math.isinf(r["eps"]) and grids.noiseless_duplicate(GRID, s))
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
            grids.suffix(GRID, grids.family(m), s)
            for s in grids.settings(GRID, grids.family(m))
        ]
        for m in COMPARISON["methods"]
    }
