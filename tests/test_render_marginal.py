"""The plan table's shadow-price lines: a dual that rounds to $0.0000 is not printed as a cost."""

from __future__ import annotations

import io

from rich.console import Console

from gpuopt import api, render


def _text(plan) -> str:
    buf = io.StringIO()
    render._plan(Console(file=buf, width=200, color_system=None), plan)
    return buf.getvalue()


def test_zero_duals_are_not_printed_as_prices():
    res = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=500, explain=False)
    plan = res.plan
    plan.marginal = {"demand": [{"workload": "w", "block": "hour 3", "months": "1-12",
                                 "usd_per_month_per_token_per_s": 0.0},
                                {"workload": "w", "block": "hour 4", "months": "1-12",
                                 "usd_per_month_per_token_per_s": 0.00001}]}
    out = _text(plan)
    assert "$0.0000" not in out
    assert "One more token/s costs nothing more in any block" in out
    plan.marginal["demand"].insert(0, {"workload": "w", "block": "hour 20", "months": "1-12",
                                       "usd_per_month_per_token_per_s": 2.5})
    out = _text(plan)
    assert "One more token/s for w in hour 20 (months 1-12) costs about $2.5000 a month" in out
    assert "hour 3" not in out and "costs nothing more" not in out
