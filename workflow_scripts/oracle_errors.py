from expril import steps

steps.setup_logging(snakemake.log[0])
i, o, p = snakemake.input, snakemake.output, snakemake.params
steps.oracle_errors(i.target_val, i.bins, i.model, o.answers, o.ledger, snakemake.wildcards.dataset, p.query,
                    p.mechanism, previous_ledger=i.get("previous_ledger"))
