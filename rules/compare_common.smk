# Helpers of the comparison's rules (rules/compare.smk, rules/plugins.smk, docs/comparison.md):
# the compared methods, the rivals' inputs, and the runs the comparison and the tuning read, per
# privacy currency (CURRENCIES, rules/common.smk): a currency's table, tuning and runs are its own.

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
# Equal effort (docs/comparison.md, "Tuning"): where the study tunes, every compared method's grid
# has as many settings as the grid file says the study's methods have.
if "tuned" in COMPARISON["columns"]:
    grids.check_effort(
        GRID, [registry.family(m) for m in COMPARISON["methods"]], COMPARISON["grid"]
    )
# A published study whose other methods the comparison reads (docs/extending.md): one folder per
# currency, as publish_comparison writes them.
PUBLISHED = COMPARISON["published"]
# The methods run here are ranked against the study's in their primary column (tuned where they tune).
_primary = "tuned" if "tuned" in COMPARISON["columns"] else "as configured"
for _currency in CURRENCIES if PUBLISHED else []:
    for _file in (published.RUNS, pairing.PAIRING, pairing.HOST):
        if not os.path.exists(f"{PUBLISHED}/{_currency}/{_file}"):
            raise ValueError(
                f"config: comparison: published: {PUBLISHED} holds no {_currency}/{_file} (a "
                "folder publish_comparison wrote, as summary/comparison, one folder per currency, "
                "with the digests that pair its runs and its host: docs/extending.md)"
            )
    _published = published.columns(f"{PUBLISHED}/{_currency}")
    if (
        CURRENCIES[_currency].methods(COMPARISON["methods"])
        and _primary not in _published
    ):
        raise ValueError(
            f"config: comparison: columns: {COMPARISON['columns']}: {PUBLISHED}/{_currency} reports its "
            f"methods {' and '.join(_published)} only, so yours, {_primary}, would be ranked against "
            "none: tune them (`snakemake tune` with this configuration, then `compare` with columns "
            "[tuned, as configured]), or compare against a study that publishes the as-configured column"
        )
# Its checked cells are rerun, and every run here that mixes with it runs, with the bins it was
# published with (its study.yaml; round 2, which predates it, sized them for Laplace's noise), so
# that they pair and compare with its runs whatever this configuration's `bins: sized_for`.
if PUBLISHED:
    config["bins"]["sized_for"] = published.bins_rule(
        [f"{PUBLISHED}/{c}" for c in CURRENCIES]
    )


def published_folder(currency):
    return f"{PUBLISHED}/{currency}" if PUBLISHED else None


def rival_model(wildcards):
    """The model a plug-in method reports as the compared method `rival`, which the evaluator scores."""
    method = COMPARED[wildcards.rival]
    return method.model(job_context(method, wildcards), wildcards.rival)


def configured_bins(wildcards):
    """ExPriL's bins as configured, whatever ExPriL's setting: those a plug-in that discretises the
    features reads."""
    return f"{R}/learner/{wildcards.dataset}/{wildcards.seeds}/eps{wildcards.eps}/marginal_bins.npz"


def histories(currency):
    """The append-only record of every release of a plug-in whose noise cannot be replayed (its
    release takes `history_path`), reruns included, for every reported run's release in the
    currency (its name): as configured and, where the release depends on the setting (its
    knobs), at the tuned one.
    """
    return sorted(
        {
            base.PROVIDED["history_path"](
                COMPARED[m],
                plugin_context(
                    COMPARED[m],
                    d,
                    b,
                    e,
                    s,
                    CURRENCIES[home(CURRENCIES, m, e, currency)],
                ),
            )
            for d in config["datasets"]
            for b in BLOCKS
            for e in EPSILONS
            for m in CURRENCIES[currency].methods(RIVALS)
            if "history_path" in COMPARED[m].release.arguments()
            for s in {
                "",
                (
                    tuned(m, d, e, currency)
                    if choice(currency) and "tuned" in COMPARISON["columns"]
                    else ""
                ),
            }
        }
    )


@functools.cache
def choice(currency):
    """The currency's tuned settings (written by `snakemake tune`, then `publish_tuning`: choice_file()): {method:
    {dataset: {eps: setting}}}; None without the file: the currency runs as configured only.
    """
    path = choice_file(config, currency)
    return yaml.safe_load(open(path)) if os.path.exists(path) else None


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


def method_files(method, dataset, eps, block, suffix, currency):
    """One method's evaluation file and ledger (the run's account) in one block, under the
    setting `suffix` of its family, in the currency (its name), or at eps = inf in the one that
    runs them (expril.workflow.currency.home)."""
    method = base_method(method, dataset)
    currency = home(CURRENCIES, method, eps, currency)
    last = run_iterations(method, suffix) - 1 if method in grids.VARIANT else None
    folder = f"{dataset}/{block}/eps{eps}{CURRENCIES[currency].tag}"
    if method in grids.VARIANT:
        run = f"{folder}{suffix}"
        last = f"{variant_dir(grids.VARIANT[method], last)}/errors_t{last}.ledger.csv"
        return f"{R}/eval/{run}/accuracy.csv", f"{R}/oracle/{run}/{last}"
    plugin = COMPARED[method]
    return (
        f"{R}/eval/{folder}/{method}{suffix}.csv",
        plugin.ledger(
            plugin_context(plugin, dataset, block, eps, suffix, CURRENCIES[currency]),
            method,
        ),
    )


def run_iterations(method, suffix):
    """ExPriL's T in the setting `suffix` of one of its methods' (C, I) family."""
    chosen = grids.parse(GRID, grids.family(method), suffix)
    return int(grids.knob(GRID, chosen, "iterations", T))


def final_iteration(method, suffix):
    """{"iterations": T} for an ExPriL run whose setting sets another T than the configured: the
    comparison reads its h_T (expril.reports.comparison.read_runs); {} otherwise."""
    if method not in grids.VARIANT or run_iterations(method, suffix) == T:
        return {}
    return {"iterations": run_iterations(method, suffix)}


def compared_runs(
    blocks, columns, currency, methods=COMPARISON["methods"], datasets=None
):
    """The runs of `methods` that run in the currency (its name) in `blocks` on `datasets` (all by
    default), a dict each: method, dataset, eps, the column it stands in and its setting, the
    currency, its evaluation file and ledger.
    `columns` maps a column's name to the setting of a method at a dataset and eps (where ExPriL by
    MMD is plain ExPriL, base_method, a setting of plain ExPriL's grid)."""
    return [
        {
            "method": m,
            "dataset": d,
            "eps": settings.parse_eps(e),
            "column": column,
            "setting": choose(m, d, e),
            "currency": currency,
            **final_iteration(base_method(m, d), choose(m, d, e)),
            **dict(
                zip(
                    ("evaluation", "ledger"),
                    method_files(m, d, e, b, choose(m, d, e), currency),
                )
            ),
        }
        for column, choose in columns.items()
        for m in CURRENCIES[currency].methods(methods)
        for d in (config["datasets"] if datasets is None else datasets)
        for e in EPSILONS
        for b in blocks
    ]


def tuned(method, dataset, eps, currency):
    """The setting `snakemake tune` chose in the currency (choice()); an eps it did not see takes
    the choice of the nearest it did."""
    method = base_method(method, dataset)
    if dataset not in choice(currency).get(method, {}):
        raise ValueError(
            f"{choice_file(config, currency)} has no setting for {method} on {dataset}: run `snakemake tune` "
            "(and `publish_tuning`) with this configuration, or set comparison: columns: [as configured]"
        )
    chosen = choice(currency)[method][dataset]
    if eps not in chosen:
        near = grids.nearest(
            settings.parse_eps(eps), [settings.parse_eps(e) for e in chosen]
        )
        eps = settings.format_eps(near)
    return chosen[eps]


@functools.cache
def reported_runs(currency):
    """The study's runs in the currency (its name): each method as configured and, where a choice
    exists, tuned (COMPARISON["columns"]); computed when the comparison is planned."""
    columns = {"as configured": lambda m, d, e: ""} | (
        {"tuned": functools.partial(tuned, currency=currency)}
        if choice(currency)
        else {}
    )
    return compared_runs(
        BLOCKS, {c: columns[c] for c in COMPARISON["columns"] if c in columns}, currency
    )


# How each benchmark's runs are drawn (expril/reports/design.py), and those of the study's
# datasets that resample one record pool and hold no part of it for the calibration: no
# calibration run reads their records; each method's choice there is transferred
# (expril/reports/tuning.py). A held-out part is read by the calibration's seeds alone.
DESIGNS = design.designs(config)
RESAMPLED = [d for d in config["datasets"] if DESIGNS[d].transferred]
for _name in config["datasets"]:
    _held = config["benchmarks"][_name].get("calibration")
    if _held and _held["first_seed"] != GRID["calibration"]["first_seed"]:
        raise ValueError(
            f"benchmark {_name}: calibration: first_seed is {_held['first_seed']}, but "
            f"{COMPARISON['grid']}'s calibration: first_seed is {GRID['calibration']['first_seed']}: "
            "the calibration's runs would read the reported runs' part of the records"
        )


def transferred(currency):
    """Per method of the currency (its name), the datasets whose choice is transferred: RESAMPLED,
    but those where it repeats another method's runs (base_method)."""
    return {
        m: [d for d in RESAMPLED if base_method(m, d) == m]
        for m in CURRENCIES[currency].methods(COMPARISON["methods"])
    }


# The calibration's one seed block (config/tuning.yaml: calibration).
CALIBRATION_BLOCK = "{}-{}".format(
    GRID["calibration"]["first_seed"],
    GRID["calibration"]["first_seed"] + GRID["calibration"]["runs"] - 1,
)


@functools.cache
def calibration_runs(currency):
    """Every setting of the grid of every method of the currency (its name) on the calibration
    seeds (config/tuning.yaml), on the datasets that draw fresh data (not RESAMPLED), but those
    where it repeats another method's runs (base_method). Computed once per invocation: the
    stacked rules (rules/stacked.smk) read it when the workflow is parsed, and its runs are never
    changed.
    """
    calibrated = [settings.format_eps(e) for e in GRID["calibration"]["epsilons"]]
    runs = []
    for method in CURRENCIES[currency].methods(COMPARISON["methods"]):
        grid = registry.family(method)
        datasets = [
            d
            for d in config["datasets"]
            if base_method(method, d) == method and d not in RESAMPLED
        ]
        for s in grids.settings(GRID, grid):
            suffix = grids.suffix(GRID, grid, s)
            runs += [
                r
                for r in compared_runs(
                    [CALIBRATION_BLOCK],
                    {suffix: lambda m, d, e, s=suffix: s},
                    currency,
                    [method],
                    datasets,
                )
                if settings.format_eps(r["eps"]) in calibrated
                # Without noise, knobs of the noise alone change nothing: those runs repeat others.
                and not (
                    math.isinf(r["eps"])
                    and grids.noiseless_duplicate(GRID, s, registry.noise_knobs(grid))
                )
            ]
    return runs


@functools.cache
def finalist_runs(currency):
    """Round 3's more seeds for close settings (config/tuning.yaml, selection; docs/comparison.md):
    the settings tune/<currency>/finalists.yaml names, written by the last `tune` (select_settings),
    on the `more_runs` calibration seeds after the first `runs`; none before it or without
    `selection`. So a second `snakemake tune` plans them and chooses on all their runs.
    """
    selection = GRID.get("selection")
    path = Path(f"{R}/tune/{currency}/finalists.yaml")
    if not selection or not path.exists():
        return []
    first = GRID["calibration"]["first_seed"] + GRID["calibration"]["runs"]
    block = f"{first}-{first + selection['more_runs'] - 1}"
    return [
        run
        for row in yaml.safe_load(path.read_text()) or []
        for run in compared_runs(
            [block],
            {"calibration": lambda m, d, e, s=row["setting"]: s},
            currency,
            [row["method"]],
            [row["dataset"]],
        )
        if settings.format_eps(run["eps"]) == row["eps"]
    ]


def calibration_runs_here(currency):
    """The calibration runs that the currency (its name) runs itself: calibration_runs but those at
    eps = inf that another currency runs (expril.workflow.currency.home)."""
    return [
        r
        for r in calibration_runs(currency)
        if home(CURRENCIES, r["method"], r["eps"], currency) == currency
    ]


def checked_cells(currency):
    """The cells of the currency (its name) whose runs pair a study with a published one
    (expril.reports.published): a published study's, rerun here before mixing, or this study's
    own, whose digests it publishes."""
    if PUBLISHED:
        study = published.runs(published_folder(currency))
        where = f"{published_folder(currency)}/{published.RUNS}"
    else:
        study, where = reported_runs(currency), f"this study's runs in {currency}"
    return published.checked_cells(
        study,
        registry.checking().name,
        config["datasets"],
        [settings.parse_eps(e) for e in EPSILONS],
        where,
    )


def paired_files(currency):
    """Per checked cell, per seed block, {part: file} of the files that pair its runs with the
    published ones (expril.reports.pairing): the test split, and each step of the checking method
    that trains nothing, its shared inputs (the data, the curator's split), its outputs and a
    release's ledger."""
    method = registry.checking()
    files = []
    for d, e, _, s in checked_cells(currency):
        blocks = []
        for b in BLOCKS:
            wildcards = types.SimpleNamespace(dataset=d, seeds=b, eps=e)
            ctx = plugin_context(method, d, b, e, s, CURRENCIES[currency])
            parts = {
                "target_test": expand(
                    rules.split_target.output.test, dataset=d, seeds=b
                )[0]
            }
            for step in method.steps:
                if step.trains or step.fields:
                    continue
                for source in step.inputs.values():
                    if not callable(source) and source in base.SHARED:
                        parts[source] = shared_file(source, wildcards)
                for key in step.files:
                    name = step.rule if key == "out_path" else f"{step.rule} {key}"
                    parts[name] = method.output(step, ctx, key)
                if step.release:
                    parts[f"{step.rule} ledger"] = base.ledger_of(
                        method.output(step, ctx)
                    )
            blocks.append(parts)
        files.append(blocks)
    return files


# The currencies whose study pairs with a published one: all against a published study (its
# cells are rerun whatever the methods), else those where the checking method runs.
PAIRED = [
    c
    for c in CURRENCIES
    if PUBLISHED
    or registry.checking().name in CURRENCIES[c].methods(COMPARISON["methods"])
]


def checked_evaluations(currency):
    """Per checked cell, its evaluation files here, one per seed block."""
    return [
        [
            method_files(registry.checking().name, d, e, b, s, currency)[0]
            for b in BLOCKS
        ]
        for d, e, _, s in checked_cells(currency)
    ]


def checked_test_sizes(currency):
    """Per checked cell, its test split's size (the correct counts' denominator)."""
    return [DESIGNS[d].n_test for d, *_ in checked_cells(currency)]


def grid_order(currency):
    """Each method of the currency (its name): its settings in its grid's order ('' as configured)."""
    return {
        m: [
            grids.suffix(GRID, registry.family(m), s)
            for s in grids.settings(GRID, registry.family(m))
        ]
        for m in CURRENCIES[currency].methods(COMPARISON["methods"])
    }


# Where publish_comparison writes the study (committed), and rounds 1 and 2 of it as published,
# which rules round2_changes and round3_changes set beside the next.
SUMMARY = "summary/comparison"
ROUND1 = f"{SUMMARY}/round1/comparison"
ROUND2 = f"{SUMMARY}/round2"


def summary_file(currency, key, folder=SUMMARY):
    """The published copy (in `folder`) of compare_methods' output `key` in the currency (its name)."""
    return f"{folder}/{currency}/{Path(rules.compare_methods.output[key]).name}"


def round2_runs(pure):
    """Round 2's published runs of the headline currency (the first), or of the pure one (delta = 0)."""
    name = (
        next((n for n, c in CURRENCIES.items() if c.delta == 0), None)
        if pure
        else next(iter(CURRENCIES))
    )
    if name is None:
        raise ValueError(
            "round2_changes: config: comparison: currencies has no currency with delta 0"
        )
    return summary_file(name, "runs", ROUND2)
