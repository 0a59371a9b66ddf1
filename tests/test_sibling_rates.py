"""Issue 31, point 3: estimated commitment rates never undercut quotes.

The case (issue 31): Azure's confidential-computing Standard_NCC40ads_H100_v5 (eastus2, $6.98/h on demand, SkyPilot
Azure catalog v6) had no reservation quote, and the snapshot's rule priced it at the median ratio of the 49 quoted
Azure Hopper rows, 0.64 (1y) / 0.44 (3y): $4.4672 / $3.0712 an hour. The identical non-confidential
Standard_NC40ads_H100_v5 is quoted at 0.75 / 0.55 (github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76,
2025-06-21: eastus $5.235046 / $3.839003 of $6.98, the median of its 11 quoted rows), so the confidential size won
plans 17-25 % below what Azure charges. Fixed twice:

* in the data: ``providers.reserved_rules.derive_by_ratio`` takes a sibling's quoted ratio (same family and GPU,
  confidential or not) before the generation's median; the rows below are the shipped snapshot's;
* at planning time: ``optimizer.planning.rate_guards.cap_estimated_commitments`` raises an estimated commitment rate
  to the lowest quoted ratio of a same-provider, same-GPU, same-count row (any catalog), and the plan says so.

The "before" rows of the guard's tests are the shipped snapshot's rows as they were before the fix (commit 6a15b65,
pricing_cache/data/offers.csv), quoted verbatim in :data:`PRE_FIX_ROWS`.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from gpuopt import api
from gpuopt.cli import app
from optimizer.planning.rate_guards import CAP_MARK, cap_estimated_commitments, capped_notes
from pricing_cache.store import load_offers
from providers.reserved_rules import derive_by_ratio, instance_family, quoted_ratios, sibling_ratios

NCC, NC = "Standard_NCC40ads_H100_v5", "Standard_NC40ads_H100_v5"
OD_EASTUS2 = 6.98  # both sizes' on-demand rate in eastus2 (SkyPilot Azure catalog v6)

#: pricing_cache/data/offers.csv at commit 6a15b65 (before issue 31): the NCC rows by the Hopper median, the NC40ads
#: quotes of eastus (Jumbo2020/gpu_prices, 2025-06-21).
PRE_FIX_ROWS = """\
provider,region,zone,instance_type,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,interconnect,fabric,zone_kind,tier,pricing,payment,offering_class,upfront_usd,recurring_usd_per_hour,usd_per_hour,term_hours,currency,source,as_of
azure,eastus,,Standard_NC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,on_demand,,,0,6.98,6.98,0,USD,github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76,2025-06-21
azure,eastus,,Standard_NC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_1y,all_upfront,,45859,0,5.235046,8760,USD,github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76,2025-06-21
azure,eastus,,Standard_NC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_1y,no_upfront,,0,5.235046,5.235046,8760,USD,github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76; monthly payment at the upfront price,2025-06-21
azure,eastus,,Standard_NC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_3y,all_upfront,,100889,0,3.839003,26280,USD,github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76,2025-06-21
azure,eastus,,Standard_NC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_3y,no_upfront,,0,3.839003,3.839003,26280,USD,github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76; monthly payment at the upfront price,2025-06-21
azure,eastus2,,Standard_NCC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,on_demand,,,0,6.98,6.98,0,USD,skypilot-catalog:catalogs/v6/azure/vms.csv@098741e7,unknown
azure,eastus2,,Standard_NCC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_1y,all_upfront,,39132.67,0,4.4672,8760,USD,rule:azure-1y-all_upfront:0.6400 = median of 49 quoted generation Hopper rows,unknown
azure,eastus2,,Standard_NCC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_1y,no_upfront,,0,4.4672,4.4672,8760,USD,rule:azure-1y-no_upfront:0.6400 = median of 49 quoted generation Hopper rows,unknown
azure,eastus2,,Standard_NCC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_3y,all_upfront,,80711.14,0,3.0712,26280,USD,rule:azure-3y-all_upfront:0.4400 = median of 49 quoted generation Hopper rows,unknown
azure,eastus2,,Standard_NCC40ads_H100_v5,H100-NVL-94GB,1,94,40,320,pcie,ethernet,,hyperscaler,reserved_3y,no_upfront,,0,3.0712,3.0712,26280,USD,rule:azure-3y-no_upfront:0.4400 = median of 49 quoted generation Hopper rows,unknown
"""

#: The request of the issue's case, scaled to one workload: Llama-2-13B at 2,000 tokens/s on Azure H100 NVL.
REQUEST = dict(model="meta-llama/Llama-2-13b-hf", tokens_per_second=2000, providers=["azure"],
               gpus=["H100-NVL-94GB"], explain=False)


@pytest.fixture(scope="module")
def shipped():
    df, _ = load_offers(use_cache=False)
    return df


def _row(df, **kw):
    sel = df
    for k, v in kw.items():
        sel = sel[sel[k].astype(str) == str(v)]
    assert len(sel) == 1, (kw, len(sel))
    return sel.iloc[0]


# ------------------------------------------------------------------------------------------- the family names
@pytest.mark.parametrize("provider, itype, family", [
    ("azure", NCC, "NC_H100_v5"), ("azure", NC, "NC_H100_v5"), ("azure", "Standard_NC80adis_H100_v5", "NC_H100_v5"),
    ("azure", "Standard_NC24ads_A100_v4", "NC_A100_v4"), ("azure", "Standard_ND96isr_H100_v5", "ND_H100_v5"),
    ("azure", "Standard_NC24rs_v3", "NC_v3"), ("azure", "Standard_NC12_Promo", "NC_Promo"),
    ("aws", "g6f.2xlarge", "g6"), ("aws", "g6.xlarge", "g6"), ("aws", "p5en.48xlarge", "p5"),
    ("aws", "p3dn.24xlarge", "p3"), ("gcp", "a3-edgegpu-8g-nolssd", "a3"), ("gcp", "a3-highgpu-8g", "a3"),
    ("lambda", "gpu_1x_h100_pcie", ""), ("azure", "not-a-size", ""),
])
def test_instance_family_from_the_providers_naming(provider, itype, family):
    assert instance_family(provider, itype) == family


# ------------------------------------------------------------------------ the shipped snapshot: derived by sibling
def test_azure_confidential_h100_takes_its_non_confidential_siblings_quoted_ratio(shipped):
    # the sibling's quotes: 11 regions, median 0.75 (1y) / 0.55 (3y) of its own on-demand rate
    nc = shipped[(shipped["instance_type"] == NC) & ~shipped["source"].astype(str).str.startswith("rule:")]
    od = nc[nc["pricing"] == "on_demand"].set_index("region")["usd_per_hour"]
    for pricing, ratio in (("reserved_1y", 0.75), ("reserved_3y", 0.55)):
        q = nc[(nc["pricing"] == pricing) & (nc["payment"] == "all_upfront")]
        assert len(q) == 11
        assert (q["usd_per_hour"].to_numpy() / od[q["region"]].to_numpy()).round(4).tolist().count(ratio) >= 6
    # the confidential size in eastus2: 6.98 x 0.75 = 5.235 and 6.98 x 0.55 = 3.839 (were 4.4672 / 3.0712)
    for pricing, payment, usd, upfront in (("reserved_1y", "all_upfront", 5.235, 45858.6),
                                           ("reserved_1y", "no_upfront", 5.235, 0.0),
                                           ("reserved_3y", "all_upfront", 3.839, 100888.92),
                                           ("reserved_3y", "no_upfront", 3.839, 0.0)):
        r = _row(shipped, provider="azure", region="eastus2", instance_type=NCC, pricing=pricing, payment=payment)
        assert r["usd_per_hour"] == pytest.approx(usd, abs=1e-9)
        assert float(r["upfront_usd"]) == pytest.approx(upfront, abs=0.01)
        term = "1y" if pricing == "reserved_1y" else "3y"
        ratio = "0.7500" if term == "1y" else "0.5500"
        assert r["source"] == (f"rule:azure-{term}-{payment}:{ratio} from sibling {NC} quoted ratio "
                               f"(median of 11 quoted rows)")
    # the same as the sibling's own estimate in that region (a rule from its 11 quotes)
    sib = _row(shipped, provider="azure", region="eastus2", instance_type=NC, pricing="reserved_1y",
               payment="all_upfront")
    assert sib["usd_per_hour"] == 5.235


def test_the_rule_takes_siblings_on_every_provider(shipped):
    # GCP: A3 Edge has no CUD quote; its sibling a3-highgpu-8g (H100, 8 GPUs) is quoted in 40 regions
    for itype in ("a3-edgegpu-8g", "a3-edgegpu-8g-nolssd"):
        r = _row(shipped, provider="gcp", region="us-east4", instance_type=itype, pricing="reserved_1y")
        od = _row(shipped, provider="gcp", region="us-east4", instance_type=itype, pricing="on_demand")
        assert r["source"] == ("rule:gcp-1y-no_upfront:0.6937 from sibling a3-highgpu-8g quoted ratio "
                               "(median of 40 quoted rows)")
        assert r["usd_per_hour"] == pytest.approx(round(od["usd_per_hour"] * 0.6937, 6))
    # AWS: g6f (a fraction of an L4) from g6.xlarge, the sibling of the nearest GPU count (1)
    r = _row(shipped, provider="aws", region="us-east-1", instance_type="g6f.4xlarge", pricing="reserved_1y",
             payment="no_upfront")
    assert r["source"] == "rule:aws-1y-no_upfront:0.6510 from sibling g6.xlarge quoted ratio (median of 14 quoted rows)"
    assert r["usd_per_hour"] == 0.61845  # on-demand 0.95 x 0.651
    # a size with no quoted sibling keeps the generation's median (GCP A2 Ultra: no A100-80GB quote on GCP)
    a2u = _row(shipped, provider="gcp", region="us-central1", instance_type="a2-ultragpu-1g", pricing="reserved_1y")
    assert "quoted generation Ampere rows" in a2u["source"]


def test_no_estimate_in_the_shipped_snapshot_undercuts_a_quote(shipped):
    # every estimated reservation is at or above the lowest quoted ratio of its provider, GPU, count, term, payment
    # and class: the planning-time guard finds nothing to raise
    out, n = cap_estimated_commitments(shipped)
    assert n == 0 and out is shipped


def test_an_import_derives_from_the_sibling_too(shipped):
    # pricing_cache.importing._skypilot: a SkyPilot file's reservations by the shipped quotes' ratios
    od = shipped[(shipped["instance_type"] == NCC) & (shipped["pricing"] == "on_demand")]
    ratios = quoted_ratios(shipped[(shipped["provider"] == "azure").to_numpy()])
    got = derive_by_ratio(od, ratios).set_index(["pricing", "payment"])["usd_per_hour"].to_dict()
    assert got == {("reserved_1y", "all_upfront"): 5.235, ("reserved_1y", "no_upfront"): 5.235,
                   ("reserved_3y", "all_upfront"): 3.839, ("reserved_3y", "no_upfront"): 3.839}
    levels: dict = {}
    for k, r in ratios.items():
        levels.setdefault((k[0], k[1], k[2]), {})[(k[3], k[4], k[5])] = r
    sib = sibling_ratios("azure", NCC, "H100-NVL-94GB", 1.0, levels)
    assert {r.over for r in sib.values()} == {NC}  # 1 GPU like NCC40ads, not the 2-GPU NC80adis
    assert sibling_ratios("azure", NCC, "H100-80GB", 1.0, levels) == {}  # another GPU is no sibling


# --------------------------------------------------------------------------------------------- plans, end to end
@pytest.mark.parametrize("pricing, months, rate, before", [
    ("reserved_1y", 12, 5.235, 117398.01),  # before: 3 x 4.4672 x 8,760 (the 0.64 estimate)
    ("reserved_3y", 36, 3.839, 242133.41),  # before: 3 x 3.0712 x 26,280 (the 0.44 estimate)
])
def test_the_azure_h100_plan_is_priced_at_the_quoted_ratio(pricing, months, rate, before):
    res = api.recommend(**REQUEST, pricing=[pricing], horizon_months=months)
    p = res.plan
    assert p.status == "optimal" and len(p.lines) == 1
    ln = p.lines[0]
    # NCC40ads and NC40ads in eastus2 now cost the same (5.235 / 3.839): either is the answer, at the quoted ratio
    assert ln.instance_type in (NC, NCC) and ln.region == "eastus2" and ln.usd_per_hour == rate
    assert p.total_usd == pytest.approx(round(ln.count * rate * months * 730, 2), abs=0.01)
    # 2026-12-07: 3 instances, $137,575.80 (1y) and $302,666.76 (3y): 17 % and 25 % above the estimate's plan
    assert p.total_usd > before * 1.17


def test_the_budget_message_needs_the_quoted_figure():
    # "needs at least" of an infeasible budget: $302,666.76 over 36 months (was $242,133.41: $60,533 low)
    res = api.recommend(**REQUEST, pricing=["reserved_3y"], horizon_months=36, budget_total=100000)
    reason = res.plan.reason
    assert res.plan.status == "infeasible" and reason["kind"] == "budget"
    ok = api.recommend(**REQUEST, pricing=["reserved_3y"], horizon_months=36)
    assert reason["total_needed_usd"] == pytest.approx(ok.plan.total_usd, abs=0.01)
    assert reason["total_needed_usd"] >= 3 * 3.839 * 26280 - 0.01


# ------------------------------------------------------------------------------ the guard, on the pre-fix rows
@pytest.fixture()
def pre_fix(tmp_path):
    path = tmp_path / "azure_pre_fix.csv"
    path.write_text(PRE_FIX_ROWS)
    return path


def test_the_guard_raises_the_pre_fix_estimates_to_the_quote():
    df = pd.read_csv(__import__("io").StringIO(PRE_FIX_ROWS), keep_default_na=False)
    out, n = cap_estimated_commitments(df)
    assert n == 4
    q1, q3 = 5.235046 / OD_EASTUS2, 3.839003 / OD_EASTUS2  # the eastus quotes' ratios, 0.750007 / 0.550001
    ncc = out[(out["instance_type"] == NCC) & (out["pricing"] != "on_demand")].set_index(["pricing", "payment"])
    assert ncc.loc[("reserved_1y", "all_upfront"), "usd_per_hour"] == pytest.approx(OD_EASTUS2 * q1, abs=1e-6)
    assert ncc.loc[("reserved_3y", "no_upfront"), "usd_per_hour"] == pytest.approx(OD_EASTUS2 * q3, abs=1e-6)
    # the payment's split is kept: all upfront = rate x term hours, paid upfront; no upfront = all recurring
    assert ncc.loc[("reserved_1y", "all_upfront"), "upfront_usd"] == pytest.approx(5.235046 * 8760, abs=0.02)
    assert ncc.loc[("reserved_1y", "all_upfront"), "recurring_usd_per_hour"] == 0
    assert ncc.loc[("reserved_3y", "no_upfront"), "recurring_usd_per_hour"] == pytest.approx(3.839003, abs=1e-6)
    src = ncc.loc[("reserved_1y", "all_upfront"), "source"]
    assert src == ("rule:azure-1y-all_upfront:0.6400 = median of 49 quoted generation Hopper rows"
                   f"{CAP_MARK}0.7500 x on-demand (estimated 0.6400): the lowest quoted ratio of a same-GPU, "
                   f"same-count row, {NC} azure eastus")
    # quoted rows untouched; a second pass raises nothing
    assert out[out["instance_type"] == NC].equals(df[df["instance_type"] == NC])
    assert cap_estimated_commitments(out)[1] == 0


def test_a_plan_on_the_pre_fix_rows_buys_at_the_quote_and_says_so(pre_fix):
    # eastus2 only: the quote is in eastus, outside the plan's region, and still bounds the estimate (the API
    # passes the whole catalog); before the guard: 3 x 4.4672 x 8,760 = $117,398.01
    res = api.recommend(**REQUEST, pricing=["reserved_1y"], regions=["eastus2"], catalog=str(pre_fix))
    p = res.plan
    (ln,) = p.lines
    assert (ln.instance_type, ln.region, ln.usd_per_hour) == (NCC, "eastus2", 5.235046)
    # (an all-upfront term's total is its upfront, rounded to cents: 3 x 45,859.00 = $137,577.00)
    assert p.total_usd == pytest.approx(ln.count * 5.235046 * 8760, abs=0.05) and p.total_usd > 117398.01
    note = next(n for n in p.notes if "undercut a quote" in n)
    assert note.startswith(f"{NCC} reserved_1y {ln.payment} (azure eastus2) is an estimate (rule:azure-1y-"
                           f"{ln.payment}) that undercut a quote: planned at 0.7500 x on-demand (estimated 0.6400): "
                           f"the lowest quoted ratio of a same-GPU, same-count row, {NC} azure eastus")


def test_the_cli_json_carries_the_capped_rate_and_its_note(pre_fix):
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-13b-hf", "--tokens-per-second", "2000",
                                 "--provider", "azure", "--region", "eastus2", "--pricing", "reserved_3y",
                                 "--horizon", "36", "--catalog", str(pre_fix), "--no-explain", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (ln,) = d["lines"]
    assert ln["instance_type"] == NCC and ln["usd_per_hour"] == pytest.approx(3.839003, abs=1e-6)
    assert CAP_MARK.strip("; ") in ln["source"] and ln["estimated"] is True
    assert any("undercut a quote: planned at 0.5500 x on-demand (estimated 0.4400)" in n for n in d["notes"])


def test_capped_notes_say_nothing_of_uncapped_lines():
    class L:  # a plan line's fields capped_notes reads
        provider, region, instance_type, pricing, payment = "azure", "eastus", NC, "reserved_1y", "all_upfront"
        source = "github.com/Jumbo2020/gpu_prices azure_gpu_prices.json@54424a76"
    assert capped_notes([L()]) == []


def test_an_estimate_paid_otherwise_does_not_undercut_the_best_quote_of_its_term():
    # a breaker's case: a user catalog's estimated no-upfront row at 3.00 $/h (0.43 x on-demand) beside only an
    # all-upfront quote at 5.235 (0.75) of the same GPU and count passed the guard, which compared one payment option
    # with the same one; the best quote of the term now bounds every estimate of it
    import io

    import pandas as pd

    rows = [ln for ln in PRE_FIX_ROWS.splitlines()
            if ",no_upfront," not in ln or "Standard_NCC40ads" in ln]  # the NC quotes: all upfront only
    df = pd.read_csv(io.StringIO("\n".join(rows) + "\n"))
    sel = (df["instance_type"] == NCC) & (df["pricing"] == "reserved_1y") & (df["payment"] == "no_upfront")
    df.loc[sel, ["usd_per_hour", "recurring_usd_per_hour"]] = 3.00
    df.loc[sel, "source"] = "rule:custom-estimate"
    out, n = cap_estimated_commitments(df)
    assert n >= 1
    got = out[sel]
    assert float(got["usd_per_hour"].iloc[0]) == pytest.approx(6.98 * 5.235046 / 6.98, rel=1e-6)
    assert "the lowest quoted ratio of a same-GPU, same-count row, Standard_NC40ads_H100_v5" in got["source"].iloc[0]
