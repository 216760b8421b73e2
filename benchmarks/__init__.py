"""Measurements of the workflow (pipeline.py) and of the oracle mechanisms' privacy (dp_audit.py).

A regular package: opacus 1.6.0's wheel installs a top-level `benchmarks` package of its own, which
would otherwise shadow this folder (`python -m benchmarks.pipeline` would find no module).
"""
