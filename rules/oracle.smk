# The oracle (curator): the only rules, with reference_*, whose inputs include target_val.
# The learner hands over its bins and its model file; the oracle scores the model on its own
# data and releases noisy marginals only. The noise secret comes from the environment and is
# never a parameter of any rule (oracle rules carry its digest so a new secret reruns them).
# Each oracle job checks the run's privacy ledger (plan and budget) before it answers.


rule oracle_marginals:
    input:
        target_val=rules.split_target.output.val,
        # the bins of its setting's snr and T (its split changes the noise alone)
        bins=lambda wc: marginal_bins_file(wc, "expril"),
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/marginals.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/marginals.ledger.csv",
    log:
        f"{R}/logs/oracle_marginals/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.log",
    benchmark:
        f"{R}/benchmarks/oracle_marginals/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}.tsv"
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("oracle_marginals"),
        mechanism=privacy_plan("expril"),
    script:
        "../workflow_scripts/oracle_marginals.py"


rule oracle_errors:
    input:
        target_val=rules.split_target.output.val,
        bins=lambda wc: reweighting_file(wc, "error_bins"),
        model=lambda wc: model_file(wc, wc.variant, int(wc.t)),
        previous_ledger=previous_ledger,
    output:
        answers=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/errors_t{{t}}.npz",
        ledger=f"{R}/oracle/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/errors_t{{t}}.ledger.csv",
    log:
        f"{R}/logs/oracle_errors/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.log",
    benchmark:
        f"{R}/benchmarks/oracle_errors/{{dataset}}/{{seeds}}/eps{{eps}}{{currency}}{{setting}}/{{variant}}/t{{t}}.tsv"
    conda:
        "../envs/expril.yaml"
    resources:
        mem_mb=memory_mb(),
    params:
        code=package_code("oracle_errors"),
        query=lambda wc: f"{eps_dir(wc)}/{wc.variant}/errors_t{wc.t}",
        mechanism=privacy_plan("expril"),
    script:
        "../workflow_scripts/oracle_errors.py"
