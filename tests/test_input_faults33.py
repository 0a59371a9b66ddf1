"""Issue 33, point 4 and the decompression cap of point 2: the last tracebacks of the bad-input campaign are one-line
errors, and every reader of a file refuses what it cannot read (CR line ends and CRs in fields, names over 255
bytes, a full disk, a folder that is a file, gzip bombs, numbers with underscores, NUL bytes, dates in the future or
that do not exist, alias-free long lists, third-party warnings in --format json)."""

from __future__ import annotations

import errno
import gzip
import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from gpuopt.kernel.errors import InputError, SnapshotError

SKY = Path(__file__).parent / "fixtures" / "skypilot" / "aws_g6f_large.csv"
AS_OF = "2026-01-01"


def _run(args, **kw):
    return CliRunner().invoke(app, args, **kw)


def _one_line_error(res, *words, code=1):
    """The command failed with ``code``, one line on stderr naming every word, and no traceback."""
    assert res.exit_code == code, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert "Traceback" not in res.output and err.count("\n") == 0, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(d))
    return d


# ---------------------------------------------------------------------------------------------- 1. CR in CSVs
def _sky_text() -> str:
    return SKY.read_text(encoding="utf-8").replace("\r\n", "\n")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_skypilot_catalog_reads_lf_crlf_and_cr_line_ends_alike(ending):
    from providers.skypilot import parse_skypilot_csv

    want = parse_skypilot_csv(_sky_text(), "aws", AS_OF, "t").offers
    got = parse_skypilot_csv(_sky_text().replace("\n", ending), "aws", AS_OF, "t").offers
    assert len(want) == 3 and got.equals(want)


def test_skypilot_catalog_with_a_cr_inside_an_unquoted_field_names_file_and_line(tmp_path, cache):
    lines = _sky_text().split("\n")
    lines[2] = lines[2].replace("g6f.large", "g6f.\rlarge", 1)
    f = tmp_path / "vms.csv"
    f.write_bytes("\n".join(lines).encode())
    res = _run(["prices", "import", str(f), "--input-format", "skypilot", "--provider", "aws", "--as-of", AS_OF])
    _one_line_error(res, "vms.csv line 3", "carriage return (CR) inside an unquoted field")


def test_bare_cr_skypilot_import_through_the_cli_writes_the_offers(tmp_path, cache):
    f = tmp_path / "vms.csv"
    f.write_bytes(_sky_text().replace("\n", "\r").encode())
    res = _run(["prices", "import", str(f), "--input-format", "skypilot", "--provider", "aws", "--as-of", AS_OF])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output


def test_every_csv_reader_of_user_files_says_where_a_cr_is():
    from providers.offers_csv import parse_offers_csv
    from providers.quotas import _rows_from_csv

    offers = (Path(__file__).parent / "fixtures" / "offers" / "onprem_ok.csv").read_text().replace("\r\n", "\n")
    n = len(parse_offers_csv(offers, "o.csv"))
    assert n > 0 and len(parse_offers_csv(offers.replace("\n", "\r"), "o.csv")) == n
    lines = offers.split("\n")
    lines[1] = lines[1].replace(",", "\rX,", 1)
    with pytest.raises(InputError, match=r"o\.csv line 2: a carriage return \(CR\) inside an unquoted field"):
        parse_offers_csv("\n".join(lines), "o.csv")
    assert _rows_from_csv("provider,region\raws,us-east-1\r", "q.csv") == [(2, {"provider": "aws",
                                                                               "region": "us-east-1"})]
    with pytest.raises(InputError, match=r"q\.csv line 2: a carriage return"):
        _rows_from_csv("provider,region\naws\rX,us\n", "q.csv")


def test_owned_file_with_a_cr_in_a_field_names_the_line(tmp_path):
    from providers.owned import OWNED_COLUMNS, load_owned_file

    f = tmp_path / "owned.csv"
    f.write_bytes((",".join(OWNED_COLUMNS) + "\naws\rX" + "," * (len(OWNED_COLUMNS) - 1) + "\n").encode())
    with pytest.raises(InputError, match=r"owned\.csv line 2: a carriage return"):
        load_owned_file(f)


# ---------------------------------------------------------------------------------------------- 2. --output names
LONG = "a" * 300 + ".csv"


@pytest.mark.parametrize("args", [["prices", "list"], ["prices", "status"], ["prices", "list", "--format", "json"]])
def test_output_name_over_255_bytes_is_one_line_naming_output(tmp_path, args, cache):
    res = _run([*args, "--output", str(tmp_path / LONG)])
    if "json" in args:
        assert res.exit_code == 1 and "Traceback" not in res.output
        doc = json.loads(res.stderr)
        assert doc["error"]["field"] == "output" and "304 bytes long" in doc["error"]["message"]
    else:
        _one_line_error(res, "304 bytes long", "at most 245 bytes", "--output")
    assert not any(tmp_path.iterdir()) or [p.name for p in tmp_path.iterdir()] == ["cache"]


def test_output_path_over_path_max_and_folder_name_over_255(tmp_path, cache):
    _one_line_error(_run(["prices", "list", "--output", "/a" * 3000]), "6000 bytes long", "--output")
    _one_line_error(_run(["prices", "list", "--output", str(tmp_path / ("b" * 256) / "x.csv")]), "256 bytes long")


def test_check_name_length_names_the_option():
    from gpuopt.kernel.inputs import check_name_length

    assert check_name_length("x.csv") == Path("x.csv").absolute()
    with pytest.raises(InputError) as e:
        check_name_length("é" * 128 + ".csv", "--owned-out")  # 260 bytes in UTF-8, 132 characters
    assert e.value.field == "owned_out" and "260 bytes long" in str(e.value) and "--owned-out" in str(e.value)


# ---------------------------------------------------------------------------------------------- 3-4. snapshot writes
def _import_sky(tmp_path):
    f = tmp_path / "vms.csv"
    f.write_text(_sky_text())
    return _run(["prices", "import", str(f), "--input-format", "skypilot", "--provider", "aws", "--as-of", AS_OF])


def test_disk_full_writing_a_snapshot_is_one_line_and_keeps_the_previous(tmp_path, cache, monkeypatch):
    from pricing_cache import cache as cache_mod

    assert _import_sky(tmp_path).exit_code == 0
    before = sorted(p.name for p in (cache / "snapshots" / "aws").iterdir())
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache_mod.os, "fdopen", lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k)))
    res = _import_sky(tmp_path)
    err = _one_line_error(res, "cannot write the price snapshot to", "no space left on device (ENOSPC)",
                          "the previous snapshot is kept")
    assert str(cache / "snapshots" / "aws") in err
    assert sorted(p.name for p in (cache / "snapshots" / "aws").iterdir()) == before  # no half snapshot, no temp


def test_snapshot_write_error_is_a_snapshot_error_and_refresh_keeps_going(tmp_path, cache, monkeypatch):
    import pandas as pd

    from pricing_cache import cache as cache_mod

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache_mod.os, "fsync", full)
    with pytest.raises(SnapshotError, match=r"no space left on device \(ENOSPC\); the previous snapshot is kept"):
        cache_mod.write_snapshot("aws", pd.DataFrame({"provider": ["aws"], "pricing": ["on_demand"]}).reindex(
            columns=list(cache_mod.OFFER_COLUMNS)).assign(provider="aws", pricing="on_demand"), regions={})


def test_snapshots_provider_being_a_file_is_one_line_naming_it(tmp_path, cache):
    (cache / "snapshots").mkdir(parents=True)
    (cache / "snapshots" / "aws").write_text("not a folder")
    err = _one_line_error(_import_sky(tmp_path), "is a file, not a folder")
    assert f"{cache / 'snapshots' / 'aws'} is a file" in err
    assert (cache / "snapshots" / "aws").read_text() == "not a folder"


# ---------------------------------------------------------------------------------------------- 5. gzip bombs
def _bomb(path: Path, mib: int, head: bytes = b'{"Items": [') -> Path:
    with gzip.open(path, "wb", compresslevel=9) as g:
        g.write(head)
        chunk = b" " * (1 << 20)
        for _ in range(mib):
            g.write(chunk)
    return path


def test_gzip_bomb_json_is_refused_while_decompressing(tmp_path, monkeypatch):
    import resource

    from providers import _input

    f = _bomb(tmp_path / "prices.json.gz", 64)
    assert f.stat().st_size < 200_000  # 64 MiB of spaces: ~64 KiB of gzip
    monkeypatch.setattr(_input, "MAX_WHOLE_BYTES", 8 << 20)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match=r"prices\.json\.gz: the gzip content is larger than 8 MiB"):
        _input.read_json_file(f)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 48 << 10  # KiB: never held 64 MiB


@pytest.mark.parametrize("fmt", ["azure-retail", "ec2instances", "gcp-skus", "aws-price-list"])
def test_every_json_importer_refuses_the_bomb_through_the_cli(tmp_path, cache, monkeypatch, fmt):
    from providers import _input

    monkeypatch.setattr(_input, "MAX_WHOLE_BYTES", 8 << 20)
    f = _bomb(tmp_path / "p.json.gz", 16)
    res = _run(["prices", "import", str(f), "--input-format", fmt, "--as-of", AS_OF])
    _one_line_error(res, "p.json.gz", "larger than 8 MiB")


def test_plain_file_over_the_cap_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from providers import _input

    monkeypatch.setattr(_input, "MAX_WHOLE_BYTES", 1 << 20)
    f = tmp_path / "big.json"
    f.write_bytes(b"[" + b" " * (2 << 20) + b"]")
    with pytest.raises(InputError, match=r"big\.json: the file is larger than 1 MiB"):
        _input.read_text_file(f)


def test_bulk_csv_gzip_is_streamed_under_its_own_cap(tmp_path, monkeypatch):
    from providers import _input
    from providers.aws_import import import_file

    monkeypatch.setattr(_input, "MAX_DECOMPRESSED_BYTES", 4 << 20)
    f = _bomb(tmp_path / "index.csv.gz", 16, head=b'"FormatVersion","v1.0"\n')
    with pytest.raises(InputError, match=r"index\.csv\.gz: the gzip content is larger than 4 MiB"):
        import_file(f, AS_OF)
    trunc = tmp_path / "t.csv.gz"
    whole = gzip.compress(b'"FormatVersion","v1.0"\n' + os.urandom(200_000).hex().encode())
    trunc.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(InputError, match=r"t\.csv\.gz: truncated gzip file"):
        import_file(trunc, AS_OF)


# ---------------------------------------------------------------------------------------------- 6. numbers, NUL, dates
def test_parse_decimal_refuses_what_only_python_reads_as_a_number():
    from gpuopt.kernel.inputs import parse_decimal

    assert float("1_8.5") == 18.5  # why: Python reads it
    for ok, want in (("18.5", 18.5), (" 1e3 ", 1000.0), (".5", 0.5), ("-2", -2.0), ("5.", 5.0)):
        assert parse_decimal(ok) == want
    for bad in ("1_8.5", "1_000", "٣", "", "0x10", "1,5", "1e"):
        with pytest.raises(ValueError):
            parse_decimal(bad)


OFFERS = Path(__file__).parent.parent / "pricing_cache" / "data" / "offers.csv"


def _offers_with(line: int, col: str, value: str, rows: int = 2999) -> str:
    lines = OFFERS.read_text(encoding="utf-8").split("\n")[:rows + 1]
    head = lines[0].split(",")
    cells = lines[line - 1].split(",")
    cells[head.index(col)] = value
    lines[line - 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("line", [3, 2501])  # the row-by-row reader and the columnar one (2,999 rows)
@pytest.mark.parametrize("col, value, words", [
    ("usd_per_hour", "1_8.5", "usd_per_hour '1_8.5' is not a number"),
    ("as_of", "2999-01-01", "as_of: 2999-01-01 is in the future"),
    ("as_of", "2026-02-30", "as_of: no such date 2026-02-30"),
    ("region", "us\x00east-1", "region holds a NUL byte"),
])
def test_offers_catalog_refuses_underscore_numbers_nul_and_future_dates(line, col, value, words):
    from providers.offers_csv import parse_offers_csv

    with pytest.raises(InputError) as e:
        parse_offers_csv(_offers_with(line, col, value), "c.csv")
    assert f"line {line}: {words}" in str(e.value) and "\n" not in str(e.value)


def test_catalog_row_dated_tomorrow_is_within_the_stated_skew():
    import datetime as dt

    from gpuopt.kernel.inputs import DATE_SKEW_DAYS, date_error
    from providers.offers_csv import parse_offers_csv

    today = dt.datetime.now(dt.timezone.utc).date()
    assert DATE_SKEW_DAYS == 1
    assert date_error((today + dt.timedelta(days=1)).isoformat()) is None
    assert "in the future" in date_error((today + dt.timedelta(days=2)).isoformat())
    df = parse_offers_csv(_offers_with(3, "as_of", (today + dt.timedelta(days=1)).isoformat(), rows=5), "c.csv")
    assert df["as_of"].iloc[1] == (today + dt.timedelta(days=1)).isoformat()


def test_catalog_future_date_through_the_cli_is_one_line(tmp_path, cache):
    f = tmp_path / "cat.csv"
    f.write_text(_offers_with(2, "as_of", "2999-01-01", rows=20))
    _one_line_error(_run(["prices", "list", "--catalog", str(f)]), "line 2", "as_of: 2999-01-01 is in the future")


def test_skypilot_underscore_price_and_nul_region_name_the_column():
    from providers.skypilot import parse_skypilot_csv

    text = _sky_text()
    with pytest.raises(InputError, match=r"line 2: Price '1_8\.5' is not a number"):
        parse_skypilot_csv(text.replace("0.2,0.08", "1_8.5,0.08", 1), "aws", AS_OF, "t")
    with pytest.raises(InputError, match=r"line 2: Region holds a NUL byte"):
        parse_skypilot_csv(text.replace("us-east-1,use1-az1", "us\x00east-1,use1-az1", 1), "aws", AS_OF, "t")


def test_quota_and_owned_numbers_with_underscores_are_refused(tmp_path):
    from providers.owned import OWNED_COLUMNS, load_owned_file
    from providers.quotas import _number

    assert _number("1,152", "limit", "q.csv line 2") == 1152.0
    with pytest.raises(InputError, match="'1_152' is not a number"):
        _number("1_152", "limit", "q.csv line 2")
    row = {c: "" for c in OWNED_COLUMNS}
    row.update(provider="aws", pricing="reserved_1y", region="us-east-1", instance_type="p4d.24xlarge",
               count="1_0", end="2027-01-01", commitment_discount_id="ri-1")
    f = tmp_path / "owned.csv"
    f.write_text(",".join(OWNED_COLUMNS) + "\n" + ",".join(row[c] for c in OWNED_COLUMNS) + "\n")
    with pytest.raises(InputError, match="'1_0' is not a number"):
        load_owned_file(f)


# ---------------------------------------------------------------------------------------------- 7. dates in YAML
def test_impossible_date_in_a_plan_names_key_and_line(tmp_path, cache):
    f = tmp_path / "plan.yaml"
    f.write_text("workloads:\n  - name: a\n    kind: serving\n    model: llama-3-8b\n    tokens_per_second: 1000\n"
                 "\n\n\n\n\n\nprices_on: 2026-02-30\n")
    err = _one_line_error(_run(["recommend", "--workload", str(f)]), "prices_on: no such date 2026-02-30",
                          "plan.yaml, line 12")
    assert err.startswith("gpuopt: error: prices_on:")
    # quoted, the date reaches the plan's own check as text: the same words, key and line
    f.write_text(f.read_text().replace("prices_on: 2026-02-30", "prices_on: '2026-02-30'"))
    _one_line_error(_run(["recommend", "--workload", str(f)]), "prices_on: no such date 2026-02-30",
                    "plan.yaml, line 12")
    _one_line_error(_run(["recommend", "--model", "llama-3-8b", "--tokens-per-second", "1000", "--prices-on",
                          "2026-13-01"]), "--prices-on: no such date 2026-13-01")


def test_yaml_value_errors_name_their_path():
    from gpuopt.kernel.inputs import load_yaml

    with pytest.raises(InputError) as e:
        load_yaml("owned:\n  - end: 2027-13-01\n", "o.yaml", "owned")
    assert e.value.field == "owned[0].end" and "no such date 2027-13-01 (o.yaml, line 2)" in str(e.value)
    assert load_yaml("prices_on: 2024-02-29\n", "p.yaml")[0]["prices_on"].isoformat() == "2024-02-29"


# ---------------------------------------------------------------------------------------------- 8. long plain lists
def test_plain_list_longer_than_the_alias_budget_is_accepted(monkeypatch):
    from gpuopt.kernel import inputs

    monkeypatch.setattr(inputs, "MAX_YAML_NODES", 1_000)
    data, _ = inputs.load_yaml("demand: [" + ", ".join(str(i) for i in range(5_000)) + "]\n", "p.yaml")
    assert len(data["demand"]) == 5_000 and data["demand"][-1] == 4_999
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c]\n"  # 2,000 values from 33 written
    with pytest.raises(InputError, match="aliases expand to more than 1,000 values"):
        inputs.load_yaml(bomb, "bomb.yaml")


def test_plain_values_over_their_own_ceiling_are_refused_with_a_true_reason(monkeypatch):
    from gpuopt.kernel import inputs

    monkeypatch.setattr(inputs, "MAX_YAML_PLAIN_NODES", 2_000)
    with pytest.raises(InputError) as e:
        inputs.load_yaml("demand: [" + ", ".join("1" for _ in range(5_000)) + "]\n", "p.yaml")
    assert "more than 2,000 values (line 1)" in str(e.value) and "alias" not in str(e.value)


def test_the_ceilings_hold_a_100000_value_list():
    from gpuopt.kernel import inputs

    assert inputs.MAX_YAML_PLAIN_NODES >= 100_002  # the list, its key and the document's mapping


# ---------------------------------------------------------------------------------------------- 9. JSON stderr
def test_third_party_log_and_warnings_never_reach_stderr_in_json_mode(cache, monkeypatch):
    import logging
    import warnings

    from gpuopt import api

    def failing(*a, **k):
        logging.getLogger("azure.identity._credentials.chained").warning(
            "DefaultAzureCredential failed to retrieve a token from the included credentials.\nAttempted "
            "credentials:\n\tEnvironmentCredential: incomplete\nTo mitigate this issue, please refer to ...")
        logging.getLogger("urllib3.connectionpool").warning("Retrying (Retry(total=2)) after connection broken")
        warnings.warn("a botocore deprecation", DeprecationWarning)
        warnings.warn("a third-party warning")
        raise InputError("catalog", "a failure after the warnings")

    monkeypatch.setattr(api, "prices_status", failing)
    # as outside pytest: no handler on the root logger (pytest's log capture removed), warnings printed on stderr
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(warnings, "showwarning", lambda m, c, f, n, file=None, line=None: sys.stderr.write(
        warnings.formatwarning(m, c, f, n, line)))
    warnings.simplefilter("always")
    res = _run(["prices", "status", "--format", "json"])
    assert res.exit_code == 1
    doc = json.loads(res.stderr)  # the whole of stderr is one JSON document
    assert doc["error"]["message"] == "catalog: a failure after the warnings" and "Default" not in res.stderr
    table = _run(["prices", "status"])  # outside JSON mode, nothing is hidden
    assert "a failure after the warnings" in table.stderr and "DefaultAzureCredential failed" in table.stderr
    assert "a third-party warning" in table.stderr
    assert not any(isinstance(h, logging.NullHandler) for h in logging.getLogger().handlers)  # restored



def test_output_name_that_leaves_no_room_for_the_temporary_file_is_refused_first(tmp_path, cache):
    """A breaker's 253-byte name passed the 255-byte check, then failed "File name too long" on the temporary file
    (.NAME.XXXXXXXX) it is written through: 245 bytes is the most, said before any work."""
    _one_line_error(_run(["prices", "list", "--output", str(tmp_path / ("c" * 249 + ".csv"))]), "253 bytes long",
                    "at most 245 bytes")
    ok = tmp_path / ("d" * 241 + ".csv")  # 245 bytes: written
    assert _run(["prices", "list", "--output", str(ok)]).exit_code == 0 and ok.stat().st_size > 0


def test_a_line_break_inside_a_quoted_catalog_cell_is_refused_naming_file_and_column():
    """A quoted cell may hold CR or LF in CSV; a region "dc\\r1" was planned as a region of its own (a breaker)."""
    from providers.offers_csv import parse_offers_csv

    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
    for cell in ('"dc\r1"', '"dc\n1"'):
        with pytest.raises(InputError) as e:
            parse_offers_csv(head + f"myco,{cell},box,A100-80GB,1,80,on_demand,5\n", "o.csv")
        assert str(e.value).startswith("catalog: o.csv line 2: region holds a line break (CR or LF) inside its quotes")
    # a quoted cell without one is read as before
    assert len(parse_offers_csv(head + 'myco,"dc1",box,A100-80GB,1,80,on_demand,5\n', "o.csv")) == 1


def test_a_catalog_row_error_names_the_file():
    from providers.offers_csv import parse_offers_csv

    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
    with pytest.raises(InputError) as e:
        parse_offers_csv(head + "myco,dc1,box,A100-80GB,1,80,on_demand,1_8.5\n", "o.csv")
    assert str(e.value).startswith("catalog: o.csv line 2: usd_per_hour")


@pytest.mark.parametrize("region", ['"us-\x00east-1"', '"us-\reast-1"', '"us-\neast-1"'])
def test_a_usage_row_with_a_nul_or_line_break_in_its_region_is_a_bad_row(tmp_path, region):
    """review --usage kept "us-\\x00east-1" as a region of its own and lost its price (a breaker, exit 0, no word):
    the row is a bad row naming the column and its line, the rest reviewed."""
    from providers.usage import read_usage

    src = Path(__file__).parent / "fixtures" / "usage" / "synthetic_hourly.csv"
    lines = src.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("us-east-1", region, 1)
    f = tmp_path / "hourly.csv"
    f.write_bytes(("\n".join(lines) + "\n").encode())
    whole = read_usage(src)
    u = read_usage(f)
    assert [(b.line, b.reason) for b in u.bad_rows] == [(2, "region holds a NUL, CR or LF character")]
    assert u.rows_gpu == whole.rows_gpu - 1 and u.rows_read == whole.rows_read


# ------------------------------------------------------------- 8. underscores in the serving and demand CSVs
def test_measured_trace_and_demand_profile_csvs_refuse_underscore_numbers(tmp_path):
    """float() reads "1_500" as 1500: every CSV a user gives (here --measured, --trace, --demand-profile) refuses it,
    naming the row or line and the column; a JSON number and a plain decimal are still read."""
    from optimizer.planning.demand import load_profile
    from optimizer.sizing.serving import load_measurements
    from optimizer.sizing.trace import load_trace

    m = tmp_path / "bench.csv"
    head = "model,input_tokens,output_tokens,output_tokens_per_second\n"
    m.write_text(head + "meta-llama/Llama-2-7b-hf,1000,100,1500.5\n")
    assert load_measurements(str(m)).rows[0].tokens_per_second == 1500.5
    m.write_text(head + "meta-llama/Llama-2-7b-hf,1000,100,1_500\n")
    with pytest.raises(InputError, match=r"bench.csv row 1: output_tokens_per_second '1_500' is not a number"):
        load_measurements(str(m))
    m.write_text(head + "meta-llama/Llama-2-7b-hf,1_000,100,1500\n")
    with pytest.raises(InputError, match=r"row 1: input_tokens '1_000' is not a number"):
        load_measurements(str(m))

    t = tmp_path / "trace.csv"
    t.write_text("input_tokens,output_tokens\n100,10\n1_00,10\n")
    with pytest.raises(InputError, match=r"line 3: input_tokens '1_00' is not a whole number"):
        load_trace(str(t))
    t.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n1_0,100,10\n")
    with pytest.raises(InputError, match=r"line 3: arrival_s '1_0' is not a time"):
        load_trace(str(t))
    t.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n2.5,300,30\n")
    assert load_trace(str(t)).mean_input == 200

    p = tmp_path / "profile.csv"
    p.write_text("hour,demand\n" + "".join(f"{h},{100 + h}\n" for h in range(24)))
    assert max(b.demand for b in load_profile(p).blocks) == 123.0
    p.write_text("hour,demand\n" + "".join(f"{h},{100 + h}\n" for h in range(23)) + "23,1_000\n")
    with pytest.raises(InputError, match=r"profile\.csv line 25: demand must be a number, got .1_000."):
        load_profile(p)
    p.write_text("hour,demand\n" + "".join(f"{h},100\n" for h in range(23)) + "2_3,100\n")
    with pytest.raises(InputError, match=r"line 25: hour must be a whole number from 0 to 23, got '2_3'"):
        load_profile(p)


# ------------------------------------------------------------- 9. the AWS bulk CSV: line ends and stray CRs
BULK = Path(__file__).parent / "fixtures" / "aws" / "AmazonEC2_bulk_sample.derived.csv"


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_aws_bulk_csv_reads_lf_crlf_and_cr_line_ends_alike(tmp_path, ending):
    from providers.aws_import import parse_bulk_csv

    want = parse_bulk_csv(BULK)
    f = tmp_path / "index.csv"
    f.write_bytes(BULK.read_text(encoding="utf-8").replace("\n", ending).encode())
    got = parse_bulk_csv(f)
    assert len(want) > 0 and got.equals(want)


def test_aws_bulk_csv_with_a_stray_cr_names_the_line_rather_than_splitting_the_row(tmp_path):
    """The streamed bulk CSV (several GB, read line by line) kept a row split at a CR in an unquoted field as two
    rows; it is refused, naming the file and the line, as the SkyPilot and offers readers do."""
    from providers.aws_import import import_file

    lines = BULK.read_text(encoding="utf-8").split("\n")
    lines[9] = lines[9].replace('","', '",\r"', 1)  # a CR between two fields of line 10
    f = tmp_path / "index.csv"
    f.write_bytes("\n".join(lines).encode())
    with pytest.raises(InputError, match=r"index\.csv line 10: a carriage return \(CR\) inside a field"):
        import_file(f, AS_OF)
    res = _run(["prices", "import", str(f), "--input-format", "aws-bulk-csv", "--as-of", AS_OF])
    _one_line_error(res, "index.csv line 10: a carriage return (CR) inside a field")


def test_aws_bulk_csv_field_over_the_csv_limit_is_one_line(tmp_path):
    from providers.aws_import import parse_bulk_csv

    lines = BULK.read_text(encoding="utf-8").split("\n")
    lines[7] = lines[7].replace('","', '","' + "9" * 200_000, 1)
    f = tmp_path / "index.csv"
    f.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=r"index\.csv line 8: not CSV \(field larger than field limit"):
        parse_bulk_csv(f)


def test_owned_out_name_is_checked_before_the_export_is_read(tmp_path, cache, monkeypatch):
    """A long export read for minutes, then refused for the name of --owned-out: the name is checked first."""
    from gpuopt import api

    def never(**kw):
        raise AssertionError("the export was read before --owned-out's name was checked")

    monkeypatch.setattr(api, "review", never)
    usage = Path(__file__).parent / "fixtures" / "usage" / "synthetic_focus_1.0.csv"
    res = _run(["review", "--usage", str(usage), "--owned-out", str(tmp_path / ("o" * 250 + ".csv"))])
    _one_line_error(res, "--owned-out", "bytes long")
    res = _run(["review", "--usage", str(usage), "--owned-out", str(tmp_path / "x.csv"), "-o", str(tmp_path / "x.csv")])
    _one_line_error(res, "is also --output")
    (tmp_path / "adir").mkdir()
    _one_line_error(_run(["review", "--usage", str(usage), "--owned-out", str(tmp_path / "adir")]),
                    "owned_out:", "adir is a folder; give a file name")
    _one_line_error(_run(["review", "--usage", str(usage), "--owned-out", str(tmp_path / "nodir" / "x.csv")]),
                    "owned_out:", "nodir does not exist")


def test_a_time_for_prices_on_names_key_and_line(tmp_path, cache):
    """YAML reads an unquoted 2026-10-15T00:00:00 as a datetime (a date to Python): refused as a time, with the
    file and line, as the other values of the key (the breaker's: it said "not a date" naming neither)."""
    f = tmp_path / "plan.yaml"
    f.write_text("workloads:\n  - name: a\n    kind: serving\n    model: llama-3-8b\n    tokens_per_second: 1000\n"
                 "prices_on: 2026-10-15T00:00:00\n")
    _one_line_error(_run(["recommend", "--workload", str(f)]), "prices_on: not a date (YYYY-MM-DD)", "is a time",
                    "plan.yaml, line 6")
