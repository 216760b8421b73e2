from expril import steps

steps.setup_logging(snakemake.log[0])
w = snakemake.wildcards
models = {(v, t): snakemake.input[f"{v}_t{t}"] for v, t in snakemake.params.models}
steps.evaluate_hypotheses(snakemake.input.target_test, models, snakemake.output[0], w.dataset, float(w.eps))
