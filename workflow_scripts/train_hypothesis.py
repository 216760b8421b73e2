from expril import steps

steps.setup_logging(snakemake.log[0])
i, p = snakemake.input, snakemake.params
steps.train_hypothesis(i.source, i.weights, i.labels, snakemake.output[0], p.hidden, p.training,
                       p.init_key, p.device, snakemake.threads)
