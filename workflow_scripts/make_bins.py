from expril import steps

steps.setup_logging(snakemake.log[0])
steps.make_bins(snakemake.input[0], snakemake.output[0], snakemake.params.q)
