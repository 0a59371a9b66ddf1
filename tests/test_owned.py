"""providers.owned: the owned-commitments file, the months a commitment has left, and the commitments a billing
export shows (the shipped FOCUS fixtures: tests/fixtures/usage/README.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from gpuopt.kernel.errors import InputError
from providers.owned import (OWNED_COLUMNS, OwnedCommitment, load_owned_file, owned_from_usage, write_owned_csv)

FIX = Path(__file__).parent / "fixtures" / "usage"
SPEC = FIX / "focus_spec_v1.2"
HEADER = "provider,region,zone,instance_type,pricing,offering_class,count,usd_per_hour,start,end,commitment_discount_id"
GOOD = [
    "aws,us-east-1,,p4d.24xlarge,reserved_1y,,2,,2026-01-01,2027-01-01,ri-0123456789abcdef0",
    "aws,,,,savings_plan_3y,compute,,12.5,,2028-06-30,arn:aws:savingsplans::111122223333:savingsplan/abc",
    "azure,eastus,,Standard_ND96asr_v4,reserved_3y,,1,,,2027-03-01,/providers/Microsoft.Capacity/reservationOrders/o1",
    "aws,us-east-1,us-east-1a,p5.48xlarge,capacity_block,,4,,2026-02-01,2026-02-15,cb-0aa",
]


def write(tmp_path: Path, lines: list[str], name: str = "owned.csv") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def all_gpu(provider: str, itype: str) -> bool:
    return True  # the FOCUS spec examples name generic VM SKUs (VM_LARGE...)


# ------------------------------------------------------------------------------------------------ the file
def test_good_rows(tmp_path):
    got = load_owned_file(write(tmp_path, [HEADER] + GOOD))
    assert [c.commitment_discount_id for c in got] == ["ri-0123456789abcdef0",
                                                       "arn:aws:savingsplans::111122223333:savingsplan/abc",
                                                       "/providers/Microsoft.Capacity/reservationOrders/o1", "cb-0aa"]
    ri, sp, az, cb = got
    assert (ri.provider, ri.region, ri.instance_type, ri.pricing, ri.count, ri.usd_per_hour) == \
        ("aws", "us-east-1", "p4d.24xlarge", "reserved_1y", 2.0, None)
    assert ri.offering_class == "standard"  # the documented default of an AWS RI (records.default_offering_class)
    assert ri.source == "owned.csv:2" and ri.start == "2026-01-01" and ri.end == "2027-01-01"
    assert sp.is_spend and sp.usd_per_hour == 12.5 and sp.count is None and sp.region == ""
    assert az.offering_class == "" and az.start is None
    assert cb.zone == "us-east-1a" and cb.count == 4


def test_yaml_file_and_round_trip(tmp_path):
    p = write(tmp_path, ["owned:", "  - provider: aws", "    region: us-east-1", "    instance_type: p5.48xlarge",
                         "    pricing: reserved_3y", "    count: 3", "    end: 2028-01-01",
                         "    commitment_discount_id: ri-1"], name="owned.yaml")
    (c,) = load_owned_file(p)
    assert (c.instance_type, c.count, c.end, c.source) == ("p5.48xlarge", 3.0, "2028-01-01", "owned.yaml:2")
    out = tmp_path / "again.csv"
    write_owned_csv([c], out)
    assert out.read_text().splitlines()[0] == ",".join(OWNED_COLUMNS)
    assert load_owned_file(out)[0].count == 3.0


@pytest.mark.parametrize("row, where, accepted", [
    ("oracle,us-east-1,,p4d.24xlarge,reserved_1y,,1,,,2027-01-01,x", "line 2: provider 'oracle'", "aws, azure"),
    ("aws,us-east-1,,p4d.24xlarge,spot,,1,,,2027-01-01,x", "line 2: pricing 'spot' is not a commitment",
     "reserved_1y"),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,compute,1,,,2027-01-01,x", "line 2: offering_class 'compute'",
     "standard, convertible"),
    ("aws,,,,savings_plan_1y,,,5,,2027-01-01,x", "line 2: offering_class is empty", "compute, ec2_instance"),
    ("aws,us-east-1,,,reserved_1y,,1,,,2027-01-01,x", "line 2: instance_type is empty", None),
    ("aws,,,p4d.24xlarge,reserved_1y,,1,,,2027-01-01,x", "line 2: region is empty", None),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,1.5,,,2027-01-01,x", "line 2: count '1.5' is not a whole number",
     "1, 2, 3"),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,-1,,,2027-01-01,x", "line 2: count '-1' is out of range", "> 0"),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,two,,,2027-01-01,x", "line 2: count 'two' is not a number", None),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,,3,,2027-01-01,x", "line 2: usd_per_hour given for a reserved_1y",
     "count"),
    ("aws,,,,savings_plan_1y,compute,2,,,2027-01-01,x", "line 2: count given for a savings plan", "usd_per_hour"),
    ("aws,,,p5,savings_plan_1y,compute,,5,,2027-01-01,x", "line 2: instance_type 'p5' given for a savings plan",
     None),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,1,,,31/12/2027,x", "line 2: end '31/12/2027' is not a date",
     "YYYY-MM-DD"),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,1,,,,x", "line 2: end is empty", None),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,1,,2027-02-01,2027-01-01,x", "line 2: end 2027-01-01 is not after",
     None),
    ("aws,us-east-1,,p4d.24xlarge,reserved_1y,,1,,,2027-01-01,", "line 2: commitment_discount_id is empty", None),
    ("aws,us-east-1,us-west-2a,p4d.24xlarge,reserved_1y,,1,,,2027-01-01,x", "line 2: zone 'us-west-2a'", None),
    ("aws,us-east-1,,p5.48xlarge,capacity_block,,1,,2026-01-01,2026-12-01,x", "longer than 182 days", None),
])
def test_each_error_names_file_line_field(tmp_path, row, where, accepted):
    with pytest.raises(InputError) as e:
        load_owned_file(write(tmp_path, [HEADER, row]))
    msg = str(e.value)
    assert e.value.field == "owned" and msg.startswith("owned: owned.csv ") and where in msg, msg
    if accepted:
        assert accepted in (e.value.accepted or ""), msg
    assert "\n" not in msg


def test_file_level_errors(tmp_path):
    with pytest.raises(InputError, match=r"unknown column 'cout' \(did you mean 'count'\?\)"):
        load_owned_file(write(tmp_path, [HEADER.replace("count", "cout")]))
    with pytest.raises(InputError, match="line 1: missing column.*end"):
        load_owned_file(write(tmp_path, [HEADER.replace(",end", "")]))
    with pytest.raises(InputError, match="line 3: commitment_discount_id 'x' is given twice"):
        load_owned_file(write(tmp_path, [HEADER, GOOD[0][: GOOD[0].rindex(",")] + ",x",
                                         GOOD[0][: GOOD[0].rindex(",")] + ",x"]))
    with pytest.raises(InputError, match="line 2: 3 cells"):
        load_owned_file(write(tmp_path, [HEADER, "aws,us-east-1,x"]))
    with pytest.raises(InputError, match="file not found"):
        load_owned_file(tmp_path / "none.csv")
    with pytest.raises(InputError, match="is empty"):
        load_owned_file(write(tmp_path, [""]))
    assert load_owned_file(write(tmp_path, [HEADER])) == []


def test_known_types_lists_close_matches(tmp_path):
    p = write(tmp_path, [HEADER, "aws,us-east-1,,p4d.24xlarg,reserved_1y,,1,,,2027-01-01,x"])
    with pytest.raises(InputError, match="p4d.24xlarg' is not a aws instance type") as e:
        load_owned_file(p, known_types={"aws": {"p4d.24xlarge", "p5.48xlarge"}})
    assert "p4d.24xlarge" in e.value.accepted
    assert load_owned_file(write(tmp_path, [HEADER] + GOOD[:1]), known_types={"aws": {"p4d.24xlarge"}})


# ------------------------------------------------------------------------------------------------ the months
def test_months_left_and_covers():
    c = OwnedCommitment("aws", "us-east-1", "p4d.24xlarge", "reserved_1y", "ri-1", end="2026-07-01", count=2)
    # 2026-01-01 .. 2026-07-01 = 181 days = 4,344 h = 5.95 months of 730 h
    assert c.months_left(dt.date(2026, 1, 1)) == pytest.approx(4344 / 730)
    assert c.months_left(dt.date(2026, 8, 1)) == 0.0
    # the plan's months are calendar months ("months 1-12 from 2026-01"): a term ending 2026-07-01 (exclusive)
    # covers January to June whole (a first user test found June dropped with months of 730 h)
    assert [c.covers(m, dt.date(2026, 1, 1)) for m in range(7)] == [True] * 6 + [False]
    assert c.month_fraction(5, dt.date(2026, 1, 1)) == pytest.approx(1.0)
    early = OwnedCommitment("aws", "us-east-1", "p4d.24xlarge", "reserved_1y", "ri-2", end="2026-06-16", count=1)
    assert early.month_fraction(5, dt.date(2026, 1, 1)) == pytest.approx(15 / 30)  # half of June's 30 days
    assert [early.covers(m, dt.date(2026, 1, 1)) for m in range(7)] == [True] * 5 + [False, False]
    later = OwnedCommitment("aws", "us-east-1", "p5.48xlarge", "capacity_block", "cb-1", end="2026-03-01T00:00:00Z",
                            count=1, start="2026-02-01")
    assert later.months_left(dt.date(2026, 1, 1)) == pytest.approx(28 * 24 / 730)  # from its start, not the plan's
    assert not later.covers(0, dt.date(2026, 1, 1))
    unknown = OwnedCommitment("aws", "", "", "savings_plan", "arn:x", end=None, note="end of term unknown")
    assert not unknown.term_known
    with pytest.raises(InputError, match="arn:x .*end of its term is unknown"):
        unknown.months_left(dt.date(2026, 1, 1))


# ------------------------------------------------------------------------------------------------ exports
def test_focus_sample_savings_plans_without_end():
    """The real FOCUS 1.0 sample: two AWS Savings Plans (CommitmentDiscountCategory Spend, Type 'Savings Plan')
    discount EC2/ECS usage; FOCUS 1.0 says neither their spend per hour nor the end of their term."""
    got = owned_from_usage(FIX / "focus_sample_1.0.csv")
    assert [c.commitment_discount_id for c in got] == [
        "arn:aws:savingsplans::365499461711:savingsplan/37985e61-4fcb-4023-9dd7-e524c80342a2",
        "arn:aws:savingsplans::961082193871:savingsplan/493f5705-db1c-4867-8e5c-ee9a66fa6d3f"]
    for c in got:
        assert (c.provider, c.pricing, c.region, c.instance_type) == ("aws", "savings_plan", "", "")
        assert c.end is None and c.usd_per_hour is None and not c.term_known
        assert "end of term unknown" in c.note and "usd_per_hour unknown" in c.note
        assert c.source.startswith("focus_sample_1.0.csv (focus-1.0) line ")
    assert got[1].source.endswith("line 25")


def test_focus_spec_one_time_purchase_gives_the_term():
    """FOCUS 1.2 purchase scenario 1: 8,760 USD One-Time over 2023-01-01 .. 2024-01-01 = 1 USD/h for one year."""
    (c,) = owned_from_usage(SPEC / "commitment_discount_scenarios" / "commitment_discount_purchase_scenario_1.csv")
    assert (c.pricing, c.usd_per_hour, c.start, c.end) == ("savings_plan_1y", 1.0, "2023-01-01T00:00:00Z",
                                                            "2024-01-01T00:00:00Z")
    assert c.months_left(dt.date(2023, 7, 2)) == pytest.approx(183 * 24 / 730)


def test_focus_spec_usage_rows_give_the_size():
    """Usage scenario 3: Used 0.75 + Unused 0.25 USD in one hour = 1 USD/h; end not said."""
    (c,) = owned_from_usage(SPEC / "commitment_discount_scenarios" / "commitment_discount_usage_scenario_3.csv")
    assert (c.pricing, c.usd_per_hour, c.end) == ("savings_plan", 1.0, None)
    # a reservation counted in Hour units: 1 instance of VM_LARGE
    (r,) = owned_from_usage(SPEC / "commitment_discount_flexibility" /
                            "zero_percent_utilization_without_commitment_discount_flexibility.csv",
                            is_gpu_instance=all_gpu)
    assert (r.pricing, r.instance_type, r.count, r.end) == ("reserved", "VM_LARGE", 1.0, None)
    # Normalized Hour units are not instances
    (n,) = owned_from_usage(SPEC / "commitment_discount_flexibility" /
                            "one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv",
                            is_gpu_instance=all_gpu)
    assert n.count is None and "Normalized Hour" in n.note


def test_non_gpu_reservations_are_left_out():
    assert owned_from_usage(SPEC / "commitment_discount_flexibility" /
                            "zero_percent_utilization_without_commitment_discount_flexibility.csv") == []


def test_exports_without_commitments():
    for name in ("synthetic_focus_1.0.csv", "synthetic_cur2.csv", "synthetic_azure_cost_details.csv"):
        assert owned_from_usage(FIX / name) == []
    with pytest.raises(InputError, match="hourly warehouse table"):
        owned_from_usage(FIX / "synthetic_hourly.csv")


CUR_HEAD = ("line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,line_item_usage_type,"
            "line_item_usage_amount,line_item_unblended_cost,line_item_currency_code,product_instance_type,"
            "product_region_code,reservation_reservation_a_r_n,reservation_effective_cost,reservation_start_time,"
            "reservation_end_time,reservation_number_of_reservations,pricing_lease_contract_length,"
            "pricing_offering_class,savings_plan_savings_plan_a_r_n,savings_plan_savings_plan_effective_cost,"
            "savings_plan_start_time,savings_plan_end_time,savings_plan_offering_type,savings_plan_purchase_term,"
            "savings_plan_region,savings_plan_total_commitment_to_date")
RI = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-1"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-1"


def test_cur_reservation_and_savings_plan(tmp_path):
    """A small CUR 2.0 export (made here): an RI of 2 p4d.24xlarge with its term, a Compute Savings Plan of
    10 USD/h (its hourly recurring fee line), and an RI of m5.large (not a GPU: left out)."""
    h0, h1 = "2025-09-01T00:00:00Z", "2025-09-01T01:00:00Z"
    ri_cols = f"{RI},20.0,2025-03-01T00:00:00Z,2026-03-01T00:00:00Z"
    lines = [CUR_HEAD,
             f"DiscountedUsage,{h0},{h1},BoxUsage:p4d.24xlarge,1,0,USD,p4d.24xlarge,us-east-1,{ri_cols},,1yr,"
             "standard,,,,,,,,",
             f"RIFee,2025-09-01T00:00:00Z,2025-10-01T00:00:00Z,HeavyUsage:p4d.24xlarge,1440,28800,USD,p4d.24xlarge,"
             f"us-east-1,{ri_cols},2,1yr,standard,,,,,,,,",
             f"SavingsPlanCoveredUsage,{h0},{h1},BoxUsage:g5.xlarge,1,1.0,USD,g5.xlarge,us-east-1,,,,,,,,{SP},0.6,"
             "2024-10-01T00:00:00Z,2027-10-01T00:00:00Z,ComputeSavingsPlans,3yr,,",
             f"SavingsPlanRecurringFee,{h0},{h1},ComputeSP:3yrNoUpfront,1,10,USD,,,,,,,,,,{SP},,"
             "2024-10-01T00:00:00Z,2027-10-01T00:00:00Z,ComputeSavingsPlans,3yr,,10",
             f"DiscountedUsage,{h0},{h1},BoxUsage:m5.large,1,0,USD,m5.large,us-east-1,"
             "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-m5,0.06,2025-01-01T00:00:00Z,"
             "2026-01-01T00:00:00Z,,1yr,standard,,,,,,,,"]
    p = write(tmp_path, lines, name="cur.csv")
    ri, sp = owned_from_usage(p)
    assert (ri.commitment_discount_id, ri.provider, ri.region, ri.instance_type, ri.pricing, ri.offering_class,
            ri.count, ri.start, ri.end) == (RI, "aws", "us-east-1", "p4d.24xlarge", "reserved_1y", "standard", 2.0,
                                            "2025-03-01T00:00:00Z", "2026-03-01T00:00:00Z")
    assert (sp.commitment_discount_id, sp.pricing, sp.offering_class, sp.region, sp.usd_per_hour, sp.end) == \
        (SP, "savings_plan_3y", "compute", "", 10.0, "2027-10-01T00:00:00Z")
    assert ri.source == "cur.csv (aws-cur-2.0) line 2"
    # what it writes is what --owned reads
    out = tmp_path / "owned.csv"
    write_owned_csv([ri, sp], out)
    assert [c.commitment_discount_id for c in load_owned_file(out)] == [RI, SP]


def test_cur_without_end_and_count(tmp_path):
    """An RI whose export leaves out reservation_end_time and the RIFee line: end unknown, count a lower bound;
    the owned file it writes is refused until the end is filled in."""
    lines = [CUR_HEAD] + [f"DiscountedUsage,2025-09-01T0{h}:00:00Z,2025-09-01T0{h + 1}:00:00Z,BoxUsage:p5.48xlarge,"
                          f"{n},0,USD,p5.48xlarge,us-west-2,{RI},90,,,,,,,,,,,,," for h, n in ((0, 3), (1, 2))]
    (c,) = owned_from_usage(write(tmp_path, lines, name="cur.csv"))
    assert (c.pricing, c.count, c.end, c.region) == ("reserved", 3.0, None, "us-west-2")
    assert "end of term unknown" in c.note and "at least 3" in c.note
    out = tmp_path / "owned.csv"
    write_owned_csv([c], out)
    with pytest.raises(InputError, match="line 2: pricing 'reserved': the term length is unknown.*reserved_1y, reserved_3y"):
        load_owned_file(out)


def test_review_owned_out(tmp_path):
    """``gpuopt review --owned-out FILE`` writes the export's commitments as the --owned CSV."""
    from typer.testing import CliRunner

    from gpuopt.cli import app

    out = tmp_path / "owned.csv"
    r = CliRunner().invoke(app, ["review", "--usage", str(FIX / "focus_sample_1.0.csv"), "--format", "json",
                                 "--owned-out", str(out)])
    assert r.exit_code == 0, r.output
    rows = out.read_text().splitlines()
    assert rows[0] == ",".join(OWNED_COLUMNS) and len(rows) == 3
    assert "2 with an unknown end of term" in r.stderr
    with pytest.raises(InputError, match="line 2: pricing 'savings_plan': the term length is unknown.*savings_plan_1y, savings_plan_3y"):
        load_owned_file(out)


def test_owned_outside_the_filters_is_not_used_and_a_later_start_counts_from_its_first_month(tmp_path):
    # found by a breaking test: an owned us-east-1 RI served a --region-group eu plan, and an RI starting in
    # 2027-03 was "not counted" (months were counted from the plan's first only)
    import json as _json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    f = tmp_path / "owl.csv"
    f.write_text("provider,region,instance_type,pricing,count,start,end,commitment_discount_id\n"
                 "aws,us-east-1,g6e.xlarge,reserved_1y,10,2027-03-01,2028-03-01,ri-later\n")
    base = ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500", "--no-explain",
            "--owned", str(f), "--format", "json"]
    d = _json.loads(CliRunner().invoke(app, base).stdout)
    (own,) = [ln for ln in d["lines"] if ln.get("reused")]
    assert (own["start_month"], own["end_month"], own["reused"]) == (3, 12, "ri-later")
    assert own["count"] <= 3  # the instances the plan runs on it, not the commitment's 10
    assert own["term_end"] == "2028-02"  # its own last month (the end, 2028-03-01, is exclusive)
    eu = _json.loads(CliRunner().invoke(app, base + ["--region-group", "eu"]).stdout)
    assert all(ln["region"].startswith("eu-") for ln in eu["lines"]) and not any(ln.get("reused") for ln in eu["lines"])
    assert any("outside this plan's providers, regions" in n for n in eu["notes"])


def _next_month(months: int = 0) -> str:
    """The first day of the plan's first month (optimizer.planning.plan: the month after today) moved by ``months``."""
    import datetime as _dt

    t = _dt.date.today()
    y, m = divmod(t.month + months, 12)  # t.month is 1-based: t.month + 0 is next month's 0-based index
    return f"{t.year + y:04d}-{m + 1:02d}-01"


def _plan_json(args):
    import json as _json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--no-explain", "--provider", "aws", "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return _json.loads(r.stdout)


def test_an_owned_compute_savings_plan_is_counted_as_paid_up_to_its_spend(tmp_path):
    """Issue 26 point 7: an owned AWS Compute Savings Plan of $2/h whose term covers the plan's first 5 months runs
    instances at $0 in those months, up to $2/h of on-demand-rated use (the snapshot has no Savings Plans rate, so
    its use is charged at the On-Demand rate: the least it covers), and the plan buys what does not fit."""
    base = _plan_json([])
    f = tmp_path / "sp.csv"
    f.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,,,savings_plan_1y,compute,2.0,{_next_month(-7)},{_next_month(5)},"
                 "arn:aws:savingsplans::123456789012:savingsplan/sp-abc\n")
    d = _plan_json(["--owned", str(f)])
    arn = "arn:aws:savingsplans::123456789012:savingsplan/sp-abc"
    (own,) = [ln for ln in d["lines"] if ln.get("scope")]
    assert (own["reused"], own["start_month"], own["end_month"], own["total_usd"]) == (arn, 1, 5, 0.0)
    under = [ln for ln in d["lines"] if ln.get("covered_by")]
    assert under and all(ln["total_usd"] == 0.0 and ln["reused"] == arn for ln in under)
    # at most $2/h of on-demand-rated use runs on it in every hour (g6e.xlarge on-demand $1.861/h, us-east-1)
    assert sum(ln["usd_per_hour"] * ln["count"] for ln in under) <= 2.0 + 1e-9
    assert d["total_usd"] < base["total_usd"]
    assert any(n.startswith(f"reuse: owned Compute Savings Plan {arn}") for n in d["notes"])
    assert not any("all regions instances" in n for n in d["notes"])  # its own line runs nothing in a zone
    # the rates its use is counted at: said for a plan it runs (and only then: test below)
    assert any(n.startswith(f"owned {arn}: its use is counted at on-demand rates") for n in d["notes"])


def test_an_owned_ec2_instance_savings_plan_covers_its_family_and_region_only(tmp_path):
    """An EC2 Instance Savings Plan covers one family in one region (AWS Savings Plans User Guide, "Savings Plans
    types"): $10/h for g6e in us-east-1 carries the whole 500 tokens/s service at $0, and a plan kept to Europe
    cannot use it (said so)."""
    f = tmp_path / "sp.csv"
    f.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,us-east-1,g6e,savings_plan_3y,ec2_instance,10,{_next_month(-18)},{_next_month(18)},sp-ec2-g6e\n")
    d = _plan_json(["--owned", str(f)])
    assert d["total_usd"] == 0.0
    assert {ln["instance_type"].split(".")[0] for ln in d["lines"]} <= {"g6e", "g6e family"}
    eu = _plan_json(["--owned", str(f), "--region-group", "eu"])
    assert eu["total_usd"] > 0 and not any(ln.get("reused") for ln in eu["lines"])
    assert any("sp-ec2-g6e" in n and "covers no on-demand offer" in n for n in eu["notes"])


def test_owned_plan_offers_use_a_savings_plan_rate_when_the_price_data_has_one():
    """The rate an owned plan's use is charged against its commitment: the price data's savings-plan rate for the
    type (the highest of its payment options, as the owned plan's payment is not known), else On-Demand."""
    import pandas as pd

    from optimizer.planning.owned import owned_plan_offers

    od = pd.DataFrame([dict(provider="aws", region="us-east-1", zone="", instance_type=t, pricing="on_demand",
                            payment="", offering_class="", usd_per_hour=u, source="x", as_of="2026-11-30")
                       for t, u in (("p5.48xlarge", 98.32), ("g6e.xlarge", 1.861))])
    # made-up rates: this tests the choice of rate, not a price
    sp = pd.DataFrame([dict(provider="aws", region="us-east-1", zone="", instance_type="p5.48xlarge",
                            pricing="savings_plan_1y", payment=p, offering_class="compute", usd_per_hour=u,
                            source="test", as_of="2026-11-30") for p, u in (("no_upfront", 70.0), ("all_upfront", 60.0))])
    c = OwnedCommitment("aws", "", "", "savings_plan_1y", "sp-1", end="2027-06-01", usd_per_hour=50.0,
                        offering_class="compute")
    rows, basis = owned_plan_offers(od, [c], pd.concat([od, sp]))
    got = {r["instance_type"]: (r["pricing"], r["usd_per_hour"], r["source"]) for r in rows}
    assert got == {"p5.48xlarge": ("savings_plan_1y", 70.0, "owned:sp-1"),
                   "g6e.xlarge": ("savings_plan_1y", 1.861, "owned:sp-1")}
    assert "savings-plan rates for 1 offers, on-demand rates for 1" in basis["sp-1"]


@pytest.mark.parametrize("row, match", [
    # a breaker's 4-year "1y" savings plan and a fresh user's 2-year one were accepted
    ("aws,,,,savings_plan_1y,compute,,2,2026-06-01,2030-06-01,x", "line 2: end 2026-06-01 to 2030-06-01 is 1461 days"),
    ("aws,us-east-1,,p4d.24xlarge,reserved_3y,,1,,2026-01-01,2027-01-01,x", "is 365 days, not a reserved_3y term"),
    # Lambda and GCP sell no savings plan (GCP's spend-based commitments are CUDs)
    ("lambda,,,,savings_plan_3y,,,2,,2029-01-01,x", "line 2: provider 'lambda' sells no savings plan"),
])
def test_owned_terms_and_savings_plan_providers_are_checked(tmp_path, row, match):
    with pytest.raises(InputError, match=match):
        load_owned_file(write(tmp_path, [HEADER, row]))


def test_a_term_ending_on_a_months_last_day_covers_that_month():
    """A fresh user's RI ending 2027-12-31 (and a bill's 2027-12-31T23:59:59Z) was not counted for December."""
    for end in ("2027-12-31", "2027-12-31T23:59:59Z", "2028-01-01"):
        c = OwnedCommitment("aws", "us-east-1", "p4d.24xlarge", "reserved_1y", "ri", end=end, count=1)
        assert c.covers(11, dt.date(2027, 1, 1)), end
    early = OwnedCommitment("aws", "us-east-1", "p4d.24xlarge", "reserved_1y", "ri", end="2027-12-20", count=1)
    assert not early.covers(11, dt.date(2027, 1, 1))


def test_a_savings_plan_no_replica_uses_names_the_training_hours_it_covers(tmp_path):
    """A training job's on-demand hours on AWS fall under an owned Compute Savings Plan when billed (AWS Savings Plans
    User Guide, "How Savings Plans apply to your AWS usage"); the model plans a job's hours as an average and counts
    them at on-demand, so the note says the cost is on the high side rather than "not used"."""
    f = tmp_path / "sp.csv"
    f.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,,,savings_plan_1y,compute,2.0,{_next_month(-7)},{_next_month(5)},sp-train\n")
    d = _plan_json(["--owned", str(f), "--task", "train", "--tokens", "2e10", "--pricing", "on_demand"])
    base = _plan_json(["--task", "train", "--tokens", "2e10", "--pricing", "on_demand"])
    assert d["total_usd"] == base["total_usd"] > 0
    (note,) = [n for n in d["notes"] if n.startswith("owned sp-train") and "training jobs' on-demand hours" in n]
    types = {ln["instance_type"] for ln in d["lines"]}
    assert any(t in note for t in types) and "up to 2 USD of its use is already paid" in note
    # a savings plan of another provider covers none of it: "not used"
    g = tmp_path / "az.csv"
    g.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"azure,,,savings_plan_1y,,2.0,{_next_month(-7)},{_next_month(5)},sp-az\n")
    az = _plan_json(["--owned", str(g), "--task", "train", "--tokens", "2e10", "--pricing", "on_demand"])
    assert any(n.startswith("owned sp-az") and "covers no on-demand offer" in n for n in az["notes"])
    assert not any(" its use is counted " in n for n in d["notes"] + az["notes"])  # no replica runs on either
    assert not any("training jobs' on-demand hours" in n for n in az["notes"])


def test_owned_commitments_no_candidate_uses_leave_the_problem_pruned():
    """An owned commitment that no candidate runs on (here: none given to the candidates) must not turn dominance
    pruning off (FleetProblem.capped): the example plan with an AWS savings plan it could not use was planned
    unpruned, and its first leaf MILP (84,000 columns against 3,600) ran past 13 minutes."""
    from optimizer.planning.problem_build import make_problem
    from optimizer.planning.problem import FleetWorkload
    from optimizer.sizing import Workload
    from pricing_cache.store import load_offers

    offers, _ = load_offers()
    offers = offers[(offers["provider"] == "aws") & (offers["pricing"] == "on_demand")].head(50)
    assert len(offers)
    sp = OwnedCommitment("aws", "", "", "savings_plan_1y", "sp-x", usd_per_hour=2.0, offering_class="compute",
                         end=dt.date(2030, 1, 1))
    from gpuopt.api import _model_spec
    from optimizer.planning.demand import inline_profile

    w = FleetWorkload(name="chat", workload=Workload(model=_model_spec("llama-2-7b", None), task="serve",
                                                     tokens_per_second=100.0), min_replicas=1)
    p = make_problem([w], {"chat": inline_profile([1.0])}, offers, horizon_months=1)
    assert p.cands["chat"]
    assert not p.capped
    q = p.replace(owned={"sp-x": sp})
    assert not q.owned_in_use() and not q.capped


def test_a_large_plan_with_owned_commitments_is_made_without_them_then_over_the_offers_it_used(tmp_path, monkeypatch):
    """optimizer.planning.plan._solve_with_owned (plans above OWNED_FULL_MILP_MAX candidate-blocks): the plan made
    without the owned savings plan, then again with it over the instance types that plan used. On this small plan
    the two-step answer is the full MILP's (the owned plan carries the same g6e use), and the note says how it was
    made."""
    import optimizer.planning.plan as plan_mod

    f = tmp_path / "sp.csv"
    f.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,,,savings_plan_1y,compute,2.0,{_next_month(-7)},{_next_month(5)},sp-two-step\n")
    full = _plan_json(["--owned", str(f)])
    monkeypatch.setattr(plan_mod, "OWNED_FULL_MILP_MAX", 0)
    two = _plan_json(["--owned", str(f)])
    assert any(n.startswith("owned commitments: the plan was first made without them") for n in two["notes"])
    assert not any("owned commitments: the plan was first made" in n for n in full["notes"])
    assert two["total_usd"] == pytest.approx(full["total_usd"], abs=0.01)
    assert two["total_usd"] < _plan_json([])["total_usd"]
    assert any(ln.get("reused") == "sp-two-step" for ln in two["lines"])


def test_what_is_owned_is_not_a_purchase_option_pricing_can_rule_out(tmp_path):
    """A breaker's finds: --pricing on_demand dropped an owned Compute Savings Plan ($41,417.28 where it carries
    $2/h of the plan's on-demand g6e use in months 1-5); a second owned plan nothing ran on got a "reused" line at
    $0/h beside its "not used" note; an EC2 Instance Savings Plan written "G6E" was silently unused."""
    f = tmp_path / "sp.csv"
    f.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,,,savings_plan_1y,compute,2.0,{_next_month(-7)},{_next_month(5)},sp-od\n")
    od = _plan_json(["--pricing", "on_demand"])
    own = _plan_json(["--pricing", "on_demand", "--owned", str(f)])
    assert any(ln.get("reused") == "sp-od" for ln in own["lines"])
    # $2/h of on-demand-rated use for 5 months of 730 h is paid already: the plan is that much cheaper
    assert own["total_usd"] == pytest.approx(od["total_usd"] - 2.0 * 730 * 5, abs=0.01)
    g = tmp_path / "two.csv"
    g.write_text("provider,region,instance_type,pricing,offering_class,usd_per_hour,start,end,commitment_discount_id\n"
                 f"aws,us-east-1,G6E,savings_plan_1y,ec2_instance,10,{_next_month(-7)},{_next_month(5)},big\n"
                 f"aws,,,savings_plan_1y,compute,3,{_next_month(-7)},{_next_month(5)},idle\n")
    d = _plan_json(["--owned", str(g)])
    assert any(ln.get("reused") == "big" for ln in d["lines"])  # "G6E" covers the g6e family
    assert not any(ln.get("reused") == "idle" for ln in d["lines"])
    assert any(n.startswith("owned idle") and "not used" in n for n in d["notes"])
    assert not any("reuse: owned Compute Savings Plan idle" in n for n in d["notes"])
