"""ExPriL's rivals at equal privacy (docs/comparison.md, docs/synthetic.md): learning from label
proportions, DP-SGD, AIM and MST, DP-MERF and its generator."""
