from expril import steps

steps.setup_logging(snakemake.log[0])
p = snakemake.params
ctg_csv = snakemake.input[0] if p.ctg_sha256 else None
steps.generate_data(snakemake.output.source, snakemake.output.target, snakemake.wildcards.dataset,
                    p.spec, p.seeds, p.redraw, ctg_csv, p.ctg_sha256)
