from expril import steps

steps.setup_logging(snakemake.log[0])
steps.oracle_marginals(snakemake.input.target_val, snakemake.input.bins, snakemake.output.answers,
                       snakemake.output.ledger, snakemake.wildcards.dataset, snakemake.params.mechanism)
