"""Issue 31, point 4: a purchase option the user asked for and the data cannot price is said in the plan.

The case (issue 31): ``--pricing savings_plan_1y`` with no savings-plan rate in the data answered with reservations
and never said that no savings-plan rate was available. The shipped snapshot holds none: no stored source has AWS or
Azure savings-plan rates for GPU instances (pricing_cache/data/inputs/PRICES_README.md (d)); they come from
``gpuopt prices refresh --savings-plans`` (AWS) and the Azure refresh. Every option is checked the same way
(optimizer.planning.rate_guards.unpriced_options) against the offers of the request's scope (its providers,
regions and GPUs), and the note goes into the plan's notes and its warnings (stderr for tables, ``prices.warnings``
in the JSON).

Rows of the shipped snapshot the cases rest on: AWS has reserved_1y rows (p5.4xlarge us-east-1 quoted at $5.056849
all upfront) and no savings_plan_* rows; capacity blocks are AWS rows only (p4d, p4de, p5, p5e, p5en, p6-b200);
no flex_start row at all; Lambda has on-demand rows only; GCP's H200 (a3-ultragpu) has spot rows only.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpuopt import api
from gpuopt.cli import app
from optimizer.planning.rate_guards import HOW_TO_GET, request_scope, unpriced_options
from pricing_cache.store import load_offers

SERVE = dict(model="meta-llama/Llama-2-13b-hf", tokens_per_second=2000, explain=False)
SP_NOTE = ("no 1-year savings-plan rates in the data for --provider aws: --pricing savings_plan_1y buys nothing in "
           "this plan; `gpuopt prices refresh --savings-plans` fetches AWS Savings Plans rates")


@pytest.fixture(scope="module")
def shipped():
    df, _ = load_offers(use_cache=False)
    return df


def test_savings_plan_asked_with_reservations_is_said_not_silently_dropped():
    res = api.recommend(**SERVE, providers=["aws"], pricing=["savings_plan_1y", "reserved_1y"])
    p = res.plan
    # the plan is the reservation (the only option priced), and it says the savings plan could not be priced
    assert p.status == "optimal" and {ln.pricing for ln in p.lines} == {"reserved_1y"}
    assert [ln.instance_type for ln in p.lines] == ["p5.4xlarge"] and p.lines[0].usd_per_hour == 5.056849
    note = next(n for n in p.notes if n.startswith("no 1-year savings-plan"))
    assert note.startswith(SP_NOTE) and "PRICES_README.md (d)" in note
    assert note in res.prices["warnings"]
    assert not any("reservation rates" in n for n in p.notes)  # reserved_1y is priced: nothing said of it


def test_savings_plan_alone_is_said_beside_the_no_plan_reason():
    res = api.recommend(**SERVE, providers=["aws"], pricing=["savings_plan_1y"])
    assert res.plan.status == "infeasible"
    assert "is sold as savings_plan_1y" in res.plan.reason["message"]
    assert any(n.startswith(SP_NOTE) for n in res.plan.notes)
    assert any(w.startswith(SP_NOTE) for w in res.prices["warnings"])


def test_the_cli_says_it_on_stderr_for_a_table_and_in_the_json():
    args = ["recommend", "--model", "meta-llama/Llama-2-13b-hf", "--tokens-per-second", "2000", "--provider", "aws",
            "--pricing", "savings_plan_1y", "--pricing", "reserved_1y", "--no-explain"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert SP_NOTE in " ".join(r.stderr.split())
    r = CliRunner().invoke(app, args + ["--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert any(w.startswith(SP_NOTE) for w in d["prices"]["warnings"])
    assert any(n.startswith(SP_NOTE) for n in d["notes"])


@pytest.mark.parametrize("filters, option, words, how", [
    # Azure's savings plan for compute: none in the shipped data (the Retail Prices dump had no savingsPlan field)
    ({"providers": ["azure"]}, "savings_plan_3y", "3-year savings-plan", "--savings-plans"),
    # capacity blocks are AWS's only
    ({"providers": ["azure"]}, "capacity_block", "capacity-block", "sold by AWS only"),
    # Flex-start: no whole-instance row in the shipped data at all
    ({}, "flex_start", "Flex-start", "sold by GCP only"),
    # Lambda sells reserved clusters by quote only
    ({"providers": ["lambda"]}, "reserved_1y", "1-year reservation", "not at a published price by Lambda"),
    ({"providers": ["lambda"]}, "spot", "spot", "fetches spot rates"),
    # GCP's H200 (A3 Ultra) is sold as Spot only (providers/validate.NOT_SOLD_ON_DEMAND)
    ({"providers": ["gcp"], "gpus": ["H200-141GB"]}, "on_demand", "on-demand", "fetches on-demand rates"),
])
def test_every_option_the_scope_cannot_price_is_named(shipped, filters, option, words, how):
    from types import SimpleNamespace

    plan = SimpleNamespace(providers=filters.get("providers", []), regions=[], region_group=[],
                           gpus=filters.get("gpus", []), exclude_gpus=[], include_local_zones=False, pricing=[option])
    scoped = shipped
    if plan.providers:
        scoped = scoped[scoped["provider"].isin(plan.providers)]
    if plan.gpus:
        scoped = scoped[scoped["gpu_model"].isin(plan.gpus)]
    assert len(scoped) and option not in set(scoped["pricing"].astype(str))
    scope = request_scope(plan)
    (note,) = unpriced_options([option], scoped, scope)
    assert note.startswith(f"no {words} rates in the data" + (f" for {scope}" if scope else "")
                           + f": --pricing {option} buys nothing in this plan; ")
    assert how in note and note.endswith(HOW_TO_GET[option])


def test_an_option_with_rows_in_scope_or_not_asked_is_not_mentioned(shipped):
    aws = shipped[shipped["provider"] == "aws"]
    assert unpriced_options(["on_demand", "reserved_1y", "reserved_3y", "capacity_block", "spot"], aws) == []
    assert unpriced_options([], aws) == []  # nothing asked: every option, nothing to say
    # two options asked, one priced: one note, in the order asked, each option once
    notes = unpriced_options(["savings_plan_1y", "reserved_1y", "savings_plan_1y", "savings_plan_3y"], aws)
    assert [n.split(" rates", 1)[0] for n in notes] == ["no 1-year savings-plan", "no 3-year savings-plan"]


def test_a_plan_in_scope_of_another_provider_names_the_option_end_to_end():
    # lambda: on-demand only; asking for reservations there plans nothing and says why, with the note
    res = api.recommend(**SERVE, providers=["lambda"], pricing=["reserved_3y"])
    assert res.plan.status == "infeasible"
    assert any(n.startswith("no 3-year reservation rates in the data for --provider lambda: --pricing reserved_3y "
                            "buys nothing in this plan; reservations are sold by AWS, Azure and GCP")
               for n in res.plan.notes)
    # the default (no --pricing) says nothing of the options the data lacks
    res = api.recommend(**SERVE, providers=["lambda"])
    assert not any(n.startswith("no ") and "rates in the data" in n for n in res.plan.notes)
