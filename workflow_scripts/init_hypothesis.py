from expril import steps

steps.setup_logging(snakemake.log[0])
steps.init_hypothesis(snakemake.output[0], snakemake.params.seeds)
