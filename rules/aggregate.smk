# Table 1, Table 2, Figure 1 and the long CSV of every accuracy, from the evaluation files;
# fidelity.*: our Table 2 and the paper's claims against the paper's numbers (data/paper/).


rule aggregate_results:
    input:
        accuracy=expand(
            f"{R}/eval/{{dataset}}/{{seeds}}/eps{{eps}}/accuracy.csv",
            dataset=config["datasets"],
            seeds=BLOCKS,
            eps=EPSILONS,
        ),
        reference=expand(
            f"{R}/reference/{{dataset}}/{{seeds}}/reference.csv",
            dataset=config["datasets"],
            seeds=BLOCKS,
        ),
        ledgers=run_ledgers(),
        paper_table2="data/paper/table2.csv",
    output:
        table2_csv=f"{R}/table2.csv",
        table2_md=report(
            f"{R}/table2.md", caption="../report/table2.rst", category="Results"
        ),
        table1=report(
            f"{R}/table1.csv", caption="../report/table1.rst", category="Settings"
        ),
        accuracies=f"{R}/accuracies.csv",
        privacy_ledger=f"{R}/privacy_ledger.csv",
        figure_pdf=f"{R}/figure1.pdf",
        figure_png=report(
            f"{R}/figure1.png", caption="../report/figure1.rst", category="Results"
        ),
        fidelity_md=report(
            f"{R}/fidelity.md",
            caption="../report/fidelity.rst",
            category="Paper against reproduction",
        ),
        fidelity_csv=f"{R}/fidelity.csv",
        fidelity_claims=f"{R}/fidelity_claims.csv",
    log:
        f"{R}/logs/aggregate_results.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("aggregate_results"),
        config={k: v for k, v in config.items() if k not in ("results", "comparison")},
    script:
        "../workflow_scripts/aggregate_results.py"


# Not part of `all`: after the full reproduction, `snakemake publish_summary` copies its small
# tables into summary/, which is committed so that readers see numbers without running anything.
rule publish_summary:
    input:
        [
            rules.aggregate_results.output[name]
            for name in (
                "table2_csv",
                "table2_md",
                "table1",
                "fidelity_md",
                "fidelity_csv",
                "fidelity_claims",
                "figure_png",
            )
        ],
    output:
        "summary/table2.csv",
        "summary/table2.md",
        "summary/table1.csv",
        "summary/fidelity.md",
        "summary/fidelity.csv",
        "summary/fidelity_claims.csv",
        "summary/figure1.png",
    log:
        f"{R}/logs/publish_summary.log",
    conda:
        "../envs/expril.yaml"
    shell:
        publish("summary")
