"""The price cache lifecycle: atomic snapshots, the lock, corrupted snapshots, partial refreshes keeping good data,
history (--prices-on, prices diff), retention and age warnings. The adapters here are test doubles that follow
providers/base.py (the real adapters are tested against recorded payloads in tests/test_providers_*.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from types import SimpleNamespace

import pytest

from gpuopt.kernel.errors import ProviderError
from gpuopt.kernel.records import ADDED_IN_V3, ADDED_IN_V4, FILLED_FROM_FACTS, SCHEMA_VERSION
from pricing_cache import cache
from pricing_cache.refresh import refresh
from pricing_cache.store import load_offers
from providers._common import ParseResult
from providers.base import FetchOptions, RegionSkipped


@pytest.fixture(scope="module")
def shipped():
    df, _ = load_offers(use_cache=False)
    return df


class FakeAdapter:
    """A live adapter double: serves the shipped lambda rows of each region with prices times ``factor``."""

    def __init__(self, shipped, provider="lambda", factor=1.1, fail=(), skip=(), delay=0.0, shared=None):
        self.shared = shared if shared is not None else {"active": 0, "max": 0}
        self.rows = shipped[shipped["provider"] == provider]
        self.NAME = provider
        self.factor, self.fail, self.skip, self.delay = factor, set(fail), set(skip), delay
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def list_regions(self, options):
        return options.regions or sorted(set(self.rows["region"]))

    def fetch_region(self, region, options):
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.shared["active"] += 1
            self.shared["max"] = max(self.shared["max"], self.shared["active"])
        try:
            time.sleep(self.delay)
            if region in self.skip:
                raise RegionSkipped(f"{region} is not enabled for this account")
            if region in self.fail:
                raise ProviderError(f"HTTP 500 on page 2 of {region} after 5 attempts")
            return {"rows": self.rows[self.rows["region"] == region]}
        finally:
            with self._lock:
                self.active -= 1
                self.shared["active"] -= 1

    def parse_region(self, raw, region, as_of):
        df = raw["rows"].copy()
        df["usd_per_hour"] = (df["usd_per_hour"] * self.factor).round(6)
        df["recurring_usd_per_hour"] = df["usd_per_hour"]
        df["source"] = "fake-api"
        df["as_of"] = as_of
        return ParseResult(offers=df)


def test_refresh_writes_a_snapshot_that_becomes_current(shipped):
    fake = FakeAdapter(shipped)
    s = refresh(["lambda"], FetchOptions(), adapters={"lambda": fake})
    (p,) = s.providers
    assert s.ok and p.status == "refreshed" and p.rows == len(fake.rows)
    df, info = load_offers()
    lam = df[df["provider"] == "lambda"]
    assert set(lam["source"]) == {"fake-api"}
    assert info.origins["lambda"].startswith("cache ")
    assert info.origins["aws"] == "shipped snapshot"
    old = fake.rows.set_index("instance_type")["usd_per_hour"]
    new = lam.set_index("instance_type")["usd_per_hour"]
    assert (new / old.loc[new.index]).round(3).eq(1.1).all()
    meta = json.loads(cache.list_snapshots("lambda")[0].meta_path.read_text())
    assert meta["regions"]["done"] == ["us-east-1"] and meta["schema_version"] == SCHEMA_VERSION


def test_a_failed_region_keeps_its_previous_prices_and_others_refresh(shipped):
    aws = FakeAdapter(shipped, provider="aws", factor=0.5, fail={"us-west-2"}, skip={"af-south-1"})
    s = refresh(["aws"], FetchOptions(regions=["us-east-1", "us-west-2", "af-south-1"]), adapters={"aws": aws})
    (p,) = s.providers
    assert p.status == "partial"
    assert p.regions_done == ["us-east-1"]
    assert "us-west-2" in p.regions_failed and "af-south-1" in p.regions_skipped
    df, _ = load_offers()
    a = df[df["provider"] == "aws"]
    ship = shipped[shipped["provider"] == "aws"]
    # us-east-1 refreshed at half price; us-west-2 (failed) and every region not asked for keep the shipped rows
    e1 = a[a["region"] == "us-east-1"]
    assert set(e1["source"]) == {"fake-api"}
    w2 = a[a["region"] == "us-west-2"].sort_values(["instance_type", "pricing", "payment", "zone"])
    w2_ship = ship[ship["region"] == "us-west-2"].sort_values(["instance_type", "pricing", "payment", "zone"])
    assert list(w2["usd_per_hour"]) == list(w2_ship["usd_per_hour"])
    assert set(a["region"]) == set(ship["region"])
    assert "us-west-2" in p.kept_previous


def test_a_provider_that_fails_entirely_is_not_written_and_the_others_still_refresh(shipped):
    broken = SimpleNamespace(NAME="azure", list_regions=lambda o: (_ for _ in ()).throw(ProviderError("no credentials")))
    lam = FakeAdapter(shipped)
    s = refresh(["azure", "lambda"], FetchOptions(), adapters={"azure": broken, "lambda": lam})
    statuses = {p.provider: p.status for p in s.providers}
    assert statuses == {"azure": "failed", "lambda": "refreshed"}
    assert not s.ok
    assert cache.list_snapshots("azure") == []
    df, info = load_offers()
    assert info.origins["azure"] == "shipped snapshot"


def test_every_region_failing_writes_nothing(shipped):
    lam = FakeAdapter(shipped, fail={"us-east-1"})
    s = refresh(["lambda"], FetchOptions(), adapters={"lambda": lam})
    assert s.providers[0].status == "failed" and cache.list_snapshots("lambda") == []


def test_regions_run_concurrently_with_a_bounded_pool(shipped):
    aws = FakeAdapter(shipped, provider="aws", delay=0.05)
    regions = sorted(set(aws.rows["region"]))[:8]
    refresh(["aws"], FetchOptions(regions=regions), adapters={"aws": aws}, max_workers=3)
    assert aws.max_active == 3


def test_interrupted_write_leaves_the_previous_snapshot(shipped, monkeypatch):
    lam = FakeAdapter(shipped, factor=1.1)
    refresh(["lambda"], FetchOptions(), adapters={"lambda": lam})
    before, _ = load_offers()
    real_replace = os.replace

    def crash_on_metadata(src, dst):
        if str(dst).endswith(".json"):
            raise OSError("disk full")  # the .csv was renamed in place, its .json (the commit marker) never is
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_metadata)
    failed = refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=3.0)})
    monkeypatch.setattr(os, "replace", real_replace)
    # issue 33: one line in the provider's outcome (the refresh exits 3), not an OSError traceback
    assert not failed.ok and "cannot write the price snapshot to " in failed.providers[0].error
    assert failed.providers[0].error.endswith("disk full; the previous snapshot is kept")
    assert not list((cache.cache_dir() / "snapshots" / "lambda").glob("*.csv"))[1:]  # no half snapshot left
    after, _ = load_offers()
    lam_before = before[before["provider"] == "lambda"]["usd_per_hour"].sort_values().tolist()
    lam_after = after[after["provider"] == "lambda"]["usd_per_hour"].sort_values().tolist()
    assert lam_after == lam_before
    assert not list((cache.cache_dir() / "snapshots" / "lambda").glob(".*.tmp"))


def test_corrupted_snapshot_is_reported_and_the_last_good_one_used(shipped):
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.2)})
    newest = cache.list_snapshots("lambda")[-1]
    newest.csv_path.write_text(newest.csv_path.read_text().replace("fake-api", "hand-edited", 1))
    df, info = load_offers()
    assert any("checksum mismatch" in w for w in info.warnings)
    lam = df[df["provider"] == "lambda"].set_index("instance_type")["usd_per_hour"]
    ship = shipped[shipped["provider"] == "lambda"].set_index("instance_type")["usd_per_hour"]
    assert (lam / ship.loc[lam.index]).round(3).eq(1.1).all()  # the 1.1 snapshot, not the edited 1.2 one


def test_two_refreshes_at_once_do_not_interleave(shipped):
    shared = {"active": 0, "max": 0}
    a = FakeAdapter(shipped, factor=1.1, delay=0.2, shared=shared)
    b = FakeAdapter(shipped, factor=1.3, delay=0.2, shared=shared)
    inside = []
    real_write = cache.write_snapshot

    def tracking_write(*args, **kw):
        inside.append(("start", time.perf_counter()))
        out = real_write(*args, **kw)
        inside.append(("end", time.perf_counter()))
        return out

    cache.write_snapshot = tracking_write
    try:
        threads = [threading.Thread(target=refresh, args=(["lambda"], FetchOptions()), kwargs={"adapters": {"lambda": x}})
                   for x in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        cache.write_snapshot = real_write
    snaps = cache.list_snapshots("lambda")
    assert len(snaps) == 2 and all(s.ok for s in snaps)
    # the second refresh fetches only after the first has written: never both adapters at once
    assert shared["max"] == 1
    assert [k for k, _ in inside] == ["start", "end", "start", "end"]


def test_a_held_lock_gives_a_clear_error(shipped):
    from gpuopt.kernel.errors import SnapshotError

    with cache.lock():
        with pytest.raises(SnapshotError, match="another `gpuopt prices refresh` holds the cache lock"):
            refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped)}, lock_timeout_s=0.1)


def test_history_prices_a_past_date_and_diff_shows_changes(shipped):
    from pricing_cache.history import diff_since

    lam = shipped[shipped["provider"] == "lambda"].copy()
    # dated after the shipped lambda prices (lambda.ai, 2026-09-20), so that day's prices are the cached ones
    old = lam.assign(as_of="2026-09-25")
    with cache.lock():
        cache.write_snapshot("lambda", old, regions={"done": ["us-east-1"]}, as_of="2026-09-25")
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.25)})
    past, info = load_offers(on_date=dt.date(2026, 9, 30))
    assert info.origins["lambda"].startswith("cache")
    p = past[past["provider"] == "lambda"].set_index("instance_type")["usd_per_hour"]
    assert (p == lam.set_index("instance_type")["usd_per_hour"].loc[p.index]).all()
    d = diff_since("2026-09-30", ["lambda"])
    assert len(d.changed) == len(lam) and not d.added and not d.removed
    assert all(c["change_pct"] == pytest.approx(25.0, abs=0.01) for c in d.changed)


def test_retention_deletes_old_snapshots_but_keeps_the_newest(shipped, monkeypatch):
    lam = shipped[shipped["provider"] == "lambda"]
    long_ago = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    with cache.lock():
        cache.write_snapshot("lambda", lam, regions={}, as_of="2020-01-01", created_at=long_ago)
    assert len(cache.list_snapshots("lambda")) == 1  # the only (newest) one is kept however old
    monkeypatch.setenv("GPUOPT_RETENTION_DAYS", "30")
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped)})
    snaps = cache.list_snapshots("lambda")
    assert len(snaps) == 1 and snaps[0].as_of != "2020-01-01"


def test_stale_prices_warn_on_every_command(shipped, monkeypatch):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    # an on-prem price list imported in January (a provider the shipped snapshot does not have)
    lam = shipped[shipped["provider"] == "lambda"].assign(as_of="2026-01-01", provider="onprem")
    with cache.lock():
        cache.write_snapshot("onprem", lam, regions={"done": ["us-east-1"]}, as_of="2026-01-01")
    monkeypatch.setenv("GPUOPT_MAX_PRICE_AGE_DAYS", "30")
    runner = CliRunner()
    for args in (["prices", "list", "--provider", "onprem"], ["prices", "status"],
                 ["recommend", "--budget", "5000", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "50",
                  "--provider", "onprem"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        assert "gpuopt: warning: onprem prices are older than 30 days (oldest 2026-01-01" in r.stderr
        assert "gpuopt prices import" in r.stderr  # no live adapter for onprem: the fix is an import
    r = runner.invoke(app, ["prices", "list", "--provider", "onprem", "--format", "json"])
    d = json.loads(r.stdout)
    assert d["prices"]["providers"]["onprem"]["stale"] is True


def test_bad_settings_are_named():
    from typer.testing import CliRunner

    from gpuopt.cli import app

    os.environ["GPUOPT_MAX_PRICE_AGE_DAYS"] = "soon"
    try:
        r = CliRunner().invoke(app, ["prices", "list"])
    finally:
        del os.environ["GPUOPT_MAX_PRICE_AGE_DAYS"]
    assert r.exit_code == 1 and r.stderr.startswith("gpuopt: error: GPUOPT_MAX_PRICE_AGE_DAYS")


def test_import_a_skypilot_file_into_the_cache():
    from typer.testing import CliRunner

    from gpuopt.cli import app
    from pricing_cache.build_snapshot import INPUTS_DIR

    from pricing_cache.refresh import previous_rows

    f = INPUTS_DIR / "lambda_vms_v8_gpu_us-east-1.csv"
    base = previous_rows("lambda", "2026-09-01")  # the lambda offers in effect that day, before the import
    r = CliRunner().invoke(app, ["prices", "import", str(f), "--input-format", "skypilot", "--provider", "lambda",
                                 "--as-of", "2026-09-01", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (snap,) = d["snapshots"]
    # 2026-09-01 is before the shipped lambda prices (lambda.ai as of 2026-09-20): a history snapshot, merged with
    # the lambda offers in effect that day (the shipped rows dated on or before it: none; rows of unknown date may be
    # later, so they are not): the file's 18 offers (19 rows, 1 unknown_gpu) added
    assert snap["provider"] == "lambda" and snap["as_of"] == "2026-09-01" and snap["current"] is False
    assert snap["added"] + snap["changed"] + snap["unchanged"] == 18
    assert snap["unchanged"] + snap["changed"] == len(base) - snap["kept"] and snap["rows"] == 18 + snap["kept"]
    assert len(base) == 0 and snap["added"] == 18 and snap["kept"] == 0
    assert d["skipped_by_reason"] == {"unknown_gpu": 1}
    r = CliRunner().invoke(app, ["prices", "import", str(f), "--input-format", "skypilot"])
    assert r.exit_code == 1 and "provider: a SkyPilot catalog needs --provider" in r.stderr
    r = CliRunner().invoke(app, ["prices", "import", str(f), "--input-format", "xlsx", "--provider", "lambda"])
    assert r.exit_code == 1 and r.stderr.startswith("gpuopt: error: --input-format: unknown import format 'xlsx'")


def test_import_dated_in_the_future_is_refused():
    from gpuopt.kernel.errors import InputError
    from pricing_cache.build_snapshot import INPUTS_DIR
    from pricing_cache.importing import import_file

    with pytest.raises(InputError, match="as_of: 2999-01-01 is in the future"):
        import_file(INPUTS_DIR / "lambda_vms_v8_gpu_us-east-1.csv", "skypilot", provider="lambda", as_of="2999-01-01")


def test_back_dated_import_does_not_borrow_later_rows(shipped):
    # an import dated before the shipped catalog holds only its own rows: later prices never leak into history
    from pricing_cache.build_snapshot import INPUTS_DIR
    from pricing_cache.importing import import_file

    import_file(INPUTS_DIR / "ec2instances_2017-11-12_gpu_subset.json", "ec2instances", as_of="2017-11-12")
    df, info = load_offers(on_date=dt.date(2018, 1, 1))
    aws = df[df["provider"] == "aws"]
    assert len(aws) and set(aws["as_of"].astype(str).str[:10]) == {"2017-11-12"}
    assert info.origins["aws"].startswith("cache")
    now, _ = load_offers()  # today the shipped rows (valid later) are still the current ones
    assert "2017-11-12" not in set(now[now["provider"] == "aws"]["as_of"]) or \
        len(now[now["provider"] == "aws"]) > len(aws)


def test_unusable_metadata_and_unwritable_cache_are_clear_errors(shipped, monkeypatch, tmp_path):
    from gpuopt.kernel.errors import SnapshotError

    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped)})
    snap = cache.list_snapshots("lambda")[0]
    snap.meta_path.write_text("[1, 2]")
    df, info = load_offers()  # no traceback: the snapshot is skipped, the shipped rows are used
    assert info.origins["lambda"] == "shipped snapshot" and any("not a JSON object" in w for w in info.warnings)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(blocker))
    with pytest.raises(SnapshotError, match="cannot write the price cache"):
        refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped)})


def test_bad_retention_is_refused_before_anything_is_fetched(shipped, monkeypatch):
    from gpuopt.kernel.errors import InputError

    lam = FakeAdapter(shipped)
    monkeypatch.setenv("GPUOPT_RETENTION_DAYS", "inf")
    with pytest.raises(InputError, match="GPUOPT_RETENTION_DAYS"):
        refresh(["lambda"], FetchOptions(), adapters={"lambda": lam})
    assert lam.max_active == 0 and cache.list_snapshots("lambda") == []


def test_a_region_answering_no_offers_keeps_its_previous_rows(shipped):
    class Empty(FakeAdapter):
        def parse_region(self, raw, region, as_of):
            return ParseResult(offers=raw["rows"].iloc[0:0])

    s = refresh(["lambda"], FetchOptions(), adapters={"lambda": Empty(shipped)})
    (p,) = s.providers
    assert p.status == "failed" and "no usable GPU offer" in p.regions_failed["us-east-1"]
    assert cache.list_snapshots("lambda") == []


def test_partial_refresh_is_not_ok(shipped):
    aws = FakeAdapter(shipped, provider="aws", fail={"us-west-2"})
    s = refresh(["aws"], FetchOptions(regions=["us-east-1", "us-west-2"]), adapters={"aws": aws})
    assert s.providers[0].status == "partial" and not s.ok


def test_prices_on_in_the_future_or_with_a_catalog_is_refused(tmp_path):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    r = CliRunner().invoke(app, ["prices", "list", "--prices-on", "2999-01-01"])
    assert r.exit_code == 1 and "--prices-on: 2999-01-01 is in the future" in r.stderr
    f = tmp_path / "o.csv"
    f.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
                 "onprem,dc,box,L4,1,22.35,on_demand,0.5\n")
    r = CliRunner().invoke(app, ["prices", "list", "--catalog", str(f), "--prices-on", "2026-01-01"])
    assert r.exit_code == 1 and "cannot be used with --catalog" in r.stderr


def test_a_cached_snapshot_of_schema_1_is_read_with_its_facts_filled(shipped):
    # a refresh written by a gpuopt of schema 1 (no fabric / zone_kind columns) is still used, never refused
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped)})
    (snap,) = cache.list_snapshots("lambda")
    import hashlib

    import pandas as pd

    old = pd.read_csv(snap.csv_path, dtype=str, keep_default_na=False).drop(
        columns=list(FILLED_FROM_FACTS) + list(ADDED_IN_V3) + list(ADDED_IN_V4), errors="ignore")
    data = old.to_csv(index=False, lineterminator="\n").encode()
    snap.csv_path.write_bytes(data)
    meta = json.loads(snap.meta_path.read_text())
    meta.update(schema_version=1, sha256=hashlib.sha256(data).hexdigest())
    snap.meta_path.write_text(json.dumps(meta))
    (again,) = cache.list_snapshots("lambda")
    assert again.ok, again.error
    df, info = load_offers()
    lam = df[df["provider"] == "lambda"]
    assert info.origins["lambda"].startswith("cache ") and len(lam) == len(old)
    assert set(lam["fabric"]) == {"ethernet"} and set(lam["zone_kind"]) == {""}


def test_a_refresh_validates_every_offer_and_lists_the_refused_rows(shipped):
    """Issue 9 point 2 on the live path: the rows an adapter returns pass providers.validate.validate_offers; the
    refused ones are counted by reason, reported and written to the snapshot's skipped list."""

    class Faulty(FakeAdapter):
        def parse_region(self, raw, region, as_of):
            res = super().parse_region(raw, region, as_of)
            df = res.offers.reset_index(drop=True)
            od = (df["pricing"] == "on_demand").to_numpy()
            first = df.index[od][0]
            df.loc[first, "usd_per_hour"] = float("inf")  # a sentinel no cloud quotes
            df.loc[df.index[od][1], "usd_per_hour"] = 1e-300
            # AWS reports the instance total in the per-GPU field (issue 9: g6.48xlarge read as 8 x 178.8 GiB L4s)
            g6 = (df["instance_type"] == "g6.48xlarge").to_numpy()
            df.loc[g6, "gpu_memory_gib"] = df.loc[g6, "gpu_memory_gib"] * df.loc[g6, "gpu_count"]
            return ParseResult(offers=df, skipped=list(res.skipped))

    aws = Faulty(shipped, provider="aws", factor=1.0)
    s = refresh(["aws"], FetchOptions(regions=["us-east-1"]), adapters={"aws": aws})
    (p,) = s.providers
    assert p.status == "refreshed"
    assert p.skipped_by_reason == {"bad_price": 2} and p.rows_skipped == 2
    assert any(n.startswith("2 price rows not used, by reason: bad_price 2") for n in p.notes)
    assert any("g6.48xlarge us-east-1: gpu_memory_gib 178.8" in n and "divided to 22.35" in n for n in p.notes)
    assert s.to_dict()["providers"][0]["skipped_by_reason"] == {"bad_price": 2}
    snap = cache.list_snapshots("aws")[-1]
    assert snap.meta["skipped"] == {"bad_price": 2} and snap.meta["skipped_total"] == 2
    listed = cache.read_skipped(snap)
    assert [x["reason"].split(":")[0] for x in listed] == ["bad_price", "bad_price"]
    df, _ = load_offers()
    east = df[(df["provider"] == "aws") & (df["region"] == "us-east-1")]
    assert east["usd_per_hour"].between(1e-3, 1e3).all()  # neither sentinel reached the offers
    g6 = east[east["instance_type"] == "g6.48xlarge"]
    assert len(g6) and g6["gpu_memory_gib"].round(2).eq(22.35).all()  # 178.8 / 8, the L4's 24 GB as GiB
    # the retention deletes an old snapshot's skipped list with it
    refresh(["aws"], FetchOptions(regions=["us-east-1"]), adapters={"aws": aws})
    first = snap.meta_path.parent / snap.meta["skipped_file"]
    assert first.is_file()
    gone = cache.apply_retention("aws", now=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=401))
    assert first in gone and not first.exists() and len(cache.list_snapshots("aws")) == 1


def test_an_older_import_is_never_the_base_of_a_refresh(shipped):
    """A back-dated import is history: a later refresh of one region merges with the current (shipped) offers of
    the other regions, not with the old file's."""
    from pricing_cache.build_snapshot import INPUTS_DIR
    from pricing_cache.importing import import_file

    out = import_file(INPUTS_DIR / "ec2instances_2017-11-12_gpu_subset.json", "ec2instances", as_of="2017-11-12")
    assert out["snapshots"][0]["current"] is False
    aws = FakeAdapter(shipped, provider="aws", factor=1.0)
    s = refresh(["aws"], FetchOptions(regions=["us-east-1"]), adapters={"aws": aws})
    assert s.providers[0].status == "refreshed"
    df, info = load_offers()
    a = df[df["provider"] == "aws"]
    ship = shipped[shipped["provider"] == "aws"]
    assert info.origins["aws"].startswith("cache ") and set(a["region"]) == set(ship["region"])
    assert len(a) == len(ship)


def test_merge_counts_of_an_import_and_of_a_region_refresh():
    """merge_offers on hand-made rows: by key, an import adds, changes and keeps; a region refresh removes."""
    import pandas as pd

    from pricing_cache.refresh import merge_offers
    from providers._common import offers_frame

    def row(region, itype, pricing, price, source="quote", payment=""):
        return {"provider": "onprem", "region": region, "zone": "", "instance_type": itype, "gpu_model": "L4",
                "gpu_count": 1.0, "gpu_memory_gib": 22.35, "vcpus": 4.0, "memory_gib": 16.0, "interconnect": "pcie",
                "pricing": pricing, "payment": payment, "upfront_usd": 0.0, "recurring_usd_per_hour": price,
                "usd_per_hour": price, "term_hours": 8760.0 if pricing == "reserved_1y" else 0.0,
                "currency": "USD", "source": source, "as_of": "2026-10-01"}

    prev = offers_frame([row("a", "x", "on_demand", 1.0), row("a", "y", "on_demand", 2.0), row("b", "x", "on_demand", 1.5),
                         row("a", "x", "reserved_1y", 0.6, payment="no_upfront")])
    new = offers_frame([row("a", "x", "on_demand", 1.0), row("a", "y", "on_demand", 2.2), row("a", "z", "on_demand", 3.0),
                        row("a", "x", "reserved_1y", 0.7, source="rule:ratio", payment="no_upfront")])
    merged, c = merge_offers(prev, new)
    assert (c.added, c.changed, c.unchanged, c.kept, c.removed, c.kept_quoted) == (1, 1, 1, 2, 0, 1)
    assert len(merged) == 5 and c.kept_regions == ["a", "b"]
    res = merged[(merged["instance_type"] == "x") & (merged["pricing"] == "reserved_1y")]
    assert float(res["usd_per_hour"].iloc[0]) == 0.6  # the quote stays; the estimate is not written over it
    merged, c = merge_offers(prev, new.iloc[:3], replace_regions=["a"])
    assert (c.added, c.changed, c.unchanged, c.kept, c.removed) == (1, 1, 1, 1, 1)
    assert sorted(merged["region"] + "/" + merged["instance_type"]) == ["a/x", "a/y", "a/z", "b/x"]
    assert isinstance(merged, pd.DataFrame)
