from expril import steps

steps.setup_logging(snakemake.log[0])
i, p = snakemake.input, snakemake.params
steps.reweight_source(i.source, snakemake.output.weights, snakemake.output.bins, p.q, p.solver,
                      p.mechanism, bins_path=i.get("bins"), marginals_path=i.get("marginals"))
