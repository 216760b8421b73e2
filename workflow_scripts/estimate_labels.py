from expril import steps

steps.setup_logging(snakemake.log[0])
i, p = snakemake.input, snakemake.params
steps.estimate_labels(i.source, i.weights, i.bins, list(i.models), list(i.answers), snakemake.output[0],
                      p.solver, p.mechanism, counts_path=i.get("counts"))
