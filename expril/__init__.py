"""ExPriL: learning a classifier from the differentially private error marginals of a target set.

The package by role: `method` (ExPriL itself), `privacy` (mechanisms, noise, ledger, audits),
`rivals` (the methods compared with it), `steps` (the workflow's steps, one module per role),
`reports` (tables and figures), `workflow` (the workflow's tooling); shared by all: `datasets`
(the benchmarks), `io` (atomic files), `seeds` (keyed random streams), `settings` (quantities
derived from the configuration). Only the modules that train import torch.
"""
