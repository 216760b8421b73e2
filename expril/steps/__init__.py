"""One function per workflow step, in the module of the role that runs it: `world` (the data),
`curator` (the only steps, with the evaluator's, that read the target), `learner` and
`evaluator`; `blocks` is the seed block's file format they share. A step loads its input files,
runs the method over the seeds of a block and writes its outputs; the Snakemake scripts only map
rule inputs and params onto it. The taint audit's roles (expril.privacy.taint.ROLES) and these
modules name the same rules (tests/privacy/test_taint.py). The plug-in methods' steps are in
their own modules (expril.plugins), their roles given by their steps."""
