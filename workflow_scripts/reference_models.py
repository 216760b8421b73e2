from expril import steps

steps.setup_logging(snakemake.log[0])
i, o, p = snakemake.input, snakemake.output, snakemake.params
steps.reference_models(i.target_val, i.target_test, o.accuracy, o.model, snakemake.wildcards.dataset,
                       p.hidden, p.training, p.device, snakemake.threads)
