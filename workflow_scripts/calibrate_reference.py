from expril import steps

steps.setup_logging(snakemake.log[0])
p = snakemake.params
ctg_csv = snakemake.input[0] if p.ctg_sha256 else None
steps.calibrate_reference(snakemake.output[0], snakemake.wildcards.dataset, p.spec, p.seeds, p.trainings, p.hidden,
                          p.device, snakemake.threads, ctg_csv, p.ctg_sha256)
