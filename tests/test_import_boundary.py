"""The input boundary of the price importers (issue 13, points 1 and 2): every file given to
``gpuopt prices import FILE --input-format ...`` (and ``--catalog``) gets offers or a one-line gpuopt error naming the
file, never a traceback, and never an offer with an infinite, negative or absurd price or GPU count.

The example tests replay the failures the issue measured; the fuzz tests (hypothesis, bounded: a fixed number of
examples per importer, no deadline) feed each importer random bytes, real fixture files with random subtrees
replaced (random JSON shapes), and random CSV rows. Files: the recorded fixtures under tests/fixtures/ and
pricing_cache/data/inputs/ (their READMEs give the sources).
"""

from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuopt.kernel.errors import GpuoptError, InputError
from pricing_cache.build_snapshot import INPUTS_DIR
from pricing_cache.importing import _parse
from providers import _input
from providers.offers_csv import parse_offers_csv, read_offers_csv

FIX = Path(__file__).resolve().parent / "fixtures"
AZURE = FIX / "azure" / "retail_eastus_page1.json"
GCP = FIX / "gcp" / "skus_gpu_2025-06-16.derived.json"
AWS_JSON = FIX / "aws" / "GetProducts_gpu_us-east-1.derived.json"
AWS_CSV = FIX / "aws" / "AmazonEC2_bulk_sample.derived.csv"
EC2 = INPUTS_DIR / "ec2instances_2017-11-12_gpu_subset.json"
SKYPILOT = INPUTS_DIR / "azure_vms_v6_gpu_NC_ND_NV_us.csv"
OFFERS = FIX / "offers" / "onprem_ok.csv"
AS_OF = "2026-11-01"

#: format -> (a real file of that format, the provider argument)
REAL = {"azure-retail": (AZURE, None), "gcp-skus": (GCP, None), "aws-price-list": (AWS_JSON, None),
        "aws-bulk-csv": (AWS_CSV, None), "ec2instances": (EC2, None), "skypilot": (SKYPILOT, "azure"),
        "offers": (OFFERS, None)}
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _parse_file(path: Path, fmt: str, provider: str | None = None):
    return _parse(path, fmt, provider, None if fmt in ("aws-price-list", "aws-bulk-csv", "offers") else AS_OF)


def _assert_sane(offers) -> None:
    """No offer leaves an importer with a non-finite or negative price, or a GPU count outside (0, 64]."""
    for c in ("usd_per_hour", "recurring_usd_per_hour", "upfront_usd"):
        v = offers[c].astype(float)
        assert v.map(math.isfinite).all() and (v >= 0).all(), (c, v.tolist())
    g = offers["gpu_count"].astype(float)
    assert g.map(math.isfinite).all() and (g > 0).all() and (g <= _input.MAX_GPU_COUNT).all(), g.tolist()


def _result_or_gpuopt_error(path: Path, fmt: str, provider: str | None) -> None:
    try:
        offers, _skipped, _notes = _parse_file(path, fmt, provider)
    except GpuoptError as e:
        assert "\n" not in str(e), str(e)
        return
    _assert_sane(offers)


# ---------------------------------------------------------------------------------------------------------------
# the real files still import (the boundary refuses nothing valid)


@pytest.mark.parametrize("fmt", sorted(REAL))
def test_real_files_still_parse(fmt):
    path, prov = REAL[fmt]
    offers, skipped, _ = _parse_file(path, fmt, prov)
    assert len(offers) > 0
    _assert_sane(offers)
    assert not [s for s in skipped if s["reason"].split(":")[0] in ("bad_price", "bad_gpu_count", "bad_gpu_memory")]


# ---------------------------------------------------------------------------------------------------------------
# encoding: UTF-8 with or without BOM; anything else one line naming the file


@pytest.mark.parametrize("fmt", ["azure-retail", "gcp-skus", "aws-price-list", "ec2instances"])
def test_json_with_bom_is_accepted(tmp_path, fmt):
    path, prov = REAL[fmt]
    plain, _, _ = _parse_file(path, fmt, prov)
    bom = tmp_path / ("bom_" + path.name)
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    offers, _, _ = _parse_file(bom, fmt, prov)
    assert len(offers) == len(plain) > 0
    assert sorted(offers["usd_per_hour"].round(6)) == sorted(plain["usd_per_hour"].round(6))


@pytest.mark.parametrize("fmt", ["azure-retail", "gcp-skus", "aws-price-list", "aws-bulk-csv", "ec2instances",
                                 "skypilot", "offers"])
def test_non_utf8_file_is_one_line_error_naming_the_file(tmp_path, fmt):
    path, prov = REAL[fmt]
    bad = tmp_path / ("latin1_" + path.name)
    raw = path.read_bytes()
    cut = len(raw) // 2
    bad.write_bytes(raw[:cut] + b"\xe9" + raw[cut:])  # a Latin-1 e-acute in the middle
    with pytest.raises(InputError) as e:
        _parse_file(bad, fmt, prov)
    assert bad.name in str(e.value) and "UTF-8" in str(e.value) and "\n" not in str(e.value)


def test_non_utf8_import_through_the_cli_is_exit_1_without_traceback(tmp_path):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    bad = tmp_path / "retail.json"
    bad.write_bytes(b'{"Items": [{"armSkuName": "Standard_NC6s_v3", "location": "\xe9ast"}]}')
    res = CliRunner().invoke(app, ["prices", "import", str(bad), "--input-format", "azure-retail", "--as-of", AS_OF])
    assert res.exit_code == 1
    assert "retail.json is not UTF-8 text (byte 0xe9 at offset" in res.output
    assert "Traceback" not in res.output


# ---------------------------------------------------------------------------------------------------------------
# structure: wrong JSON shapes name the path in the document


def test_azure_items_entry_not_an_object_names_its_path(tmp_path):
    doc = json.loads(AZURE.read_text(encoding="utf-8"))
    doc["Items"][3] = "Standard_NC6s_v3"
    p = tmp_path / "retail.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"retail.json: Items\[3\] is a text, not an object"):
        _parse_file(p, "azure-retail")


def test_azure_item_field_of_wrong_shape_names_its_path(tmp_path):
    doc = json.loads(AZURE.read_text(encoding="utf-8"))
    doc["Items"][1]["retailPrice"] = {"USD": 1.0}
    p = tmp_path / "retail.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"retail.json: Items\[1\]\.retailPrice is an object, not a text or number"):
        _parse_file(p, "azure-retail")


def test_gcp_sku_with_wrong_nesting_names_its_path(tmp_path):
    doc = json.loads(GCP.read_text(encoding="utf-8"))
    skus = doc["skus"] if isinstance(doc, dict) else doc
    skus[0]["category"] = 7
    p = tmp_path / "skus.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"skus\[0\]\.category is a number, not an object"):
        _parse_file(p, "gcp-skus")


def test_ec2instances_entry_not_an_object_names_its_index(tmp_path):
    doc = json.loads(EC2.read_text(encoding="utf-8"))
    doc[2] = [1, 2]
    p = tmp_path / "instances.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=r"import:instances.json: \[2\] is a list, not an instance object"):
        _parse_file(p, "ec2instances")


def test_json_syntax_error_names_line_and_column(tmp_path):
    p = tmp_path / "skus.json"
    p.write_text('{"skus": [\n  {"skuId": "1",}\n]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"skus.json is not JSON: .* at line 2 column"):
        _parse_file(p, "gcp-skus")


def test_deeply_nested_json_is_an_error_not_a_recursion_crash(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match="nested too deeply"):
        _parse_file(p, "azure-retail")


def test_json_infinity_is_refused(tmp_path):
    p = tmp_path / "inf.json"
    p.write_text('{"Items": [{"retailPrice": Infinity}]}', encoding="utf-8")
    with pytest.raises(InputError, match="Infinity is not a JSON number"):
        _parse_file(p, "azure-retail")


# ---------------------------------------------------------------------------------------------------------------
# gzip


def test_gzip_file_is_read(tmp_path):
    p = tmp_path / "retail.json.gz"
    p.write_bytes(gzip.compress(AZURE.read_bytes()))
    plain, _, _ = _parse_file(AZURE, "azure-retail")
    offers, _, _ = _parse_file(p, "azure-retail")
    assert len(offers) == len(plain) > 0


@pytest.mark.parametrize("fmt", ["azure-retail", "aws-bulk-csv", "skypilot"])
def test_truncated_gzip_is_one_line_error(tmp_path, fmt):
    path, prov = REAL[fmt]
    data = gzip.compress(path.read_bytes())
    p = tmp_path / (path.name + ".gz")
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"\.gz: truncated gzip file"):
        _parse_file(p, fmt, prov)


# ---------------------------------------------------------------------------------------------------------------
# duplicate columns


def test_skypilot_duplicate_column_is_refused_naming_it(tmp_path):
    lines = SKYPILOT.read_text(encoding="utf-8").splitlines()
    p = tmp_path / "vms.csv"
    p.write_text(lines[0] + ",Price\n" + lines[1] + ",0.01\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"column\(s\) given twice: Price"):
        _parse_file(p, "skypilot", "azure")


def test_aws_bulk_duplicate_column_is_refused_naming_it(tmp_path):
    lines = AWS_CSV.read_text(encoding="utf-8-sig").splitlines()
    lines[5] = lines[5] + ',"PricePerUnit"'
    p = tmp_path / "bulk.csv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 6: column\(s\) given twice: PricePerUnit"):
        _parse_file(p, "aws-bulk-csv")


def test_offers_duplicate_column_is_refused_naming_it():
    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,usd_per_hour"
    with pytest.raises(InputError, match=r"column\(s\) given twice: usd_per_hour"):
        parse_offers_csv(head + "\nonprem,dc1,box,H100,8,80,on_demand,20,21\n")


# ---------------------------------------------------------------------------------------------------------------
# finiteness and ranges


def test_skypilot_infinite_prices_and_counts_are_skipped_with_a_reason(tmp_path):
    lines = SKYPILOT.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    rec = next(r for r in (ln for ln in lines[1:]) if "Standard_NC12s_v3" in r and "eastus," in r)
    p = tmp_path / "vms.csv"
    p.write_text(lines[0] + "\n" + rec + "\n", encoding="utf-8")
    ok, _, _ = _parse_file(p, "skypilot", "azure")
    assert len(ok) >= 1
    import csv
    import io

    row = next(csv.reader(io.StringIO(rec)))
    row[header.index("Price")] = "inf"
    p.write_text(lines[0] + "\n" + ",".join(f'"{x}"' if "," in x else x for x in row) + "\n", encoding="utf-8")
    offers, skipped, _ = _parse_file(p, "skypilot", "azure")
    # the on-demand row is refused (an import then checks the spot row against the cache's on-demand price:
    # tests/test_import_partial.py::test_prices_no_cloud_quotes_are_refused_at_import)
    assert offers["pricing"].tolist() == ["spot"] and offers["usd_per_hour"].tolist() == [0.7956]
    assert [s["reason"].split(":")[0] for s in skipped] == ["bad_price"]
    row[header.index("Price")] = "6.12"
    row[header.index("AcceleratorCount")] = "1e200"
    p.write_text(lines[0] + "\n" + ",".join(f'"{x}"' if "," in x else x for x in row) + "\n", encoding="utf-8")
    offers, skipped, _ = _parse_file(p, "skypilot", "azure")
    # Standard_NC12s_v3 is in the documented Azure size table: its count (2 V100) is taken from there, with a note
    assert len(offers) > 0 and set(offers["gpu_count"]) == {2.0}


def test_skypilot_huge_accelerator_count_is_skipped(tmp_path):
    p = tmp_path / "vms.csv"
    p.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
                 "AvailabilityZone,GpuInfo\n"
                 "p4d.24xlarge,A100,1e200,96,1152,32.7726,,us-east-1,,\n", encoding="utf-8")
    offers, skipped, _ = _parse_file(p, "skypilot", "aws")
    assert offers.empty
    assert [s["reason"].split(":")[0] for s in skipped] == ["bad_gpu_count"]


def test_offers_csv_count_times_memory_overflow_is_refused_naming_the_line():
    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour"
    with pytest.raises(InputError, match=r"line 2: gpu_count 1e200 is above 64"):
        parse_offers_csv(head + "\nonprem,dc1,box,H100,1e200,80,on_demand,20\n")
    with pytest.raises(InputError, match=r"line 2: gpu_memory_gib 1e300 is above 16384"):
        parse_offers_csv(head + "\nonprem,dc1,box,H100,8,1e300,on_demand,20\n")
    # an absurd finite price is a row the validation refuses (bad_price), as test_import_partial checks
    offers, skipped, _ = _parse_offers_text(head + "\nonprem,dc1,box,H100,8,80,on_demand,20\n"
                                            "onprem,dc2,box,H100,8,80,on_demand,1e308\n")
    assert offers["region"].tolist() == ["dc1"] and [s["reason"][:9] for s in skipped] == ["bad_price"]
    with pytest.raises(InputError, match=r"line 2: usd_per_hour 'inf' is not a finite number"):
        parse_offers_csv(head + "\nonprem,dc1,box,H100,8,80,on_demand,inf\n")


def _parse_offers_text(text: str):
    import tempfile

    d = Path(tempfile.mkdtemp())
    (d / "offers.csv").write_text(text, encoding="utf-8")
    return _parse_file(d / "offers.csv", "offers")


def test_offers_csv_bounds_hold_on_the_columnar_reader_too():
    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour"
    rows = [f"onprem,dc{i},box,H100,8,80,on_demand,20" for i in range(2500)]
    rows[1234] = "onprem,dc1234,box,H100,1e200,80,on_demand,20"
    with pytest.raises(InputError, match=r"line 1236: gpu_count 1e200 is above 64"):
        parse_offers_csv(head + "\n" + "\n".join(rows) + "\n")


def test_check_offer_values_skips_with_reasons():
    import pandas as pd

    ok, _, _ = _parse_file(OFFERS, "offers")
    bad = pd.concat([ok.iloc[:1]] * 4, ignore_index=True)
    bad.loc[0, "usd_per_hour"] = float("inf")
    bad.loc[1, "gpu_count"] = 1e200
    bad.loc[2, "gpu_memory_gib"] = float("inf")
    bad.loc[3, "upfront_usd"] = -1.0
    kept, skipped = _input.check_offer_values(bad, "t")
    assert kept.empty
    assert [s.reason.split(":")[0] for s in skipped] == ["bad_price", "bad_gpu_count", "bad_gpu_memory", "bad_price"]


def test_catalog_with_infinite_price_is_a_one_line_error(tmp_path):
    p = tmp_path / "offers.csv"
    p.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
                 "onprem,dc1,box,H100,8,80,on_demand,Infinity\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"catalog: offers.csv line 2: usd_per_hour 'Infinity' is not a finite number"):
        read_offers_csv(p)


# ---------------------------------------------------------------------------------------------------------------
# fuzzing (bounded): a result or a gpuopt error, never another exception; never a bad number in the offers


@FUZZ
@given(fmt=st.sampled_from(sorted(REAL)), data=st.binary(max_size=300))
def test_fuzz_random_bytes(tmp_path_factory, fmt, data):
    p = tmp_path_factory.mktemp("fz") / "file"
    p.write_bytes(data)
    _result_or_gpuopt_error(p, fmt, REAL[fmt][1])


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.sampled_from(["", "inf", "-1", "1e308", "NaN", "0", "USD", "EUR", "Consumption", "Linux",
                                      "1 Hour", "OnDemand", "Reserved", "Hrs", "Compute", "GPU", "3 Years",
                                      "us-east-1", "eastus", "us-central1", "Standard_NC6s_v3", "p4d.24xlarge"]),
                     st.text(max_size=8))
_JSON = st.recursive(_SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                      st.dictionaries(st.text(max_size=6), kids, max_size=3)),
                     max_leaves=8)


def _paths(doc, prefix=()):
    """Every path (tuple of keys / indices) into a JSON document, the root first."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _cut(doc, limit: int):
    """The document with lists cut to ``limit`` entries (a small file keeps the fuzzing fast)."""
    if isinstance(doc, dict):
        return {k: _cut(v, limit) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_cut(v, limit) for v in doc[:limit]]
    return doc


_DOCS = {fmt: _cut(json.loads(REAL[fmt][0].read_text(encoding="utf-8-sig")), 4)
         for fmt in ("azure-retail", "gcp-skus", "aws-price-list", "ec2instances")}
_PATHS = {fmt: list(_paths(doc)) for fmt, doc in _DOCS.items()}


@FUZZ
@given(fmt=st.sampled_from(sorted(_DOCS)), data=st.data())
def test_fuzz_json_shapes(tmp_path_factory, fmt, data):
    """A real file of the format with 1 to 3 random subtrees replaced by random JSON."""
    doc = copy.deepcopy(_DOCS[fmt])
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_PATHS[fmt]))
        new = data.draw(_JSON)
        if not path:
            doc = new
            continue
        node = doc
        try:
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = new
        except (KeyError, IndexError, TypeError):
            continue  # the path went away with an earlier replacement
    p = tmp_path_factory.mktemp("fz") / "file.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    _result_or_gpuopt_error(p, fmt, None)


_CELLS = st.one_of(st.sampled_from(["", "inf", "-inf", "nan", "1e308", "1e200", "-1", "0", "8", "0.5", "80",
                                    "H100", "A100", "V100", "on_demand", "spot", "reserved_1y", "no_upfront",
                                    "eastus", "us-east-1", "Standard_NC12s_v3", "USD", "OnDemand", "Hrs",
                                    "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 1e300}}]}", '"', ","]),
                   st.text(max_size=6))


def _csv_fuzz(fmt: str):
    path, prov = REAL[fmt]
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    head = 6 if fmt == "aws-bulk-csv" else 1
    return lines[:head], lines[head:head + 6], prov


@FUZZ
@given(fmt=st.sampled_from(["skypilot", "offers", "aws-bulk-csv"]), data=st.data())
def test_fuzz_csv_rows(tmp_path_factory, fmt, data):
    """The header of a real file, then its first rows with random cells replaced, and random extra rows."""
    import csv
    import io

    head, rows, prov = _csv_fuzz(fmt)
    width = len(next(csv.reader(io.StringIO(head[-1]))))
    recs = [next(csv.reader(io.StringIO(r))) for r in rows]
    for _ in range(data.draw(st.integers(1, 6))):
        r = data.draw(st.integers(0, len(recs) - 1))
        c = data.draw(st.integers(0, width - 1))
        if c < len(recs[r]):
            recs[r][c] = data.draw(_CELLS)
    recs += data.draw(st.lists(st.lists(_CELLS, min_size=0, max_size=width + 1), max_size=2))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(recs)
    p = tmp_path_factory.mktemp("fz") / "file.csv"
    p.write_text("\n".join(head) + "\n" + out.getvalue(), encoding="utf-8")
    _result_or_gpuopt_error(p, fmt, prov)


@settings(max_examples=90, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fmt=st.sampled_from(["skypilot", "offers", "aws-bulk-csv"]), data=st.data())
def test_fuzz_line_ends_stray_crs_and_gzip(tmp_path_factory, fmt, data):
    """Issue 33: a real file with LF, CRLF or bare-CR line ends reads as with LF; with stray CRs inserted, and
    gzip-compressed (whole or truncated), it gives offers or a one-line gpuopt error, never a ``_csv.Error``."""
    head, rows, prov = _csv_fuzz(fmt)
    text = "\n".join(head + rows) + "\n"
    d = tmp_path_factory.mktemp("fz")
    base = d / "base.csv"
    base.write_text(text, encoding="utf-8")
    want, _, _ = _parse_file(base, fmt, prov)
    text = text.replace("\n", data.draw(st.sampled_from(["\n", "\r\n", "\r"])))
    stray = data.draw(st.integers(0, 3))
    for _ in range(stray):
        i = data.draw(st.integers(0, len(text)))
        text = text[:i] + "\r" + text[i:]
    body = text.encode("utf-8")
    truncated = False
    if data.draw(st.booleans()):
        body = gzip.compress(body)
        if data.draw(st.booleans()):
            body, truncated = body[:data.draw(st.integers(0, len(body) - 1))], True
    p = d / "file.csv"
    p.write_bytes(body)
    if stray == 0 and not truncated:
        got, _, _ = _parse_file(p, fmt, prov)
        assert len(got) == len(want) and list(got["usd_per_hour"]) == list(want["usd_per_hour"])
    else:
        _result_or_gpuopt_error(p, fmt, prov)
