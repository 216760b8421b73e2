from expril import steps

steps.setup_logging(snakemake.log[0])
steps.split_target(snakemake.input[0], snakemake.output.val, snakemake.output.test,
                   snakemake.wildcards.dataset, snakemake.params.val_fraction)
