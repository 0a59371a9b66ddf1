"""The checked copy of a user offers CSV (pricing_cache/catalog_cache.py): the second plan over an unchanged file
reads the copy instead of parsing, gets the same offers and the same provenance; an edited file, a new reader, a
torn copy or an unwritable cache folder fall back to the CSV without an error."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES
from pricing_cache import catalog_cache
from pricing_cache.store import load_offers

FIX = Path(__file__).resolve().parent / "fixtures" / "offers"
HEAD = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,payment,usd_per_hour,as_of"
ROWS = ["myco,dc1,box8,A100-80GB,8,80,on_demand,,18.5,2026-11-01",
        "myco,dc1,box8,A100-80GB,8,80,reserved_1y,no_upfront,12.0,2026-11-01",
        "myco,dc2,box1,L4,1,22.35,on_demand,,0.9,2026-11-02",
        "other,r9,g1,H100-80GB,1,80,spot,,2.1,2026-10-30"]


def _csv(tmp_path, rows=ROWS, name="mine.csv") -> Path:
    f = tmp_path / name
    f.write_text(HEAD + "\n" + "\n".join(rows) + "\n")
    return f


def _no_parse(monkeypatch):
    import providers.offers_csv as oc

    def boom(*a, **k):
        raise AssertionError("the CSV was parsed again")
    monkeypatch.setattr(oc, "read_offers_csv", boom)


def test_second_read_comes_from_the_copy_with_the_same_offers_and_provenance(tmp_path, monkeypatch):
    f = _csv(tmp_path)
    first, info1 = load_offers(str(f))
    assert len(list(catalog_cache.folder().glob("*.arrow"))) == 1
    _no_parse(monkeypatch)
    again, info2 = load_offers(str(f))
    # the same dtypes as a parse (strings), the same values, the same per-provider facts and sha256
    assert {c: str(again[c].dtype) for c in OFFER_COLUMNS} == {c: str(first[c].dtype) for c in OFFER_COLUMNS}
    pd.testing.assert_frame_equal(again.reset_index(drop=True), first.reset_index(drop=True))
    assert info2.providers == info1.providers and info2.sha256 == info1.sha256 and info2.rows == 4
    assert info2.providers["myco"].rows_by_pricing == {"on_demand": 2, "reserved_1y": 1}
    # for planning: text columns as categoricals, same values
    cat, _ = load_offers(str(f), categories=True)
    assert all(str(cat[c].dtype) == "category" for c, t in OFFER_DTYPES.items() if t == "string")
    assert cat["usd_per_hour"].tolist() == first["usd_per_hour"].tolist()
    assert cat["region"].astype(str).tolist() == first["region"].astype(str).tolist()


def test_an_edited_file_is_read_again_and_replaces_its_old_copy(tmp_path):
    f = _csv(tmp_path)
    load_offers(str(f))
    st = f.stat()
    f.write_text(HEAD + "\n" + "\n".join(ROWS[:2]) + "\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later modification time, as an edit has
    df, info = load_offers(str(f))
    assert len(df) == 2 and info.rows == 2
    assert len(list(catalog_cache.folder().glob("*.arrow"))) == 1  # the stale copy went


def test_a_torn_copy_is_ignored_and_rewritten(tmp_path):
    f = _csv(tmp_path)
    load_offers(str(f))
    (data,) = catalog_cache.folder().glob("*.arrow")
    data.write_bytes(b"not arrow")
    df, info = load_offers(str(f))
    assert len(df) == 4 and info.rows == 4
    assert catalog_cache.load(f) is not None  # rewritten


def test_an_unwritable_cache_folder_only_costs_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(blocker))  # catalogs/ cannot be made under a file
    f = _csv(tmp_path)
    df, info = load_offers(str(f))
    assert len(df) == 4 and catalog_cache.load(f) is None
    df2, _ = load_offers(str(f))
    pd.testing.assert_frame_equal(df2, df)


def test_a_new_reader_does_not_use_old_copies(tmp_path, monkeypatch):
    f = _csv(tmp_path)
    load_offers(str(f))
    k = catalog_cache.key(f)
    monkeypatch.setattr(catalog_cache, "CATALOG_CACHE_VERSION", catalog_cache.CATALOG_CACHE_VERSION + 1)
    assert catalog_cache.key(f) != k and catalog_cache.load(f) is None


def test_a_bad_csv_is_never_copied(tmp_path):
    from gpuopt.kernel.errors import InputError

    f = _csv(tmp_path, ROWS + ["myco,dc1,box8,A100-80GB,8,80,on_demand,,-1,2026-11-01"])
    with pytest.raises(InputError):
        load_offers(str(f))
    assert not catalog_cache.folder().exists() or not list(catalog_cache.folder().glob("*"))


def test_a_same_size_edit_with_its_old_modification_time_is_still_read_again(tmp_path):
    # cp -p, rsync -t or touch -r keep a file's modification time; a same-size price edit must not keep old prices
    f = _csv(tmp_path)
    load_offers(str(f))
    st = f.stat()
    edited = [r.replace(",18.5,", ",19.5,") for r in ROWS]  # the same length
    f.write_text(HEAD + "\n" + "\n".join(edited) + "\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the modification time put back
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    df, _ = load_offers(str(f))
    assert sorted(df["usd_per_hour"].tolist()) == [0.9, 2.1, 12.0, 19.5]


def test_a_file_saved_while_it_is_read_is_not_copied(tmp_path, monkeypatch):
    # a breaker's race: the file replaced during a long parse; the copy must not keep the old prices under the
    # new file's key
    import providers.offers_csv as oc

    f = _csv(tmp_path)
    real = oc.read_offers_csv

    def read_then_save(path):
        df = real(path)
        new = tmp_path / "new.csv"
        new.write_text(HEAD + "\n" + "\n".join(r.replace(",18.5,", ",17.5,") for r in ROWS) + "\n")
        os.replace(new, f)  # saved as editors and rsync do: a new file renamed over the old one
        return df
    monkeypatch.setattr(oc, "read_offers_csv", read_then_save)
    load_offers(str(f))
    monkeypatch.setattr(oc, "read_offers_csv", real)
    assert catalog_cache.load(f) is None
    df, _ = load_offers(str(f))
    assert 17.5 in df["usd_per_hour"].tolist() and 18.5 not in df["usd_per_hour"].tolist()


def test_a_symlink_and_its_target_keep_their_own_source_label(tmp_path):
    f = _csv(tmp_path, name="prices-2026-11.csv")
    link = tmp_path / "current.csv"
    link.symlink_to(f)
    a, _ = load_offers(str(link))
    b, _ = load_offers(str(f))
    a2, _ = load_offers(str(link))  # from its copy
    assert set(a["source"].astype(str)) == set(a2["source"].astype(str)) == {"user:current.csv"}
    assert set(b["source"].astype(str)) == {"user:prices-2026-11.csv"}


def test_pruning_leaves_other_runs_temporary_files_and_removes_stale_orphans(tmp_path):
    import time

    d = catalog_cache.folder()
    d.mkdir(parents=True, exist_ok=True)
    tmp_json = d / ".tmp-abc.json"
    tmp_json.write_text("{}")
    orphan = d / "deadbeef.arrow"
    orphan.write_bytes(b"x")
    old = time.time() - catalog_cache.ORPHAN_AGE_S - 60
    os.utime(orphan, (old, old))
    load_offers(str(_csv(tmp_path)))  # writes a copy, then prunes
    assert tmp_json.exists() and not orphan.exists()
