"""`gpuopt prices import` as a user hits it (issue 9, points 4 and 5): a partial file replaces only the offers it
carries, says what it added / changed / kept, is dated by its source (never by the day of the import), goes into
the history when it is older than the current prices, and every offer passes the validation of providers.validate.

Every test starts from the shipped snapshot with an empty cache (tests/conftest.py sets GPUOPT_CACHE_DIR). Files:

* ``tests/fixtures/aws/GetProducts_gpu_us-east-1.derived.json``: a get_products answer for 6 GPU types in
  us-east-1, publicationDate 2026-11-30 (tests/fixtures/aws/README.md says how it was derived).
* ``pricing_cache/data/inputs/GetProducts_m5_large.json``: the real Pricing API item of m5.large, us-east-1,
  publicationDate 2021-02-05T20:45:00Z (aws/amazon-ec2-instance-selector test/static). m5.large has no GPU, so the
  real file imports nothing; the history test uses the same item with ``instanceType`` set to g4dn.xlarge (a GPU
  type the current AWS offers describe), every price and date left as AWS published them for m5.large.
* one-row SkyPilot files cut from ``pricing_cache/data/inputs/azure_vms_v6_gpu_NC_ND_NV_us.csv`` (the catalog's
  Standard_NC12s_v3 eastus row: on-demand 6.12, spot 0.7956), with the price edited where a test says so.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from pricing_cache import cache
from pricing_cache.build_snapshot import INPUTS_DIR
from pricing_cache.refresh import offer_keys, previous_rows, shipped_day
from pricing_cache.store import load_offers

FIX = Path(__file__).resolve().parent / "fixtures"
AWS_GPU_FILE = FIX / "aws" / "GetProducts_gpu_us-east-1.derived.json"
M5 = INPUTS_DIR / "GetProducts_m5_large.json"
AZURE_CATALOG = INPUTS_DIR / "azure_vms_v6_gpu_NC_ND_NV_us.csv"


def _cli(*args: str):
    return CliRunner().invoke(app, ["prices", "import", *args])


def _key_set(df, provider: str, region: str | None = None) -> set:
    sel = df[(df["provider"] == provider).to_numpy()]
    if region is not None:
        sel = sel[(sel["region"] == region).to_numpy()]
    return set(offer_keys(sel))


def _price(df, provider, region, itype, pricing, zone=""):
    row = df[(df["provider"] == provider) & (df["region"] == region) & (df["instance_type"] == itype)
             & (df["pricing"] == pricing) & (df["zone"].fillna("") == zone)]
    assert len(row) == 1, row
    return float(row["usd_per_hour"].iloc[0])


def _one_row_skypilot(tmp_path: Path, price: str | None = None, spot: str | None = None) -> Path:
    """The Standard_NC12s_v3 eastus row of the real Azure SkyPilot catalog, alone (Price / SpotPrice edited when
    given)."""
    with open(AZURE_CATALOG, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    (row,) = [r for r in rows if r["Region"] == "eastus" and r["InstanceType"] == "Standard_NC12s_v3"]
    assert (row["Price"], row["SpotPrice"]) == ("6.12", "0.7956")  # the catalog's values, as the docstring says
    if price is not None:
        row["Price"] = price
    if spot is not None:
        row["SpotPrice"] = spot
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(row), lineterminator="\n")
    w.writeheader()
    w.writerow(row)
    path = tmp_path / f"azure_one_row_{price or 'catalog'}.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_a_partial_aws_price_file_keeps_every_other_offer_and_says_what_it_changed():
    base = previous_rows("aws", "2026-11-30")  # the AWS offers in effect on the file's date, before the import
    before, _ = load_offers()
    r = _cli(str(AWS_GPU_FILE), "--input-format", "aws-price-list", "--format", "json")
    assert r.exit_code == 0, r.output
    (w,) = json.loads(r.stdout)["snapshots"]
    # the date is the file's publicationDate, never the day of the import
    assert w["as_of"] == "2026-11-30" and w["as_of_from"] == "the file's publicationDate"
    assert w["mode"] == "offers" and w["removed"] == 0 and w["regions"] == ["us-east-1"]
    snap = cache.read_snapshot(cache.list_snapshots("aws")[-1])
    new = snap[snap["source"].astype(str) == "import:GetProducts_gpu_us-east-1.derived.json"]
    # 6 on-demand prices + 8 p3.2xlarge reservations (README of the fixture); none refused
    assert len(new) == 14 and w["skipped"] == 0
    assert _price(new, "aws", "us-east-1", "p3.2xlarge", "on_demand") == 3.06  # the fixture's quoted price
    # no offer is removed: the snapshot holds every previous offer of every region, us-east-1 included
    assert _key_set(base, "aws", "us-east-1") <= _key_set(snap, "aws", "us-east-1")
    assert _key_set(base, "aws") <= _key_set(snap, "aws")
    # the counts are those of the keys: added = not there before, changed / unchanged = there, kept = the rest
    old = dict(zip(offer_keys(base), base["usd_per_hour"]))
    file_keys = list(zip(offer_keys(new), new["usd_per_hour"]))
    assert w["added"] == sum(1 for k, _ in file_keys if k not in old)
    assert w["changed"] == sum(1 for k, v in file_keys if k in old and abs(old[k] - v) > 1e-9)
    assert w["unchanged"] == sum(1 for k, v in file_keys if k in old and abs(old[k] - v) <= 1e-9)
    assert w["kept"] == len(base) - (w["changed"] + w["unchanged"])
    assert w["rows"] == len(snap) == len(base) + w["added"]
    after, info = load_offers()
    assert w["current"] == ("2026-11-30" >= shipped_day("aws"))
    if w["current"]:  # then every command uses it, and the other us-east-1 offers are still there
        assert info.origins["aws"].startswith("cache") and Path(w["file"]).name in info.origins["aws"]
        assert _key_set(before, "aws", "us-east-1") <= _key_set(after, "aws", "us-east-1")


def test_replace_region_replaces_the_regions_of_the_file_whole():
    base = previous_rows("aws", "2026-11-30")
    r = _cli(str(AWS_GPU_FILE), "--input-format", "aws-price-list", "--replace-region", "--format", "json")
    assert r.exit_code == 0, r.output
    (w,) = json.loads(r.stdout)["snapshots"]
    snap = cache.read_snapshot(cache.list_snapshots("aws")[-1])
    assert w["mode"] == "region"
    east = snap[(snap["region"] == "us-east-1").to_numpy()]
    assert len(east) == 14 and set(east["source"]) == {"import:GetProducts_gpu_us-east-1.derived.json"}
    gone = _key_set(base, "aws", "us-east-1") - _key_set(east, "aws", "us-east-1")
    assert w["removed"] == len(gone) > 0
    others = base[(base["region"] != "us-east-1").to_numpy()]
    assert _key_set(others, "aws") <= _key_set(snap, "aws") and w["kept"] == len(others)


def test_a_one_row_skypilot_file_removes_no_eastus_offer(tmp_path):
    """Issue 9: a one-row SkyPilot file used to remove 111 eastus offers."""
    shipped, _ = load_offers(use_cache=False)
    east_before = _key_set(shipped, "azure", "eastus")
    f = _one_row_skypilot(tmp_path)
    r = _cli(str(f), "--input-format", "skypilot", "--provider", "azure", "--as-of", "today")
    assert r.exit_code == 0, r.output
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"azure: prices as of {today} (--as-of) are now the current azure prices: ")
    n_azure = int((shipped["provider"] == "azure").sum())
    # on-demand 6.12 and spot 0.7956 are the shipped prices: unchanged; everything else is kept as it was
    assert lines[1] == (f"azure: 0 offers added, 0 changed (price differs), 2 unchanged, {n_azure - 2} kept "
                        "(previous offers not in the file), none removed")
    after, info = load_offers()
    assert info.origins["azure"].startswith("cache")
    assert _key_set(after, "azure", "eastus") == east_before  # none of the eastus offers removed
    assert _price(after, "azure", "eastus", "Standard_NC12s_v3", "on_demand") == 6.12
    assert set(after[(after["provider"] == "azure").to_numpy()]["as_of"].astype(str)) >= {today}
    # the same file with --replace-region replaces eastus whole, and says how many offers it removed
    r = _cli(str(f), "--input-format", "skypilot", "--provider", "azure", "--as-of", "today", "--replace-region",
             "--format", "json")
    (w,) = json.loads(r.stdout)["snapshots"]
    after, _ = load_offers()
    east = _key_set(after, "azure", "eastus")
    assert {k[3] for k in east} == {"Standard_NC12s_v3"}
    assert w["removed"] == len(east_before - east) == len(east_before) - len(east)


def test_an_older_aws_file_goes_into_the_history_and_leaves_the_current_prices(tmp_path):
    """The issue's case: a partial AWS price file published 2021-02-05 was labelled as of today and emptied
    us-east-1. Now its date is its publicationDate, and it only enters the history."""
    item = json.loads(M5.read_text())
    assert item["publicationDate"] == "2021-02-05T20:45:00Z"
    item["product"]["attributes"]["instanceType"] = "g4dn.xlarge"
    f = tmp_path / "GetProducts_g4dn_xlarge_2021-02-05.json"
    f.write_text(json.dumps(item))
    before, _ = load_offers()
    r = _cli(str(f), "--input-format", "aws-price-list")
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"aws: prices as of 2021-02-05 (the file's publicationDate) are older than the current "
                            f"aws prices (as of {shipped_day('aws')}): written to the price history only, used by "
                            "`--prices-on` dates from 2021-02-05 to ")
    assert "the current prices are unchanged" in first
    after, info = load_offers()
    assert info.origins["aws"] == "shipped snapshot"
    assert _key_set(after, "aws") == _key_set(before, "aws")  # current AWS prices untouched
    assert _price(after, "aws", "us-east-1", "g4dn.xlarge", "on_demand") == \
        _price(before, "aws", "us-east-1", "g4dn.xlarge", "on_demand")
    # --prices-on 2021-02-05 prices with the file: m5.large's published on-demand 0.096 and 1yr no-upfront 0.06
    then, info = load_offers(on_date=dt.date(2021, 2, 5))
    assert info.origins["aws"].startswith("cache")
    assert _price(then, "aws", "us-east-1", "g4dn.xlarge", "on_demand") == 0.096
    g4 = then[(then["instance_type"] == "g4dn.xlarge").to_numpy()]
    assert set(g4["as_of"]) == {"2021-02-05"} and len(g4) == 13  # on-demand + the item's 12 reserved terms
    nu = g4[(g4["pricing"] == "reserved_1y") & (g4["payment"] == "no_upfront") & (g4["offering_class"] == "standard")]
    assert float(nu["usd_per_hour"].iloc[0]) == 0.06
    # no row dated after 2021-02-05 leaks into that day's history
    assert (then[(then["provider"] == "aws").to_numpy()]["as_of"].astype(str) <= "2021-02-05").all()
    r = CliRunner().invoke(app, ["prices", "list", "--provider", "aws", "--gpu", "T4", "--pricing", "on_demand",
                                 "--prices-on", "2021-02-05", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [(x["instance_type"], x["usd_per_hour"], x["as_of"]) for x in rows] == [("g4dn.xlarge", 0.096, "2021-02-05")]


def test_the_real_m5_large_file_has_no_gpu_offer_and_writes_nothing():
    r = _cli(str(M5), "--input-format", "aws-price-list")
    assert r.exit_code == 1
    assert r.stderr == ("gpuopt: error: file: GetProducts_m5_large.json holds no GPU offers gpuopt can use "
                        "(1 row not usable: no_gpu 1)\n")
    assert cache.list_snapshots() == []


@pytest.mark.parametrize("price", ["inf", "1e308", "1e-300"])
def test_prices_no_cloud_quotes_are_refused_at_import(tmp_path, price):
    """Importers accepted inf, 1e308 and 1e-300 (issue 9); the validation refuses them (bad_price) and the
    previous eastus price stays."""
    f = _one_row_skypilot(tmp_path, price=price)
    r = _cli(str(f), "--input-format", "skypilot", "--provider", "azure", "--as-of", "2026-12-01", "--format", "json")
    if price == "1e-300":
        # the SkyPilot importer itself calls the spot price 0.7956 >= 1e-300 a placeholder; nothing is left
        assert r.exit_code == 1  # with --json the error is a JSON document on stderr (gpuopt.schemas.ErrorDoc)
        err = json.loads(r.stderr)
        assert err["kind"] == "error" and err["error"]["field"] == "file"
        assert err["error"]["message"] == ("file: azure_one_row_1e-300.csv holds no GPU offers gpuopt can use "
                                           "(2 rows not usable: bad_price 1, placeholder_spot 1)")
        assert cache.list_snapshots() == []
        return
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (w,) = d["snapshots"]
    # the on-demand row is refused (and no reservation is derived from a refused row); the real spot price is
    # imported
    assert d["skipped_by_reason"] == {"bad_price": 1} and w["unchanged"] == 1
    after, _ = load_offers()
    assert _price(after, "azure", "eastus", "Standard_NC12s_v3", "on_demand") == 6.12  # the previous price stays
    snap = cache.list_snapshots("azure")[-1]
    assert snap.meta["skipped"] == {"bad_price": 1} and snap.meta["skipped_total"] == 1
    listed = cache.read_skipped(snap)
    assert len(listed) == 1 and {x["provider"] for x in listed} == {"azure"}
    assert {x["instance_type"] for x in listed} == {"Standard_NC12s_v3"}
    assert all(x["reason"].startswith("bad_price: ") for x in listed)


@pytest.mark.parametrize("price,error", [
    ("1e308", "(1 row not usable: bad_price 1)"),
    ("1e-300", "(1 row not usable: bad_price 1)"),
    ("inf", None),
])
def test_a_one_row_offers_csv_with_an_absurd_price_is_refused(tmp_path, price, error):
    f = tmp_path / "one.csv"
    f.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,as_of\n"
                 f"onprem,dc1,dgx-a100,A100-80GB,8,80,on_demand,{price},2026-10-01\n")
    r = _cli(str(f), "--input-format", "offers")
    assert r.exit_code == 1 and "Traceback" not in r.output
    if error:
        assert r.stderr == f"gpuopt: error: file: one.csv holds no GPU offers gpuopt can use {error}\n"
    else:  # the offers-CSV reader refuses it first, naming the line and the column
        assert r.stderr == "gpuopt: error: catalog: one.csv line 2: usd_per_hour 'inf' is not a finite number\n"
    assert cache.list_snapshots() == []


def test_dates_are_the_sources_or_given_never_today_silently(tmp_path):
    f = _one_row_skypilot(tmp_path)
    r = _cli(str(f), "--input-format", "skypilot", "--provider", "azure")
    assert r.exit_code == 1
    assert r.stderr.startswith("gpuopt: error: --as-of: a SkyPilot catalog carries no date: give --as-of YYYY-MM-DD")
    assert r.stderr.endswith("(accepted: YYYY-MM-DD or today)\n")
    # an --as-of contradicting the file's publicationDate is refused, naming both dates
    r = _cli(str(AWS_GPU_FILE), "--input-format", "aws-price-list", "--as-of", "2026-12-01")
    assert r.exit_code == 1 and r.stderr == (
        "gpuopt: error: --as-of: GetProducts_gpu_us-east-1.derived.json says its prices held on 2026-11-30 (the file's "
        "publicationDate); --as-of 2026-12-01 contradicts it: leave --as-of out\n")
    # an offers CSV without dates needs --as-of; with it, its rows take that date
    o = tmp_path / "undated.csv"
    o.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
                 "onprem,dc1,dgx-a100,A100-80GB,8,80,on_demand,18.5\n")
    r = _cli(str(o), "--input-format", "offers")
    assert r.exit_code == 1 and r.stderr.startswith(
        "gpuopt: error: --as-of: undated.csv does not say when its prices held (no as_of column, or every as_of "
        "empty or unknown); give --as-of YYYY-MM-DD")
    r = _cli(str(o), "--input-format", "offers", "--as-of", "2026-10-01", "--format", "json")
    assert r.exit_code == 0, r.output
    (w,) = json.loads(r.stdout)["snapshots"]
    assert (w["provider"], w["as_of"], w["as_of_from"], w["added"], w["current"]) == \
        ("onprem", "2026-10-01", "--as-of (the file gives no date)", 1, True)
    r = _cli(str(o), "--input-format", "offers", "--as-of", "yesterday")
    assert r.exit_code == 1 and r.stderr == ("gpuopt: error: --as-of: not a date: 'yesterday' "
                                             "(accepted: YYYY-MM-DD)\n")


def test_a_failed_import_leaves_the_previous_snapshot(tmp_path):
    f = _one_row_skypilot(tmp_path)
    assert _cli(str(f), "--input-format", "skypilot", "--provider", "azure", "--as-of", "today").exit_code == 0
    snaps = [s.meta_path.name for s in cache.list_snapshots()]
    before, _ = load_offers()
    bad = _one_row_skypilot(tmp_path, price="1e-300")  # nothing usable
    assert _cli(str(bad), "--input-format", "skypilot", "--provider", "azure", "--as-of", "today").exit_code == 1
    assert [s.meta_path.name for s in cache.list_snapshots()] == snaps
    after, _ = load_offers()
    assert after.equals(before)


def test_the_import_help_documents_the_date_and_replace_region():
    r = CliRunner().invoke(app, ["prices", "import", "--help"], terminal_width=200)
    text = " ".join(r.stdout.split())
    assert "--replace-region" in text and "publicationDate" in text and "required for skypilot" in text


def test_a_bulk_offer_csv_is_dated_by_its_publication_date():
    """AmazonEC2_bulk_sample.derived.csv: the bulk-file header with "Publication Date" 2021-02-05T20:45:00Z and
    the PRICE_FAULTS BUG-03 (p3.2xlarge, Used 3.06) and BUG-04 (g4dn.xlarge Linux 0.526) products
    (tests/fixtures/aws/README.md); m5.large has no GPU."""
    from pricing_cache.importing import import_file

    out = import_file(FIX / "aws" / "AmazonEC2_bulk_sample.derived.csv", "aws-bulk-csv")
    (w,) = out["snapshots"]
    assert (w["as_of"], w["as_of_from"], w["current"], w["added"]) == \
        ("2021-02-05", "the file's Publication Date", False, 2)
    assert out["skipped_by_reason"] == {"no_gpu": 1}
    then, _ = load_offers(on_date=dt.date(2021, 2, 5))
    assert _price(then, "aws", "us-east-1", "p3.2xlarge", "on_demand") == 3.06
    assert _price(then, "aws", "us-east-1", "g4dn.xlarge", "on_demand") == 0.526
    assert any(line.startswith("aws: 1 row not imported: no_gpu 1 (listed in ") for line in out["messages"])


def test_kept_offers_that_the_files_prices_contradict_are_said(tmp_path):
    # an offers CSV with a new, lower on-demand rate for p4d.24xlarge us-east-1 (a made-up price, not AWS's): the
    # snapshot's reservations of that type, which the file does not carry, are now above on-demand. They are kept
    # (an import replaces only the offers it carries) and the import says so.
    offers, _ = load_offers(use_cache=False)
    res = offers[(offers["provider"] == "aws") & (offers["region"] == "us-east-1")
                 & (offers["instance_type"] == "p4d.24xlarge") & (offers["pricing"] == "reserved_1y")]
    assert len(res) and float(res["usd_per_hour"].min()) > 5.0
    f = tmp_path / "p4d.csv"
    f.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,as_of\n"
                 "aws,us-east-1,p4d.24xlarge,A100-40GB,8,40,on_demand,5.0,2026-12-01\n")
    r = _cli(str(f), "--input-format", "offers", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (note,) = [n for n in out["notes"] if "kept offer(s) the file does not carry" in n]
    assert "commitment_not_below_on_demand" in note and "p4d.24xlarge in us-east-1" in note
    after, _ = load_offers()
    assert _price(after, "aws", "us-east-1", "p4d.24xlarge", "on_demand") == 5.0
    kept = after[(after["provider"] == "aws") & (after["region"] == "us-east-1")
                 & (after["instance_type"] == "p4d.24xlarge") & (after["pricing"] == "reserved_1y")]
    assert len(kept) == len(res)  # kept, not dropped in silence
