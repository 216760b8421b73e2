# Identification of the readings the paper leaves open, from h* and h0* alone (expril/reports/identify.py,
# docs/identification.md). Not part of `all`: `snakemake identify` runs the calibration on seeds
# disjoint from the reported runs and writes the choice that the Snakefile reads after config.yaml.
# No rule here takes an oracle, learner or evaluation file: ExPriL cannot influence the choice.

IDENTIFIED = "data/identification"


localrules:
    select_readings,
    identify,


rule calibrate_reference:
    input:
        csv_file,
    output:
        f"{R}/identify/{{dataset}}/{{member}}.csv",
    log:
        f"{R}/logs/calibrate_reference/{{dataset}}/{{member}}.log",
    benchmark:
        f"{R}/benchmarks/calibrate_reference/{{dataset}}/{{member}}.tsv"
    conda:
        "../envs/expril.yaml"
    threads: 1
    resources:
        gpu=TRAINING_GPUS,
    params:
        code=package_code("calibrate_reference"),
        spec=calibration_spec,
        seeds=lambda wc: identify.calibration_seeds(config["runs"]),
        trainings=identify.training_readings(config["training"]),
        hidden=lambda wc: spec(wc)["hidden"],
        device=config["device"],
    script:
        "../workflow_scripts/calibrate_reference.py"


rule select_readings:
    input:
        calibration=list(calibration_files().values()),
        paper_table2="data/paper/table2.csv",
    output:
        calibration=f"{R}/identify/calibration.csv",
        choice=f"{R}/identify/choice.yaml",
        markdown=f"{R}/identify/identification.md",
    log:
        f"{R}/logs/select_readings.log",
    conda:
        "../envs/expril.yaml"
    params:
        code=package_code("select_readings"),
        readings=list(calibration_files()),
    script:
        "../workflow_scripts/select_readings.py"


# The choice and its table, committed: the Snakefile reads choice.yaml as a second config file.
rule identify:
    input:
        calibration=rules.select_readings.output.calibration,
        choice=rules.select_readings.output.choice,
        markdown=rules.select_readings.output.markdown,
    output:
        calibration=f"{IDENTIFIED}/calibration.csv",
        choice=f"{IDENTIFIED}/choice.yaml",
        markdown=f"{IDENTIFIED}/identification.md",
    log:
        f"{R}/logs/identify.log",
    conda:
        "../envs/expril.yaml"
    shell:
        "(cp {input.calibration} {output.calibration} && cp {input.choice} {output.choice}"
        " && cp {input.markdown} {output.markdown}) 2> {log}"
