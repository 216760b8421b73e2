from expril import steps

steps.setup_logging(snakemake.log[0])
steps.oracle_errors(snakemake.input.target_val, snakemake.input.bins, snakemake.input.model,
                    snakemake.output[0], snakemake.wildcards.dataset, snakemake.params.query,
                    snakemake.params.scale)
