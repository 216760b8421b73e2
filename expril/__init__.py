"""ExPriL: learning a classifier from the differentially private error marginals of a target set.

Modules are split by who may run them: `datasets` builds the world, `oracle` is the curator's
side (the only code that touches target labels), everything else is the learner's.
`training` is the only module that imports torch.
"""
