# The calibration's trainings and evaluations stacked (issue #35, docs/performance.md): on a
# calibration block, every run of the grid at every calibrated eps runs, so the runs whose networks
# share a shape (model axis), currency and iteration are known when the workflow is parsed and train
# as one block in one job, and one job per dataset, currency and method evaluates its runs. Each
# file is the one the run's own job writes (the block trainer's guarantee; the evaluator's steps,
# called per run), so the rest of the graph reads the same files. ExPriL's h_t and the plug-ins'
# steps that train several runs at once (Step.per_run) are stacked; the plug-ins' other steps of
# one file a run (their releases among them, each run with its own noise, ledger and check) run one
# after another in one job per dataset and currency.


# Each stacked rule's name mapped to the one whose runs it runs; the taint audit gives a stack its role
# (expril.privacy.taint: an evaluation stack reads the target's test split as evaluate_* does).
STACKED = {}


def calibration_stacks():
    """{(currency tag, t, model): {(eps, setting, variant dir), ...}}: the ExPriL runs of
    calibration_runs_here (the same on every calibrated dataset), by what their h_t share.
    """
    stacks = {}
    for name, currency in CURRENCIES.items():
        for run in calibration_runs_here(name):
            method, suffix = run["method"], run["setting"]
            if method not in grids.VARIANT:
                continue
            model = grids.parse(GRID, "expril", suffix)["model"]
            eps = settings.format_eps(run["eps"])
            for t in range(1, run_iterations(method, suffix) + 1):
                member = (eps, suffix, variant_dir(grids.VARIANT[method], t))
                stacks.setdefault((currency.tag, t, model), set()).add(member)
    return {key: sorted(members) for key, members in stacks.items()}


class CalibrationWildcards(types.SimpleNamespace):
    """The wildcards of a calibration run's own job, read by name or by key as Snakemake's are."""

    def __getitem__(self, key):
        return getattr(self, key)


def calibration_wildcards(dataset, eps, tag, setting, **own):
    """A calibration run's wildcards: its dataset, eps, currency tag and setting, and `own` (the
    rule's other wildcards)."""
    return CalibrationWildcards(
        dataset=dataset,
        seeds=CALIBRATION_BLOCK,
        eps=eps,
        currency=tag,
        setting=setting,
        **own,
    )


def member_wildcards(wildcards, tag, t, member):
    """The wildcards train_hypothesis would have for one run of a stack."""
    eps, suffix, variant = member
    return calibration_wildcards(
        wildcards.dataset, eps, tag, suffix, variant=variant, t=str(t)
    )


def stack_memory_mb(members):
    """A training stack's mem_mb: its members' runs in one job that imports torch."""
    return lambda wildcards: settings.job_memory_mb(
        GRID["calibration"]["runs"] * members, spec(wildcards), True
    )


def stack_inputs(tag, t, members):
    def inputs(wildcards):
        runs = [member_wildcards(wildcards, tag, t, m) for m in members]
        return {
            "source": expand(
                rules.generate_data.output.source,
                dataset=wildcards.dataset,
                seeds=CALIBRATION_BLOCK,
            ),
            "weights": [reweighting_file(run, "weights") for run in runs],
            "labels": [labels_file(run) for run in runs],
        }

    return inputs


def plugin_stacks(method, step):
    """{(currency tag, model, the step's own wildcards): [(eps, setting, wildcards), ...]}: the
    calibration runs of a plug-in method, each file once (`setting`: the suffix of the step's axes).
    A step that trains several runs at once (Step.per_run) is stacked by the shape of their networks
    and its own wildcards (Method.field_values: ExPriL by MMD's iteration, whose h_t need the
    h_(t-1)); any other step (model None) runs every run of a currency one after another.
    """
    family, stacks = registry.family(method.name), {}
    for name, currency in CURRENCIES.items():
        for run in calibration_runs_here(name):
            if run["method"] not in method.reports:
                continue
            model = grids.parse(GRID, family, run["setting"]).get("model")
            eps = settings.format_eps(run["eps"])
            ctx = plugin_context(
                method, run["dataset"], CALIBRATION_BLOCK, eps, run["setting"], currency
            )
            for values in method.field_values(step, ctx):
                fields = tuple(sorted(values.items()))
                member = (eps, ctx.suffix(step.axes), fields)
                key = (currency.tag, model if step.per_run else None, fields)
                stacks.setdefault(key, set()).add(member)
    return {key: sorted(members) for key, members in stacks.items()}


def stacked_steps(method):
    """The steps stacked on the calibration block: those that train several runs at once, and those
    whose runs are one file each (no wildcards of their own, whose values only the per-run
    stacks enumerate), which a stack runs one after another to spare their processes' start.
    """
    return [s for s in method.steps if s.per_run or not s.fields]


def plugin_stack_resources(step, members):
    """A plug-in stack's resources: where its runs train as one block, their memory; where it runs
    them one at a time, what a run's own job asks (rules/plugins.smk)."""
    own = plugin_resources(step)
    return own | ({"mem_mb": stack_memory_mb(len(members))} if step.per_run else {})


def plugin_members(wildcards, tag, members):
    """The wildcards of a plug-in stack's runs, as their own jobs' (plugins.smk)."""
    return [
        calibration_wildcards(wildcards.dataset, eps, tag, suffix, **dict(fields))
        for eps, suffix, fields in members
    ]


def plugin_stack_inputs(method, step, tag, members):
    """Every file a plug-in stack's runs read, as their own jobs would."""
    inputs = plugin_inputs(method, step)

    def files(wildcards):
        return [
            path
            for wc in plugin_members(wildcards, tag, members)
            for value in inputs(wc).values()
            for path in ([value] if isinstance(value, str) else value)
        ]

    return files


def stacked_runs(method, step, tag, members):
    """Each member's job as plugins.smk would build it: its inputs, outputs, params and wildcards."""
    inputs, params = plugin_inputs(method, step), plugin_params(method, step)
    outputs = plugin_outputs(method, step)

    def runs(wildcards):
        return [
            {
                "inputs": inputs(wc),
                "outputs": {k: v.format(**vars(wc)) for k, v in outputs.items()},
                "params": {k: value(wc) for k, value in params.items()},
                "wildcards": vars(wc),
            }
            for wc in plugin_members(wildcards, tag, members)
        ]

    return runs


def evaluation_stacks():
    """{(dataset, currency name, method): [run, ...]}: the calibration's runs, ExPriL's C and I one
    method (they share their evaluation files)."""
    stacks = {}
    for name in CURRENCIES:
        for run in calibration_runs_here(name):
            method = "expril" if run["method"] in grids.VARIANT else run["method"]
            stacks.setdefault((run["dataset"], name, method), {})[
                run["evaluation"]
            ] = run
    return {key: list(runs.values()) for key, runs in stacks.items()}


def run_wildcards(run):
    """The wildcards of a calibration run's own evaluation job."""
    tag = CURRENCIES[run["currency"]].tag
    eps = settings.format_eps(run["eps"])
    return calibration_wildcards(
        run["dataset"], eps, tag, run["setting"], rival=run["method"]
    )


def evaluated(runs, method):
    """The stack's params: each run's files and what its own job's script passes on."""

    def params(wildcards):
        rivals, hypotheses = [], []
        for run in runs:
            wc = run_wildcards(run)
            given = {"out": run["evaluation"], "eps": float(wc.eps)}
            if method == "expril":
                hypotheses.append(given | {"models": hypothesis_models(wc)})
            else:
                rivals.append(
                    given | {"model": rival_model(wc), "method": run["method"]}
                )
        return {"rivals": rivals, "hypotheses": hypotheses}

    return params


def stack_models(params):
    """The model files an evaluation stack's params name."""
    return [run["model"] for run in params["rivals"]] + [
        path for run in params["hypotheses"] for _, _, path in run["models"]
    ]


for (_tag, _t, _model), _members in calibration_stacks().items():
    _name = f"train_hypotheses_{_tag.strip('@')}_t{_t}_{_model}"

    rule:
        name:
            _name
        input:
            unpack(stack_inputs(_tag, _t, _members)),
        output:
            [
                f"{R}/learner/{{dataset}}/{CALIBRATION_BLOCK}/eps{e}{_tag}{s}/{v}/model_t{_t}.npz"
                for e, s, v in _members
            ],
        log:
            f"{R}/logs/train_hypotheses/{{dataset}}/{CALIBRATION_BLOCK}/{_name}.log",
        benchmark:
            f"{R}/benchmarks/train_hypotheses/{{dataset}}/{CALIBRATION_BLOCK}/{_name}.tsv"
        conda:
            "../envs/expril.yaml"
        threads: 1
        resources:
            gpu=TRAINING_GPUS,
            mem_mb=stack_memory_mb(len(_members)),
        params:
            code=package_code("train_hypotheses"),
            network=lambda wc, m=_members[0], t=_t, tag=_tag: network(
                member_wildcards(wc, tag, t, m), "expril"
            ),
            training=config["training"],
            init_keys=lambda wc, members=_members, t=_t, tag=_tag: [
                hypothesis_key(member_wildcards(wc, tag, t, m)) for m in members
            ],
            device=config["device"],
        script:
            "../workflow_scripts/train_hypotheses.py"

    workflow.ruleorder(_name, "train_hypothesis")
    STACKED[_name] = "train_hypothesis"


for _method in PLUGINS.values():
    for _step in stacked_steps(_method):
        for (_tag, _model, _fields), _members in plugin_stacks(_method, _step).items():
            _own = "".join(f"_{f}{v}" for f, v in _fields)  # _t2_variantC
            _shape = f"_{_model}" if _model else ""
            _name = f"{_step.rule}_{_tag.strip('@')}{_shape}{_own}"

            rule:
                name:
                    _name
                input:
                    plugin_stack_inputs(_method, _step, _tag, _members),
                output:
                    [
                        file.format(
                            dataset="{dataset}",
                            seeds=CALIBRATION_BLOCK,
                            eps=e,
                            currency=_tag,
                            setting=s,
                            **dict(f),
                        )
                        for e, s, f in _members
                        for file in plugin_outputs(_method, _step).values()
                    ],
                log:
                    f"{R}/logs/{_step.rule}/{{dataset}}/{CALIBRATION_BLOCK}/{_name}.log",
                benchmark:
                    f"{R}/benchmarks/{_step.rule}/{{dataset}}/{CALIBRATION_BLOCK}/{_name}.tsv"
                conda:
                    "../envs/expril.yaml"
                threads: 1
                resources:
                    **plugin_stack_resources(_step, _members),
                params:
                    step=_step.rule,
                    runs=stacked_runs(_method, _step, _tag, _members),
                    code=plugin_code(_method, "plugin_stack"),
                script:
                    "../workflow_scripts/plugin_stack.py"

            workflow.ruleorder(_name, _step.rule)
            STACKED[_name] = _step.rule


for (_dataset, _currency, _method), _runs in evaluation_stacks().items():
    _tag = CURRENCIES[_currency].tag
    _name = "_".join(
        re.sub(r"\W", "_", part) for part in ("evaluate", _method, _dataset, _currency)
    )
    _rule = "evaluate_hypotheses" if _method == "expril" else "evaluate_rival"
    # the benchmark where the cost model finds the method (benchmarks/study_cost.py)
    _job = f"{_dataset}/{CALIBRATION_BLOCK}/" + (
        f"stacked{_tag}" if _method == "expril" else f"eps_all{_tag}/{_method}"
    )

    rule:
        name:
            _name
        input:
            target_test=expand(
                rules.split_target.output.test,
                dataset=_dataset,
                seeds=CALIBRATION_BLOCK,
            ),
            models=lambda wc, params=evaluated(_runs, _method): stack_models(params(wc)),
        output:
            [run["evaluation"] for run in _runs],
        log:
            f"{R}/logs/{_rule}/{_job}.log",
        benchmark:
            f"{R}/benchmarks/{_rule}/{_job}.tsv"
        conda:
            "../envs/expril.yaml"
        resources:
            mem_mb=settings.job_memory_mb(
                GRID["calibration"]["runs"], config["benchmarks"][_dataset], False
            ),
        params:
            runs=evaluated(_runs, _method),
            dataset=_dataset,
            code=package_code("evaluate_stack"),
        script:
            "../workflow_scripts/evaluate_stack.py"

    workflow.ruleorder(_name, _rule)
    STACKED[_name] = _rule
