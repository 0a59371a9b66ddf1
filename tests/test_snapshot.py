"""The shipped snapshot: byte-identical to a fresh build, verified on load, and the quirks visible in its rows."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from gpuopt.kernel.errors import SnapshotError
from gpuopt.kernel.records import (ADDED_IN_V3, ADDED_IN_V4, FILLED_FROM_FACTS, OFFER_COLUMNS, OFFER_DTYPES,
                                   SCHEMA_VERSION)
from pricing_cache import build_snapshot
from pricing_cache.store import load_offers, snapshot_status
from providers._common import OFFER_KEY

DATA = Path(build_snapshot.__file__).resolve().parent / "data"
FILES = ("offers.csv", "skipped.csv", "snapshot.json")


@pytest.fixture(scope="module")
def snap():
    df, info = load_offers()
    meta = json.loads((DATA / "snapshot.json").read_text())
    return df, info, meta


@pytest.fixture()
def snapshot_copy(tmp_path):
    for name in FILES:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def test_committed_snapshot_equals_a_fresh_build(tmp_path):
    build_snapshot.build(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), f"{name} differs from a fresh build"
    assert build_snapshot.main(["--check"]) == 0


def test_build_reads_only_repo_inputs():
    assert build_snapshot.INPUTS_DIR == DATA / "inputs"
    for inp in build_snapshot.INPUTS:
        assert (DATA / "inputs" / inp.file).is_file()
    assert (DATA / "inputs" / "PROVENANCE.md").is_file()


def test_hand_edited_offers_are_detected(snapshot_copy):
    path = snapshot_copy / "offers.csv"
    text = path.read_text()
    # make one on-demand price look cheaper, as a hand edit would
    path.write_text(text.replace(",on_demand,,,0,3.06,3.06,", ",on_demand,,,0,0.06,0.06,", 1))
    assert path.read_text() != text
    with pytest.raises(SnapshotError, match="sha256"):
        load_offers(snapshot_dir=snapshot_copy)
    status = snapshot_status(snapshot_copy)
    assert status["ok"] is False and "corrupted" in status["error"]


def test_schema_version_and_missing_files(snapshot_copy):
    meta_path = snapshot_copy / "snapshot.json"
    meta = json.loads(meta_path.read_text())
    meta["schema_version"] = SCHEMA_VERSION + 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SnapshotError, match="schema version"):
        load_offers(snapshot_dir=snapshot_copy)
    meta_path.unlink()
    with pytest.raises(SnapshotError, match="missing"):
        load_offers(snapshot_dir=snapshot_copy)


def test_a_snapshot_of_schema_1_is_read_with_fabric_and_zone_kind_from_the_facts(snapshot_copy, snap):
    # a snapshot written before schema 2 (no fabric / zone_kind) is never refused: the columns are filled from
    # providers/facts.py, giving exactly the rows the current build ships
    import hashlib

    import pandas as pd

    shipped = snap[0]
    offers = snapshot_copy / "offers.csv"
    full = pd.read_csv(offers, dtype=str, keep_default_na=False)
    # a file of schema 1 held no Convertible reservation (schema 3 added the offering_class that tells them apart)
    older = full["offering_class"] != "convertible"
    v1 = full[older].drop(columns=list(FILLED_FROM_FACTS) + list(ADDED_IN_V3) + list(ADDED_IN_V4))
    v1.to_csv(offers, index=False, lineterminator="\n")
    meta_path = snapshot_copy / "snapshot.json"
    meta = json.loads(meta_path.read_text())
    meta.update(schema_version=1, offers_sha256=hashlib.sha256(offers.read_bytes()).hexdigest(), rows=len(v1))
    meta_path.write_text(json.dumps(meta))
    df, info = load_offers(snapshot_dir=snapshot_copy, use_cache=False)
    assert info.schema_version == 1 and tuple(df.columns) == OFFER_COLUMNS
    pd.testing.assert_frame_equal(df, shipped[older.to_numpy()].reset_index(drop=True))


def test_shipped_rows_carry_documented_fabrics_and_zone_kinds(snap):
    df = snap[0]
    fab = df.drop_duplicates(["provider", "instance_type"]).set_index(["provider", "instance_type"])["fabric"]
    assert fab[("aws", "p5.48xlarge")] == "efa" and fab[("aws", "g4dn.xlarge")] == "ethernet"
    assert fab[("azure", "Standard_ND96isr_H100_v5")] == "infiniband"
    assert fab[("gcp", "a3-megagpu-8g")] == "tcpxo" and fab[("gcp", "a3-highgpu-8g")] == "tcpx"
    assert fab[("gcp", "a3-ultragpu-8g")] == "rdma" and fab[("gcp", "a2-highgpu-8g")] == "ethernet"
    assert set(fab[("lambda",)]) == {"ethernet"}
    special = df[df["zone_kind"] != ""]
    assert sorted(set(zip(special["zone"], special["zone_kind"]))) == [
        ("us-east-1-atl-2a", "local_zone"),  # a p5 capacity block in the Atlanta Local Zone (AWS page, 2026-07-22)
        ("us-west-2-phx-2a", "local_zone"),  # p5e capacity blocks in the Phoenix Local Zone (the same page)
        ("use1-atl2-az1", "local_zone"), ("usw2-lax1-az1", "local_zone"), ("usw2-lax1-az2", "local_zone")]
    assert not df[df["region"].str.startswith("us-gov-")]["zone"].str.len().any()  # GovCloud regions, not zones


def test_loaded_frame_and_info(snap):
    df, info, meta = snap
    assert tuple(df.columns) == OFFER_COLUMNS
    assert {c: str(t) for c, t in df.dtypes.items()} == {c: str(t) for c, t in df.astype(OFFER_DTYPES).dtypes.items()}
    assert info.kind == "snapshot" and info.schema_version == SCHEMA_VERSION and info.built_at == "2026-11-30"
    assert info.rows == len(df) == meta["rows"]
    assert info.estimated_rows == int(df["source"].str.startswith("rule:").sum()) == meta["estimated_rows"]
    for prov, p in meta["providers"].items():
        assert info.providers[prov].rows_by_pricing == p["rows_by_pricing"]
        assert info.providers[prov].skipped == p["skipped"]
        assert info.providers[prov].sources
    status = snapshot_status()
    assert status["ok"] and status["providers"]["aws"]["skipped_total"] == meta["providers"]["aws"]["skipped_total"]


def test_invariants(snap):
    df, _, _ = snap
    assert (df.groupby(list(OFFER_KEY)).size() == 1).all()
    assert (df["usd_per_hour"] > 0).all() and df["usd_per_hour"].notna().all()  # BUG-07
    assert set(df["currency"]) == {"USD"}  # BUG-12: one currency, carried on every row
    # a source's date, or "unknown" for a catalog row no dated quote confirms (never the copy date)
    assert (df["as_of"].str.fullmatch(r"\d{4}-\d{2}-\d{2}") | (df["as_of"] == "unknown")).all()
    assert (df["source"] != "").all()
    eff = df["recurring_usd_per_hour"] + df["upfront_usd"] / df["term_hours"].where(df["term_hours"] > 0)
    res = df["term_hours"] > 0
    assert ((eff[res] - df["usd_per_hour"][res]).abs() < 1e-5).all()
    assert (df.loc[~res, "recurring_usd_per_hour"] == df.loc[~res, "usd_per_hour"]).all()
    assert df["gpu_memory_gib"].notna().all() and (df["gpu_count"] > 0).all()


def test_row_counts_per_provider(snap):
    df, _, meta = snap
    counts = df.groupby(["provider", "pricing"]).size().to_dict()
    assert counts == {(p, k): v for p, m in meta["providers"].items() for k, v in m["rows_by_pricing"].items()}
    assert set(df[df.provider == "lambda"]["pricing"]) == {"on_demand"}  # no spot, no reservations
    assert set(df[df.pricing == "capacity_block"]["provider"]) == {"aws"}
    # payment options per term: AWS three (per offering class), Azure two (upfront or monthly, same rate), GCP CUDs
    # one (monthly, no upfront)
    res = df[df.pricing.isin(["reserved_1y", "reserved_3y"])]
    pays = res.groupby(["provider", "region", "instance_type", "pricing", "offering_class"])["payment"].nunique()
    assert set(pays.loc["aws"]) == {3} and set(pays.loc["azure"]) == {2} and set(pays.loc["gcp"]) == {1}
    for p, m in meta["providers"].items():
        assert m["quoted_rows"] + m["estimated_rows"] == m["rows"]
        assert m["undated_rows"] == int((df[df.provider == p]["as_of"] == "unknown").sum())


def test_reserved_rows_are_quoted_or_marked_rule(snap):
    df, _, _ = snap
    res = df[df["pricing"].isin(["reserved_1y", "reserved_3y"])]
    quoted = res[~res["source"].str.startswith("rule:")]
    firsts = set(quoted["source"].str.split(" ").str[0].str.split(";").str[0])
    assert firsts == {"github.com/tsaol/aws-gpu", "github.com/Cyclenerd/google-cloud-pricing-cost-calculator",
                      "github.com/Jumbo2020/gpu_prices", "ec2instances.info:2017-11-12"}
    # the 2017 quotes are used for p3 only, where their on-demand equals the snapshot's (AWS has no newer p3 quote)
    old = quoted[quoted["source"].str.startswith("ec2instances.info:2017-11-12")]
    assert (old["as_of"] == "2017-11-12").all() and set(old["instance_type"]) <= {"p3.2xlarge", "p3.8xlarge",
                                                                                  "p3.16xlarge"}
    # ap-northeast-1: the 2017 on-demand (5.243) differs from the snapshot's (4.194) -> rule, not the stale quote
    tokyo = res[(res.instance_type == "p3.2xlarge") & (res.region == "ap-northeast-1")]
    assert len(tokyo) == 6 and tokyo["source"].str.startswith("rule:aws-").all()
    rules = res[res["source"].str.startswith("rule:")]
    for prov in ("aws", "azure", "gcp"):
        sub = rules[rules.provider == prov]
        assert len(sub) and sub["source"].str.startswith(f"rule:{prov}-").all()
    od_asof = df[df.pricing == "on_demand"].set_index(["provider", "region", "instance_type"])["as_of"]
    for r in rules.head(200).itertuples():
        assert r.as_of == od_asof[(r.provider, r.region, r.instance_type)]


def test_quirks_visible_in_the_snapshot(snap):
    df, _, _ = snap
    assert df[(df.instance_type == "p5e.48xlarge") & (df.pricing == "on_demand")].empty
    assert df[df.instance_type == "a4-highgpu-8g"].empty
    assert set(df[df.instance_type == "Standard_ND96isr_H100_v5"]["gpu_count"]) == {8.0}
    g6f = df[df.instance_type.str.startswith("g6f.")]
    assert set(g6f["gpu_count"]) == {0.25, 0.5}
    od_only_two = df[df.instance_type.isin(["g4dn.8xlarge", "g5.4xlarge", "p5.4xlarge"]) & (df.pricing == "on_demand")]
    assert set(od_only_two["region"]) == {"us-east-1", "us-west-2"}  # their reservations are quoted in more regions
    od = df[(df.instance_type == "p5.48xlarge") & (df.pricing == "on_demand")].set_index("region")["usd_per_hour"]
    assert od["us-west-1"] == 68.8 and od["us-east-1"] == 55.04
    spot = df[df.pricing == "spot"]
    assert (spot[spot.provider == "aws"]["zone"] != "").all()  # AWS spot per zone
    # GCP: the list's spot prices are per region (one price for every zone), the catalog's remaining rows per zone
    gs = spot[spot.provider == "gcp"]
    assert ((gs["zone"] == "") == gs["source"].str.contains("Cyclenerd")).all()
    assert (spot[spot.provider == "azure"]["zone"] == "").all()  # Azure rows have no zone


def test_skipped_report_matches_snapshot_json(snap):
    _, _, meta = snap
    with open(DATA / "skipped.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["provider", "source", "line", "instance_type", "region", "reason"]
    counts: dict[str, Counter] = {}
    for r in rows:
        counts.setdefault(r["provider"], Counter())[r["reason"].split(":")[0]] += 1
        assert int(r["line"]) >= 0
    for prov, m in meta["providers"].items():
        assert dict(counts.get(prov, {})) == m["skipped"]
    # the p5e rows without on-demand, reported with their real line numbers
    p5e = [r for r in rows if r["instance_type"] == "p5e.48xlarge" and r["reason"].startswith("unknown_price")]
    assert {int(r["line"]) for r in p5e} == set(range(567, 576))


def test_user_offers_csv_through_the_store(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
                 "onprem,dc1,box,H100-80GB,8,80,on_demand,20\n")
    df, info = load_offers(p)
    assert info.kind == "offers_csv" and info.built_at is None and info.rows == 1
    assert info.providers["onprem"].rows_by_pricing == {"on_demand": 1}
