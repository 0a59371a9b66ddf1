"""The monthly review's commitment recommendation: the MILP over an hourly usage profile, checked against the
closed form of the load-duration curve and hand numbers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.review import recommend_commitment

OD = {"provider": "aws", "region": "us-east-1", "instance_type": "p4d.24xlarge", "pricing": "on_demand",
      "payment": "", "usd_per_hour": 10.0, "upfront_usd": 0.0, "recurring_usd_per_hour": 10.0, "gpu_count": 8.0,
      "gpu_model": "A100-40GB", "source": "test", "as_of": "2026-01-01"}
RI = {**OD, "pricing": "reserved_1y", "payment": "no_upfront", "usd_per_hour": 6.0, "recurring_usd_per_hour": 6.0}


def _closed_form(counts, ratio):
    """Commit to n while the share of hours with at least n instances running exceeds reserved / on-demand."""
    n = 0
    while sum(1 for c in counts if c >= n + 1) / len(counts) > ratio:
        n += 1
    return n


def test_a_day_and_night_profile():
    # 16 h a day at 4 instances, 8 h at 1; break-even 0.6: the 1st instance runs 100 % of hours, the 2nd to 4th 67 %
    # (> 60 %): commit to 4. Monthly: 4 x 6 x 730 = 17,520 vs on-demand (16 x 4 + 8) / 24 x 730 x 10 = 21,900.
    counts = ([4.0] * 16 + [1.0] * 8) * 30
    n, with_c, od_monthly, status = recommend_commitment(counts, OD, RI)
    assert status == "optimal" and n == 4
    assert with_c == pytest.approx(17520.0) and od_monthly == pytest.approx(21900.0)


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.integers(0, 6), min_size=24, max_size=72), ratio=st.sampled_from([0.35, 0.5, 0.6, 0.7]))
def test_milp_matches_the_load_duration_curve(counts, ratio):
    ri = {**RI, "usd_per_hour": 10.0 * ratio, "recurring_usd_per_hour": 10.0 * ratio}
    counts = [float(c) for c in counts]
    n, with_c, od_monthly, _ = recommend_commitment(counts, OD, ri)
    scale = 730.0 / len(counts)
    expected = _closed_form(counts, ratio)
    cost = lambda k: (k * 10.0 * ratio * len(counts) + sum(max(0.0, c - k) for c in counts) * 10.0) * scale  # noqa: E731
    assert cost(n) == pytest.approx(cost(expected), rel=1e-9)  # ties may differ in n, never in cost
    assert with_c == pytest.approx(cost(n), rel=1e-9)


def test_fractional_usage_is_paid_by_the_hour_not_by_whole_instances():
    # 0.6 instances every hour (a daily Azure export spread over its hours): at reserved = 0.65 x on-demand no
    # commitment pays; at 1.5 instances, one commitment covers the first instance and 0.5 stays on demand:
    # 1 x 6.5 x 730 + 0.5 x 10 x 730 = 8,395 < 1.5 x 10 x 730 = 10,950; two would cost 9,490.
    ri = {**RI, "usd_per_hour": 6.5, "recurring_usd_per_hour": 6.5}
    n, with_c, od_monthly, _ = recommend_commitment([0.6] * 48, OD, ri)
    assert n == 0 and with_c == pytest.approx(od_monthly)
    n, with_c, od_monthly, _ = recommend_commitment([1.5] * 48, OD, ri)
    assert n == 1 and with_c == pytest.approx(8395.0) and od_monthly == pytest.approx(10950.0)


# The window of a review (a burst inside a month-long export, a burst alone, a lookback longer than the data):
# tests/test_review_window.py.
