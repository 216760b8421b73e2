# The calibration's trainings of ExPriL's h_t, stacked (issue #35, docs/performance.md): on a
# calibration block, every run of the grid at every calibrated eps trains, so the runs' networks of
# one shape (model axis), iteration and currency are known when the workflow is parsed and train as
# one block in one job; each file is the one train_hypothesis writes for its run alone (the block
# trainer's guarantee), so the rest of the graph reads the same files.


def calibration_stacks():
    """{(currency tag, t, model): {(eps, setting, variant dir), ...}}: the ExPriL runs of
    calibration_runs (the same on every calibrated dataset), by what their h_t share."""
    stacks = {}
    for name, currency in CURRENCIES.items():
        for run in calibration_runs(name):
            method, suffix = run["method"], run["setting"]
            if method not in grids.VARIANT:
                continue
            model = grids.parse(GRID, "expril", suffix)["model"]
            eps = settings.format_eps(run["eps"])
            for t in range(1, run_iterations(method, suffix) + 1):
                member = (eps, suffix, variant_dir(grids.VARIANT[method], t))
                stacks.setdefault((currency.tag, t, model), set()).add(member)
    return {key: sorted(members) for key, members in stacks.items()}


def member_wildcards(wildcards, tag, t, member):
    """The wildcards train_hypothesis would have for one run of a stack."""
    eps, suffix, variant = member
    return types.SimpleNamespace(
        dataset=wildcards.dataset,
        seeds=CALIBRATION_BLOCK,
        eps=eps,
        currency=tag,
        setting=suffix,
        variant=variant,
        t=str(t),
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
            gpu=1 if config["device"] == "cuda" else 0,
            mem_mb=lambda wc, n=len(_members): settings.job_memory_mb(
                GRID["calibration"]["runs"] * n, spec(wc), True
            ),
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
