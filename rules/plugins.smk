# The rules of the plug-in methods (expril/plugins/, docs/extending.md), built from their steps:
# each step is a rule of its name; a release is a curator rule with its mechanism and a ledger
# (expril/privacy/taint.py), the other steps are the learner's. A step's file is asked for with the
# suffix of the setting's axes it depends on, so that settings differing elsewhere share it, and
# with the values of its own wildcards (Step.fields). The gate (expril/plugins/gate.py) refuses a
# miswired method before any job runs.

for _method in PLUGINS.values():
    gate.declared(_method, GRID)


def plugin_context(method, dataset, seeds, eps, setting, currency, fields={}):
    """`currency`: the job's Currency (expril/workflow/currency.py); `fields`: the values of the
    step's own wildcards."""
    return context.Context(
        config,
        GRID,
        method.name,
        dataset,
        seeds,
        eps,
        setting,
        functools.partial(feature_map_file, dataset, seeds),
        currency,
        fields,
    )


def job_context(method, wildcards, step=None):
    return plugin_context(
        method,
        wildcards.dataset,
        wildcards.seeds,
        wildcards.eps,
        wildcards.setting,
        currency_of(wildcards),
        {f: wildcards[f] for f in step.fields} if step else {},
    )


def shared_file(key, wildcards):
    """A file every method may read (base.SHARED)."""
    if key == "configured_bins":
        return configured_bins(wildcards)
    pattern = {
        "target_val": rules.split_target.output.val,
        "source": rules.generate_data.output.source,
        "initial_hypothesis": rules.init_hypothesis.output[0],
    }[key]
    return expand(pattern, dataset=wildcards.dataset, seeds=wildcards.seeds)[0]


def plugin_inputs(method, step):
    def inputs(wildcards):
        ctx, files = job_context(method, wildcards, step), {}
        if step.release:
            # The method's empirical audit (plugin_audit) passed before its releases run.
            files["audit"] = audit_file(method, wildcards.currency)
        for name, source in step.inputs.items():
            if callable(source):
                files[name] = source(ctx)
                gate.tainted_read(method, step, files[name], R)
            elif source in base.SHARED:
                files[name] = shared_file(source, wildcards)
            else:
                files[name] = method.output(method.step(source), ctx)
        return files

    return inputs


def plugin_outputs(method, step):
    folder = method.folder(
        step, R, "{dataset}", "{seeds}", "{eps}{currency}", "{setting}"
    )
    out = {argument: f"{folder}/{file}" for argument, file in step.files.items()}
    ledger = (
        {"ledger": base.ledger_of(next(iter(out.values())))} if step.release else {}
    )
    return out | ledger


def plugin_job(step):
    """A step's job in the names of its log and benchmark: its eps, currency and setting, and its
    own wildcards."""
    own = [f"{f}{{{f}}}" for f in step.fields]
    return os.path.join("{dataset}", "{seeds}", "eps{eps}{currency}{setting}", *own)


def plugin_params(method, step):
    """The params its function names that the workflow provides, its own (`own`), and the privacy
    plan (a release's, or the method's for a learner step), refused by the gate where the run's plan
    exceeds its budget, and the budget a release's ledger is checked against."""
    named = set(step.arguments())
    params = {
        name: lambda wc, name=name: base.PROVIDED[name](
            method, job_context(method, wc, step)
        )
        for name in base.PROVIDED
        if name in named
    }
    if "mechanism" in named:
        params["mechanism"] = lambda wc: gate.planned(
            method, job_context(method, wc, step), step
        ).param() | {"secret_digest": SECRET_DIGEST}
    if step.params is not None:
        params["own"] = lambda wc: step.params(job_context(method, wc, step))
    if step.release:
        params["budget"] = lambda wc: [
            settings.parse_eps(wc.eps),
            job_context(method, wc).delta,
        ]
    return params


def plugin_resources(step):
    """What a plug-in step's job asks: a GPU where it trains and config's device is cuda."""
    return {"gpu": TRAINING_GPUS if step.trains else 0}


def plugin_code(method, script="plugin_step"):
    """The code digest of a plug-in's jobs: the step runner's and the method's own module's."""
    return package_code(script) + method_code(method)


def method_code(method):
    """The digest of a plug-in method's module (a file outside the package whole) and what it imports."""
    plugin = Path(inspect.getfile(type(method)))
    return code_digest.plugin_digest(plugin, Path(workflow.basedir) / "expril")


def audit_file(method, currency):
    return rules.plugin_audit.output[0].format(method=method.name, currency=currency)


def audit_plan(wildcards):
    """What the gate audits of a method (gate.claims): each release's mechanism and planned spend
    in a run, at gate.AUDIT_EPS, as configured, in the currency of the releases that wait for it,
    on gate.audit_dataset; and that dataset's feature count."""
    method = PLUGINS[wildcards.method]
    ctx = plugin_context(
        method,
        gate.audit_dataset(method, config),
        BLOCKS[0],
        gate.AUDIT_EPS,
        "",
        currency_of(wildcards),
    )
    releases = [[r.rule, m.param(), list(c)] for r, m, c in gate.claims(method, ctx)]
    return {"features": ctx.features, "releases": releases}


for _method in PLUGINS.values():
    for _step in _method.steps:

        rule:
            name:
                _step.rule
            input:
                unpack(plugin_inputs(_method, _step)),
            output:
                **plugin_outputs(_method, _step),
            log:
                f"{R}/logs/{_step.rule}/{plugin_job(_step)}.log",
            benchmark:
                f"{R}/benchmarks/{_step.rule}/{plugin_job(_step)}.tsv"
            conda:
                "../envs/expril.yaml"
            threads: 1
            resources:
                **plugin_resources(_step),
            params:
                **plugin_params(_method, _step),
                code=plugin_code(_method),
            script:
                "../workflow_scripts/plugin_step.py"
