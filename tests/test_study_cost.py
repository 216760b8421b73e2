"""The cost model's projection after several measured cuts (benchmarks/study_cost.py --cut)."""

import pytest

from benchmarks.study_cost import combined


def test_cuts_on_disjoint_jobs_add_their_savings_and_chained_cuts_multiply():
    """Two cuts, each halving its jobs' time. On disjoint jobs, one of 60 % and one of 40 % of the
    method's time: 1 - 0.3 - 0.2. Measured one on the other's code over the whole sample (share 1):
    0.5 x 0.5."""
    assert combined([(0.6, 0.5), (0.4, 0.5)]) == pytest.approx(0.5)
    assert combined([(1.0, 0.5), (1.0, 0.5)], chained=True) == pytest.approx(0.25)
    assert combined([(1.0, 0.8)]) == combined([(1.0, 0.8)], chained=True) == pytest.approx(0.8)
