"""The offer tier (schema 4): hyperscaler, neocloud or marketplace, from each provider's own words.

Sources (providers/facts.py, TIER_FACTS and RUNPOD_TIER_FACTS, quoted there):
* RunPod FAQ (https://docs.runpod.io/docs/faq): "Secure Cloud runs in T4 data centers by our trusted partners";
  "Community Cloud ... peer-to-peer GPU computing that connects individual compute providers to compute consumers.
  Our Community Cloud hosts are invite-only and vetted by us." Glossary: Secure Cloud "run[s] in T3/T4 data centers".
* Vast.ai Concepts (https://docs.vast.ai/guides/concepts): "a marketplace that connects hosts (people and
  datacenters with GPUs to rent out) with renters".
* CoreWeave, What CoreWeave manages: "CoreWeave operates the physical infrastructure".
* Lambda (its own On-Demand Cloud, docs.lambda.ai billing page) and Nebius (its own Nebius AI Cloud servers and
  regions): single-seller clouds, no third-party hosts.
* AWS, Azure, GCP: hyperscalers.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import ADDED_IN_V4, OFFER_COLUMNS, TIERS, is_marketplace, tier_label
from pricing_cache import build_snapshot
from pricing_cache.store import load_offers
from providers.facts import TIER_FACTS, tier_fact, tier_of
from providers.offers_csv import parse_offers_csv
from providers.validate import validate_offers

DATA = Path(build_snapshot.__file__).resolve().parent / "data"

HEADER = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour"


@pytest.fixture(scope="module")
def shipped():
    df, _ = load_offers(use_cache=False)
    return df


def _tiers(df, provider: str) -> dict[str, str]:
    rows = df[df["provider"] == provider].drop_duplicates("instance_type")
    return dict(zip(rows["instance_type"], rows["tier"]))


# ------------------------------------------------------------------------------ the shipped rows, per source
def test_every_shipped_row_has_its_providers_documented_tier(shipped):
    assert "tier" in shipped.columns and list(shipped.columns) == list(OFFER_COLUMNS)
    by = shipped.groupby(["provider", "tier"], observed=True).size()
    assert {k: int(v) for k, v in by.items() if v} == {
        # SkyPilot catalogs (+ AWS/Azure/GCP price files): hyperscalers
        ("aws", "hyperscaler"): 2644, ("azure", "hyperscaler"): 1343, ("gcp", "hyperscaler"): 3127,
        # Lambda (SkyPilot catalog + lambda.ai prices), CoreWeave and Nebius pages: neoclouds
        ("lambda", "neocloud"): 20, ("coreweave", "neocloud"): 12, ("nebius", "neocloud"): 4,
        # RunPod's page: five GPUs, each in Community Cloud (marketplace) and Secure Cloud (neocloud)
        ("runpod", "marketplace"): 5, ("runpod", "neocloud"): 5}


def test_runpod_community_cloud_is_marketplace_and_secure_cloud_is_neocloud(shipped):
    runpod = _tiers(shipped, "runpod")
    assert runpod["h100-sxm-community-cloud"] == "marketplace"  # "peer-to-peer ... individual compute providers"
    assert runpod["h100-sxm-secure-cloud"] == "neocloud"  # "runs in T4 data centers by our trusted partners"
    assert {t for it, t in runpod.items() if it.endswith("-community-cloud")} == {"marketplace"}
    assert {t for it, t in runpod.items() if it.endswith("-secure-cloud")} == {"neocloud"}
    # the same GPU costs less in Community Cloud: 2.69 vs 3.49 USD/h for an H100 SXM (runpod.io/pricing, 2026-09-25)
    h100 = shipped[(shipped["provider"] == "runpod") & shipped["instance_type"].str.startswith("h100-sxm")]
    assert dict(zip(h100["tier"], h100["usd_per_hour"])) == {"marketplace": 2.69, "neocloud": 3.49}


@pytest.mark.parametrize("provider, instance_type, tier, words", [
    ("aws", "p5.48xlarge", "hyperscaler", "AWS"),
    ("azure", "Standard_ND96isr_H100_v5", "hyperscaler", "Azure"),
    ("gcp", "a3-highgpu-8g", "hyperscaler", "Google Cloud"),
    ("lambda", "gpu_8x_h100_sxm5", "neocloud", "On-Demand Cloud (ODC) instances"),
    ("coreweave", "nvidia-hgx-h100", "neocloud", "CoreWeave operates the physical infrastructure"),
    ("nebius", "hgx-h100", "neocloud", "Nebius AI Cloud servers"),
    ("runpod", "h100-sxm-community-cloud", "marketplace", "Our Community Cloud hosts are invite-only and vetted"),
    ("runpod", "b200-secure-cloud", "neocloud", "Secure Cloud runs in T4 data centers by our trusted partners"),
    ("vast", "anything", "marketplace", "a marketplace that connects hosts"),
])
def test_each_provider_tier_comes_with_its_source(provider, instance_type, tier, words):
    fact = tier_fact(provider, instance_type)
    assert fact is not None and fact.tier == tier and tier_of(provider, instance_type) == tier
    assert words in fact.source and "http" in fact.source


def test_unknown_tier_is_empty_shown_as_unknown_and_not_marketplace():
    assert tier_of("my-onprem", "rack-7") == "" and tier_fact("my-onprem", "rack-7") is None
    # a RunPod instance type naming neither product (or both) is not guessed into one
    assert tier_of("runpod", "h100-sxm") == "" and tier_of("runpod", "community-secure") == ""
    assert not is_marketplace("") and not is_marketplace(None) and not is_marketplace(float("nan"))
    assert tier_label("") == "unknown" and tier_label("neocloud") == "neocloud"
    assert is_marketplace("marketplace") and not is_marketplace("neocloud")
    assert {f.tier for f in TIER_FACTS.values()} == set(TIERS)


# ------------------------------------------------------------------------------ older files
def test_a_schema_3_snapshot_is_read_with_tier_filled_from_the_facts(tmp_path, shipped):
    import pandas as pd

    for name in ("offers.csv", "skipped.csv", "snapshot.json"):
        shutil.copy(DATA / name, tmp_path / name)
    offers = tmp_path / "offers.csv"
    v3 = pd.read_csv(offers, dtype=str, keep_default_na=False).drop(columns=list(ADDED_IN_V4))
    v3.to_csv(offers, index=False, lineterminator="\n")
    meta = json.loads((tmp_path / "snapshot.json").read_text())
    meta.update(schema_version=3, offers_sha256=hashlib.sha256(offers.read_bytes()).hexdigest())
    (tmp_path / "snapshot.json").write_text(json.dumps(meta))
    df, info = load_offers(snapshot_dir=tmp_path, use_cache=False)
    assert info.schema_version == 3 and list(df.columns) == list(OFFER_COLUMNS)
    assert _tiers(df, "runpod")["l40s-community-cloud"] == "marketplace"
    assert _tiers(df, "aws")["p5.48xlarge"] == "hyperscaler"
    pd.testing.assert_frame_equal(df, shipped)


# ------------------------------------------------------------------------------ a user's --catalog
def test_a_catalog_tier_is_kept_checked_or_taken_from_the_facts():
    text = (HEADER + ",tier\n"
            "runpod,global,h100-sxm-community-cloud,H100-80GB,1,80,on_demand,2.69,\n"
            "my-onprem,dc1,rack-7,H100-80GB,8,80,on_demand,20,\n"
            "my-colo,dc2,rack-9,H100-80GB,8,80,on_demand,21,neocloud\n")
    df = parse_offers_csv(text, "mine.csv")
    assert dict(zip(df["instance_type"], df["tier"])) == {
        "h100-sxm-community-cloud": "marketplace", "rack-7": "", "rack-9": "neocloud"}
    # without the column: the facts
    df = parse_offers_csv(HEADER + "\nlambda,us-east-1,gpu_1x_h100_pcie,H100-80GB,1,80,on_demand,2.49\n", "m.csv")
    assert list(df["tier"]) == ["neocloud"]


def test_a_catalog_with_a_bad_tier_is_a_one_line_error_naming_field_and_values():
    with pytest.raises(InputError) as ei:
        parse_offers_csv(HEADER + ",tier\nmy-colo,dc2,rack-9,H100-80GB,8,80,on_demand,21,boutique\n", "m.csv")
    e = ei.value
    assert e.field == "catalog" and "line 2" in e.message and "tier 'boutique'" in e.message
    assert e.accepted == "hyperscaler, neocloud, marketplace" and "\n" not in str(e)


def test_a_large_catalog_with_a_bad_tier_names_its_line_too():
    # 2,000 rows and more are read a column at a time; a bad tier hands the file to the row reader (line named)
    rows = [f"my-colo,dc{i},rack-{i},H100-80GB,8,80,on_demand,21,neocloud" for i in range(2100)]
    rows[1500] = rows[1500].replace("neocloud", "Boutique")
    with pytest.raises(InputError, match="line 1502: tier 'Boutique'"):
        parse_offers_csv(HEADER + ",tier\n" + "\n".join(rows) + "\n", "big.csv")
    rows[1500] = rows[1500].replace("Boutique", "marketplace")
    df = parse_offers_csv(HEADER + ",tier\n" + "\n".join(rows) + "\n", "big.csv")
    assert df["tier"].value_counts().to_dict() == {"neocloud": 2099, "marketplace": 1}


def test_validate_refuses_a_tier_that_contradicts_the_providers_words():
    text = (HEADER + ",tier\n"
            "aws,us-east-1,p5.48xlarge,H100-80GB,8,80,on_demand,55.04,marketplace\n"
            "runpod,global,h100-sxm-secure-cloud,H100-80GB,1,80,on_demand,3.49,neocloud\n"
            "my-colo,dc2,rack-9,H100-80GB,8,80,on_demand,21,marketplace\n")
    checked = validate_offers(parse_offers_csv(text, "m.csv"))
    assert list(checked.offers["instance_type"]) == ["h100-sxm-secure-cloud", "rack-9"]
    assert checked.reasons() == {"tier_not_documented": 1}
    assert "aws p5.48xlarge is hyperscaler" in checked.skipped[0].reason


def test_validate_refuses_a_tier_outside_tiers():
    df = parse_offers_csv(HEADER + "\nmy-colo,dc2,rack-9,H100-80GB,8,80,on_demand,21\n", "m.csv")
    df["tier"] = df["tier"].astype(object).map(lambda _: "boutique").astype("string")  # a frame, not a CSV
    assert validate_offers(df).reasons() == {"bad_tier": 1}


# ------------------------------------------------------------------------------ gpuopt prices list
def test_prices_list_json_rows_carry_the_tier():
    r = CliRunner().invoke(app, ["prices", "list", "--provider", "runpod", "--gpu", "H100", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [(x["instance_type"], x["tier"]) for x in rows] == [
        ("h100-sxm-community-cloud", "marketplace"), ("h100-sxm-secure-cloud", "neocloud")]


def test_prices_list_schema_lists_tier():
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "schemas" / "prices-list.schema.json")
                        .read_text())
    row = schema["$defs"]["OfferRow"]["properties"]["tier"]
    assert {"enum": ["hyperscaler", "neocloud", "marketplace", ""], "type": "string"} in row["anyOf"]
