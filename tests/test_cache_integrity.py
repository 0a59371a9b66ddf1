"""Cache metadata and values checked on every read (issue 13): a snapshot dated in the future or not dated, or
hand-edited with a recomputed checksum (negative or infinite prices), is reported — in ``prices status`` and as a
warning — and skipped; the previous good snapshot of that provider is used, and later refreshes still become
current."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from gpuopt import api
from pricing_cache import cache
from pricing_cache.refresh import current_as_of, refresh
from pricing_cache.store import load_offers
from providers.base import FetchOptions
from tests.test_cache_refresh import FakeAdapter


@pytest.fixture(scope="module")
def shipped():
    df, _ = load_offers(use_cache=False)
    return df


def _lambda_ratio(df, shipped) -> set[float]:
    """The factors the served lambda prices are of the shipped ones (one value when one snapshot is served)."""
    lam = df[df["provider"] == "lambda"].set_index(["region", "instance_type", "pricing"])["usd_per_hour"]
    ship = shipped[shipped["provider"] == "lambda"].set_index(["region", "instance_type", "pricing"])["usd_per_hour"]
    return set((lam / ship.loc[lam.index]).round(3))


def _rewrite_meta(snap, **changes) -> None:
    meta = json.loads(snap.meta_path.read_text())
    meta.update(changes)
    snap.meta_path.write_text(json.dumps(meta))


def _status_entry(snap) -> dict:
    st = api.prices_status()
    return next(s for s in st["cache"]["snapshots"] if s["file"] == str(snap.csv_path))


@pytest.mark.parametrize("as_of, why", [("2999-01-01", "is in the future"), ("not-a-date", "is not a date"),
                                         ("9999-99-99", "is not a date"), ("2999-01-01Tnoon", "is not a date")])
def test_a_snapshot_dated_in_the_future_or_not_dated_is_reported_and_skipped(shipped, as_of, why):
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.3)})
    bad = cache.list_snapshots("lambda")[-1]
    _rewrite_meta(bad, as_of=as_of)  # the metadata is not covered by the checksum (only the offers file is)

    df, info = load_offers()
    assert _lambda_ratio(df, shipped) == {1.1}  # the previous good one, not the 1.3 one
    assert any(f"{bad.meta_path.name} skipped" in w and why in w for w in info.warnings)
    entry = _status_entry(bad)
    assert entry["ok"] is False and why in entry["error"]
    assert current_as_of("lambda") == dt.datetime.now(dt.timezone.utc).date().isoformat()


def test_a_future_snapshot_no_longer_hides_a_later_refresh(shipped):
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    lam = shipped[shipped["provider"] == "lambda"]
    with cache.lock():
        cache.write_snapshot("lambda", lam.assign(usd_per_hour=lam["usd_per_hour"] * 5, as_of="2999-01-01"),
                             regions={"done": sorted(set(lam["region"]))}, as_of="2999-01-01")
    out = refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.2)})
    assert out.providers[0].status == "refreshed"
    df, info = load_offers()
    assert _lambda_ratio(df, shipped) == {1.2}
    assert any("2999-01-01 is in the future" in w for w in info.warnings)


def test_an_as_of_within_a_day_of_clock_skew_is_accepted(shipped):
    tomorrow = (dt.datetime.now(dt.timezone.utc).date() + dt.timedelta(days=1)).isoformat()
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    snap = cache.list_snapshots("lambda")[-1]
    _rewrite_meta(snap, as_of=tomorrow)
    assert cache.list_snapshots("lambda")[-1].ok
    df, info = load_offers()
    assert _lambda_ratio(df, shipped) == {1.1} and not info.warnings


@pytest.mark.parametrize("value, why", [("-2.5", "usd_per_hour negative or not finite (-2.5)"),
                                        ("inf", "usd_per_hour negative or not finite (inf)"),
                                        ("", "usd_per_hour empty")])
def test_a_hand_edited_snapshot_with_a_recomputed_checksum_is_not_served(shipped, value, why):
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.3)})
    bad = cache.list_snapshots("lambda")[-1]
    lines = bad.csv_path.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    col = header.index("usd_per_hour")
    cells = lines[3].rstrip("\n").split(",")
    assert len(cells) == len(header)  # no quoted comma on this line: the edit hits the price cell
    cells[col] = value
    lines[3] = ",".join(cells) + "\n"
    data = "".join(lines).encode()
    bad.csv_path.write_bytes(data)
    _rewrite_meta(bad, sha256=hashlib.sha256(data).hexdigest())  # the attacker recomputes the checksum
    assert cache.list_snapshots("lambda")[-1].ok  # the metadata alone cannot tell

    df, info = load_offers()
    assert (df["usd_per_hour"] >= 0).all()
    assert _lambda_ratio(df, shipped) == {1.1}
    assert any(f"{bad.meta_path.name} skipped" in w and why in w and "line 4" in w for w in info.warnings)
    entry = _status_entry(bad)
    assert entry["ok"] is False and why in entry["error"]
    # the retention keeps the newest *usable* snapshot, not the edited one
    newest, warnings = cache.newest_good("lambda")
    assert newest is not None and newest.meta_path != bad.meta_path and warnings


def test_a_snapshot_whose_rows_name_another_provider_is_not_served(shipped):
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.1)})
    refresh(["lambda"], FetchOptions(), adapters={"lambda": FakeAdapter(shipped, factor=1.3)})
    bad = cache.list_snapshots("lambda")[-1]
    data = bad.csv_path.read_bytes().replace(b"\nlambda,", b"\nrunpod,", 1)
    bad.csv_path.write_bytes(data)
    _rewrite_meta(bad, sha256=hashlib.sha256(data).hexdigest())
    df, info = load_offers()
    assert _lambda_ratio(df, shipped) == {1.1}
    assert any("provider not 'lambda'" in w for w in info.warnings)
