"""User offers CSV: defaults, validation errors with line numbers, currency (BUG-12), duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES
from providers.offers_csv import parse_offers_csv, read_offers_csv

FIX = Path(__file__).resolve().parent / "fixtures" / "offers"
HEAD = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour"
OK = "myco,dc1,box,A100-80GB,8,80,on_demand,18.5"


def _err(text: str) -> InputError:
    with pytest.raises(InputError) as ei:
        parse_offers_csv(text, "t.csv")
    assert ei.value.field == "catalog"
    return ei.value


def test_valid_file_with_defaults():
    df = read_offers_csv(FIX / "onprem_ok.csv")
    assert tuple(df.columns) == OFFER_COLUMNS
    assert {c: str(t) for c, t in df.dtypes.items()} == {c: str(t) for c, t in df.astype(OFFER_DTYPES).dtypes.items()}
    od = df[df.pricing == "on_demand"].iloc[0]
    assert (od["payment"], od["upfront_usd"], od["recurring_usd_per_hour"], od["term_hours"]) == ("", 0, 18.5, 0)
    res = df[df.pricing == "reserved_1y"].iloc[0]
    assert (res["upfront_usd"], res["term_hours"]) == (52560, 8760)
    assert res["recurring_usd_per_hour"] == pytest.approx(12.0 - 52560 / 8760)
    spot = df[df.pricing == "spot"].iloc[0]
    assert spot["gpu_count"] == 0.125  # fractional GPUs stay floats
    assert (spot["interconnect"], spot["currency"], spot["source"], spot["as_of"], spot["zone"]) == (
        "pcie", "USD", "user:onprem_ok.csv", "unknown", "")
    assert spot["vcpus"] != spot["vcpus"]  # NaN: unknown, not 0


def test_minimal_columns_only():
    df = parse_offers_csv(f"{HEAD}\n{OK}\n")
    assert len(df) == 1 and df.iloc[0]["currency"] == "USD"


def test_mixed_currencies_refused():
    # BUG-12: a EUR row next to USD rows is refused, with the line and the accepted currency
    with pytest.raises(InputError) as ei:
        read_offers_csv(FIX / "mixed_currency.csv")
    msg = str(ei.value)
    assert "line 3" in msg and "EUR" in msg and "USD" in msg and "mixed currencies" in msg
    assert ei.value.accepted == "USD"


def test_single_non_usd_currency_refused():
    e = _err(f"{HEAD},currency\n{OK},EUR\n")
    assert "line 2" in str(e) and "EUR" in str(e)


@pytest.mark.parametrize("row,needle", [
    ("myco,dc1,box,A100-80GB,8,80,on_demand,", "usd_per_hour is empty"),  # BUG-07: missing is unknown, never 0
    ("myco,dc1,box,A100-80GB,8,80,on_demand,0", "must be > 0"),
    ("myco,dc1,box,A100-80GB,8,80,on_demand,-1", "must be > 0"),
    ("myco,dc1,box,A100-80GB,8,80,on_demand,abc", "not a number"),
    ("myco,dc1,box,A100-80GB,0,80,on_demand,1.0", "gpu_count must be > 0"),
    ("myco,dc1,box,A100-80GB,8,80,hourly,1.0", "pricing 'hourly'"),
    ("myco,dc1,box,A100-80GB,8,80,reserved_1y,1.0", "payment ''"),
    ("myco,dc1,box,RTX-9999,8,80,on_demand,1.0", "not a known GPU"),
    ("myco,dc1,,A100-80GB,8,80,on_demand,1.0", "instance_type is empty"),
])
def test_bad_rows_name_the_line(row, needle):
    e = _err(f"{HEAD}\n{OK.replace('box', 'other')}\n{row}\n")
    assert "line 3" in str(e) and needle in str(e)


def test_payment_rules():
    head = HEAD + ",payment"
    assert "payment is for reserved rows only" in str(_err(f"{head}\n{OK},no_upfront\n"))
    assert "partial_upfront needs" in str(_err(f"{head}\nmyco,dc1,box,A100-80GB,8,80,reserved_3y,1.0,partial_upfront\n"))
    df = parse_offers_csv(f"{head}\nmyco,dc1,box,A100-80GB,8,80,reserved_3y,1.0,all_upfront\n")
    row = df.iloc[0]
    assert (row["upfront_usd"], row["recurring_usd_per_hour"], row["term_hours"]) == (26280, 0, 26280)


def test_duplicate_keys_refused():
    e = _err(f"{HEAD}\n{OK}\n{OK.replace('18.5', '19')}\n")
    assert "line 3" in str(e) and "duplicate" in str(e) and "line 2" in str(e)


def test_unknown_and_missing_columns():
    assert "unknown column" in str(_err(f"{HEAD},colour\n{OK},red\n"))
    assert "missing required column" in str(_err("provider,region\naws,us-east-1\n"))
    assert "empty" in str(_err(""))


def test_raw_gpu_names_are_mapped():
    df = parse_offers_csv(f"{HEAD}\nmyco,dc1,box,A100,8,80,on_demand,10\nmyco,dc1,box2,H100,8,80,on_demand,20\n")
    assert list(df["gpu_model"]) == ["A100-80GB", "H100-80GB"]


@settings(max_examples=40, deadline=None)
@given(price=st.floats(min_value=0.01, max_value=500, allow_nan=False), share=st.floats(min_value=0, max_value=1),
       term=st.sampled_from(["reserved_1y", "reserved_3y"]))
def test_partial_upfront_split_round_trips(price, share, term):
    hours = {"reserved_1y": 8760, "reserved_3y": 26280}[term]
    upfront = round(price * share * hours, 2)
    text = f"{HEAD},payment,upfront_usd\nmyco,dc1,box,L4,1,22,{term},{price!r},partial_upfront,{upfront!r}\n"
    row = parse_offers_csv(text).iloc[0]
    assert row["usd_per_hour"] == price
    assert row["recurring_usd_per_hour"] + row["upfront_usd"] / row["term_hours"] == pytest.approx(price)


def test_fabric_and_zone_kind_from_facts_or_as_given():
    # empty / absent: filled from providers/facts.py (a cloud's instance gets its documented fabric; a provider
    # of the user's own is unknown ""); a named fabric is kept (case-insensitive)
    text = (f"{HEAD},zone,fabric\n{OK},,\n"
            "aws,us-east-1,p5.48xlarge,H100-80GB,8,80,on_demand,55.04,,\n"
            "aws,us-east-1,p5.48xlarge,H100-80GB,8,80,spot,20.0,use1-atl2-az1,\n"
            "myco,dc2,box,A100-80GB,8,80,on_demand,18.5,,InfiniBand\n")
    df = parse_offers_csv(text).set_index(["provider", "region", "zone", "pricing"])
    assert df.loc[("myco", "dc1", "", "on_demand"), "fabric"] == ""
    assert df.loc[("myco", "dc2", "", "on_demand"), "fabric"] == "infiniband"
    assert df.loc[("aws", "us-east-1", "", "on_demand"), "fabric"] == "efa"
    assert df.loc[("aws", "us-east-1", "use1-atl2-az1", "spot"), "zone_kind"] == "local_zone"
    assert df.loc[("aws", "us-east-1", "", "on_demand"), "zone_kind"] == ""


def test_unknown_fabric_or_zone_kind_is_a_one_line_error_naming_the_column():
    e = _err(f"{HEAD},fabric\n{OK},nvlink\n")
    msg = str(e)
    assert "\n" not in msg and "line 2" in msg and "fabric 'nvlink'" in msg and "infiniband" in msg
    e = _err(f"{HEAD},zone_kind\n{OK},edge\n")
    assert "zone_kind 'edge'" in str(e) and "wavelength" in str(e)
