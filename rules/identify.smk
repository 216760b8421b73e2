# Identification of the readings the paper leaves open, from h* and h0* alone (expril/identify.py,
# docs/identification.md). Not part of `all`: `snakemake identify` runs the calibration on seeds
# disjoint from the reported runs and writes the choice that the Snakefile reads after config.yaml.
# No rule here takes an oracle, learner or evaluation file: ExPriL cannot influence the choice.

IDENTIFIED = "data/identification"


localrules:
    select_readings,
    identify,


def calibration_files():
    """{(dataset, member): file}: every reading of every paper benchmark."""
    return {
        (d, m): f"{R}/identify/{d}/{m}.csv" for d in identify.TRAINING.datasets for m in identify.members(d)
    }


def calibration_spec(wildcards):
    protocol = {k: config[k] for k in ("redraw", "val_fraction")}
    return identify.calibration_spec(wildcards.dataset, spec(wildcards), wildcards.member, protocol)


rule calibrate_reference:
    input:
        ctg_csv,
    output:
        f"{R}/identify/{{dataset}}/{{member}}.csv",
    params:
        code=package_code("calibrate_reference"),
        spec=calibration_spec,
        seeds=lambda wc: identify.calibration_seeds(config["runs"]),
        trainings=identify.training_readings(config["training"]),
        hidden=lambda wc: spec(wc)["hidden"],
        device=config["device"],
        ctg_sha256=lambda wc: config["ctg"]["sha256"] if spec(wc)["generator"] == "ctg" else None,
    threads: 1
    resources:
        gpu=1 if config["device"] == "cuda" else 0,
    log:
        f"{R}/logs/calibrate_reference/{{dataset}}/{{member}}.log",
    benchmark:
        f"{R}/benchmarks/calibrate_reference/{{dataset}}/{{member}}.tsv"
    conda:
        "../envs/expril.yaml"
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
    params:
        code=package_code("select_readings"),
        readings=list(calibration_files()),
    log:
        f"{R}/logs/select_readings.log",
    conda:
        "../envs/expril.yaml"
    script:
        "../workflow_scripts/select_readings.py"


# The choice and its table, committed: the Snakefile reads choice.yaml as a second config file.
rule identify:
    input:
        rules.select_readings.output.calibration,
        rules.select_readings.output.choice,
        rules.select_readings.output.markdown,
    output:
        f"{IDENTIFIED}/calibration.csv",
        f"{IDENTIFIED}/choice.yaml",
        f"{IDENTIFIED}/identification.md",
    params:
        folder=IDENTIFIED,
    log:
        f"{R}/logs/identify.log",
    shell:
        "for f in {input}; do cp $f {params.folder}/; done 2> {log}"
