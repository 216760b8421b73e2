"""Everything privacy: the mechanisms (`base`, one module per family, their registry
`mechanisms`), how large their noise is (`calibration`), where it is drawn (`noise`), where each
release is recorded (`ledger`), and the audits: empirical DP (`audit`) and the job plan's taint
(`taint`)."""
