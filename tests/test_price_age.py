"""Issue 29, point 3: ``prices status`` gives each provider's rows by the age of their price, and a plan names the
oldest price it depends on (gpuopt/price_age.py)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pandas as pd
import pytest

from gpuopt import api
from gpuopt.price_age import age_bucket, oldest_price_note, price_age_days, rows_by_age

import datetime as _dt

#: a recent quote's date: a week before today (UTC)
_LAST_WEEK = (_dt.datetime.now(_dt.timezone.utc).date() - _dt.timedelta(days=7)).isoformat()

TODAY = dt.date(2026, 12, 7)


@pytest.mark.parametrize("as_of, bucket", [
    ("2026-12-07", "under_30_days"), ("2026-11-08", "under_30_days"), ("2026-11-07", "30_to_89_days"),
    ("2026-09-09", "30_to_89_days"), ("2026-09-08", "90_to_364_days"), ("2025-12-08", "90_to_364_days"),
    ("2025-12-07", "365_days_or_more"), ("2017-11-12", "365_days_or_more"), ("unknown", "undated"), (None, "undated"),
    ("", "undated"), ("2026-07-22T00:00:00Z", "90_to_364_days"),
])
def test_age_buckets_by_days_before_today(as_of, bucket):
    # < 30, 30-89, 90-364, >= 365 days, undated: the buckets issue 29 names
    assert age_bucket(as_of, TODAY) == bucket


def test_rows_by_age_counts_every_row_once():
    offers = pd.DataFrame({"provider": ["aws", "aws", "aws", "gcp", "gcp"],
                           "as_of": ["2026-12-01", "unknown", "2025-11-30", "2026-07-30", "2026-07-30"]})
    got = rows_by_age(offers, TODAY)
    assert got["aws"] == {"under_30_days": 1, "30_to_89_days": 0, "90_to_364_days": 0, "365_days_or_more": 1,
                          "undated": 1}
    assert got["gcp"]["90_to_364_days"] == 2 and sum(got["gcp"].values()) == 2


def test_prices_status_gives_ages_for_every_row_of_the_shipped_snapshot():
    st = api.prices_status().to_dict()
    for prov, p in st["prices"]["providers"].items():
        ages = p["rows_by_age"]
        assert sum(ages.values()) == p["rows"], prov
        assert ages["undated"] == p["undated_rows"], prov
    # the shipped AWS on-demand rows of the 2025-11-30 catalog copy are over a year old on 2026-12-07 or later
    assert st["prices"]["providers"]["aws"]["rows_by_age"]["365_days_or_more"] > 0


def _line(**kw):
    base = dict(provider="aws", region="us-east-1", instance_type="p5.48xlarge", pricing="on_demand", payment=None,
                source="skypilot-catalog:catalogs/v8/aws/vms.csv", as_of="2025-11-30")
    base.update(kw)
    return SimpleNamespace(**base)


def test_the_oldest_price_a_plan_depends_on_is_named():
    lines = [_line(), _line(instance_type="p4d.24xlarge", pricing="reserved_3y", payment="all_upfront",
                            source="github.com/tsaol/aws-gpu data/gpu_instances_raw.json@2d0108c7", as_of="2025-06-01"),
             _line(instance_type="g5.xlarge", as_of="unknown"),
             _line(instance_type="p3.2xlarge", source="owned:ri-123", as_of="2017-11-12")]  # owned: not bought
    note = oldest_price_note(lines)
    age = price_age_days("2025-06-01")
    assert note.startswith("oldest price this plan depends on: p4d.24xlarge reserved_3y all_upfront (aws us-east-1) "
                           f"as of 2025-06-01, {age:,.0f} days old (github.com/tsaol/aws-gpu")
    assert note.endswith("; 1 line priced from catalog rows of no known date")
    assert oldest_price_note(lines, prices_on="2025-07-01") is None  # a plan priced as of a past date
    assert oldest_price_note([]) is None
    undated = [_line(as_of="unknown"), _line(instance_type="g5.xlarge", as_of="unknown")]
    assert oldest_price_note(undated) == ("no price this plan depends on has a known date: 2 lines priced from "
                                          "catalog rows of no known date")


def test_a_plan_names_its_oldest_price_among_its_warnings(tmp_path):
    csv = tmp_path / "c.csv"
    csv.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,as_of\n"
                   "myco,dc1,box,A100-80GB,1,80,on_demand,5,2017-11-12\n"
                   f"myco,dc1,new,A100-80GB,1,80,on_demand,6,{_LAST_WEEK}\n")  # a future date is refused (issue 33)
    # two instances a type at most: the plan buys both types, the 2017 one the oldest price it depends on
    res = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=1000, catalog=str(csv), explain=False,
                        max_instances=2)
    assert {ln.instance_type for ln in res.plan.lines} == {"box", "new"}
    want = [n for n in res.plan.notes if n.startswith("oldest price this plan depends on: ")]
    assert len(want) == 1 and "box on_demand (myco dc1) as of 2017-11-12" in want[0]
    assert want[0] in res.prices["warnings"]
    # one purchase: its own old-quote note says it; no second line repeating it (a fresh user's find)
    one = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=100, catalog=str(csv), explain=False)
    assert len(one.plan.lines) == 1 and not [n for n in one.plan.notes if n.startswith("oldest price")]
