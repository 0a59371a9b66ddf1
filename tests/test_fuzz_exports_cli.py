"""Fuzzing with a bounded budget (issue 13, point 2) of the readers the other fuzz tests leave out: the Azure
cost-details and hourly (warehouse) billing exports, and the options of ``recommend``, ``estimate``, ``review``,
``prices list`` and ``diff`` as a user types them.

Every input gets a result or a gpuopt error (one line; one JSON document with --format json), never another
exception; no result holds a non-finite or negative cost. The columns are those of the synthetic fixtures under
``tests/fixtures/usage``; every cell value is a test value, not a price. Examples are derandomized, so a run is
repeatable and its time bounded (under a minute on two cores).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuopt.cli import main
from gpuopt.kernel.errors import GpuoptError
from providers import usage as U

FIX = Path(__file__).parent / "fixtures" / "usage"
AZURE = FIX / "synthetic_azure_cost_details.csv"
HOURLY = FIX / "synthetic_hourly.csv"

FUZZ = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])

#: Cell values that break readers: not numbers, not finite, huge, negative, dates out of any window, unicode, long.
NASTY = ["", " ", "inf", "-inf", "nan", "NaN", "-1", "-0", "0", "1e308", "-1e308", "1e400", "1e15", "1e16",
         "0001-01-01", "9999-12-31", "1970-01-01T00:00:00Z", "12/31/9999", "02/30/2024", "not a date", "\u00e9\u00e8",
         "\u4e2d\u6587", "\U0001F600", "x" * 3000, "1" + "0" * 400, "{", "{\"ServiceType\": 5}", "[1]", "null",
         "Standard_", "Usage", "Purchase", "Refund", "UnusedReservation", "Reservation", "Spot", "USD", "EUR",
         "1 Hour", "10 Hours", "0 Hours", "-1 Hours", "inf Hours", "Standard", "Committed", "Dynamic"]


def _fixture(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


NUMBERS = st.one_of(st.floats().map(repr), st.integers(-10**6, 10**6).map(str),
                    st.sampled_from(["-0.5", "-5", "-21.957642", "1e-320", "-1e-320", "-0", "1e400", "inf", "nan"]))


def _cells(rows: list[list[str]]) -> st.SearchStrategy[str]:
    real = sorted({c for r in rows for c in r})
    return st.one_of(st.sampled_from(real), st.sampled_from(NASTY), NUMBERS, st.text(max_size=10))


def _numeric_columns(rows: list[list[str]]) -> set[int]:
    def number(x: str) -> bool:
        try:
            float(x)
            return True
        except ValueError:
            return False

    return {j for j in range(len(rows[0])) if all(number(r[j]) for r in rows if r[j] != "")
            and any(r[j] != "" for r in rows)}


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def _check_usage(d: U.UsageData) -> None:
    """The result of a read: rows add up; every usage hour and cost kept is finite and not negative."""
    assert d.rows_read == d.rows_gpu + d.rows_not_gpu + len(d.bad_rows)
    for col in ("usage_hours", "billed_cost", "effective_cost"):
        for v in d.hourly[col].to_numpy(dtype=float):
            assert math.isfinite(v) and v >= 0, (col, v, d.hourly)
    for v in d.hourly["list_cost"].to_numpy(dtype=float):  # NaN: the export has no list price
        assert math.isnan(v) or (math.isfinite(v) and v >= 0), ("list_cost", v)
    for col in ("billed_cost", "effective_cost"):
        for v in d.purchases[col].to_numpy(dtype=float):
            assert not math.isinf(v) and not (math.isnan(v) and col == "billed_cost"), (col, v)


def _read(path: Path, fmt: str) -> None:
    try:
        d = U.read_usage(path, fmt=fmt, is_gpu_instance=lambda prov, t: "NC" in t or t.startswith(("p", "g")))
    except GpuoptError as e:
        assert "\n" not in str(e), str(e)
        return
    _check_usage(d)


AZ_HEADER, AZ_ROWS = _fixture(AZURE)
HR_HEADER, HR_ROWS = _fixture(HOURLY)
AZ_CELLS, HR_CELLS = _cells(AZ_ROWS), _cells(HR_ROWS)


def _mutated_rows(base: list[list[str]], cells: st.SearchStrategy[str], width: int):
    """Fixture rows with a few cells replaced (a number column mostly by a number: negative, tiny, huge, not
    finite), plus a few rows of random cells (some too short or too long)."""
    numeric = _numeric_columns(base)
    extra = st.lists(st.lists(cells, min_size=max(0, width - 2), max_size=width + 1), max_size=2)

    @st.composite
    def build(draw):
        rows = [list(r) for r in draw(st.lists(st.sampled_from(base), min_size=1, max_size=6))]
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(rows) - 1))
            j = draw(st.sampled_from(sorted(numeric)) if numeric and draw(st.booleans()) else st.integers(0, width - 1))
            rows[i][j] = draw(NUMBERS if j in numeric and draw(st.booleans()) else cells)
        return rows + draw(extra)

    return build()


# ----------------------------------------------------------------------------------- (a) billing exports

@settings(max_examples=120, **FUZZ)
@given(rows=_mutated_rows(AZ_ROWS, AZ_CELLS, len(AZ_HEADER)))
def test_fuzz_azure_cost_details_rows(tmp_path, rows):
    _read(_write(tmp_path / "az.csv", AZ_HEADER, rows), "azure-cost-details")


@settings(max_examples=120, **FUZZ)
@given(rows=_mutated_rows(HR_ROWS, HR_CELLS, len(HR_HEADER)))
def test_fuzz_hourly_rows(tmp_path, rows):
    _read(_write(tmp_path / "hourly.csv", HR_HEADER, rows), "hourly")


@settings(max_examples=60, **FUZZ)
@given(data=st.data(), which=st.sampled_from(["azure-cost-details", "hourly", "auto"]),
       junk=st.binary(max_size=6))
def test_fuzz_azure_and_hourly_headers(tmp_path, data, which, junk):
    header0, rows0, cells = (AZ_HEADER, AZ_ROWS, AZ_CELLS) if which != "hourly" else (HR_HEADER, HR_ROWS, HR_CELLS)
    # columns dropped, repeated, renamed (spaces, case, unicode) and reordered
    names = data.draw(st.lists(st.one_of(st.sampled_from(header0), st.sampled_from(NASTY[:24]),
                                         st.sampled_from([h.upper() for h in header0] + [h + " " for h in header0])),
                               min_size=1, max_size=len(header0) + 2))
    rows = [[data.draw(cells) if data.draw(st.booleans()) else r[i % len(r)] for i in range(len(names))]
            for r in data.draw(st.lists(st.sampled_from(rows0), min_size=1, max_size=4))]
    p = _write(tmp_path / "h.csv", names, rows)
    p.write_bytes(p.read_bytes() + junk)
    _read(p, which)


def test_fixtures_still_read():
    """The fuzzers start from the fixtures: both read with GPU rows and finite, non-negative costs."""
    for path, fmt in ((AZURE, "azure-cost-details"), (HOURLY, "hourly")):
        d = U.read_usage(path, fmt=fmt)
        assert d.rows_gpu > 0 and len(d.hourly) > 0
        _check_usage(d)


def test_negative_azure_usage_is_a_bad_row(tmp_path):
    """Found by the fuzzer: an Azure usage row with Quantity -1 gave -1 usage hours (and -0.04 h an hour) in
    silence; a negative quantity, cost or price on a usage row is a bad row naming the column (a refund is a
    Refund row and stays negative)."""
    rows = [list(r) for r in AZ_ROWS[:2]]
    q, c = AZ_HEADER.index("Quantity"), AZ_HEADER.index("CostInBillingCurrency")
    rows[0][q] = "-24"
    rows[1][c] = "-44.076"
    d = U.read_usage(_write(tmp_path / "az.csv", AZ_HEADER, rows), fmt="azure-cost-details")
    assert [(b.line, b.reason) for b in d.bad_rows] == [(2, "Quantity is negative on a usage row"),
                                                          (3, "CostInBillingCurrency is negative on a usage row")]
    assert d.rows_gpu == 0 and d.hourly.empty


def test_negative_hourly_values_are_bad_rows(tmp_path):
    """Found by the fuzzer: the hourly format kept negative usage_hours and costs; the warehouse SQL sums usage
    rows only, so a negative is a bad row naming the column."""
    rows = [list(r) for r in HR_ROWS[:4]]
    rows[0][HR_HEADER.index("usage_hours")] = "-1"
    rows[1][HR_HEADER.index("billed_cost")] = "-5.5095"
    rows[2][HR_HEADER.index("effective_cost")] = "-21.957642"
    d = U.read_usage(_write(tmp_path / "hourly.csv", HR_HEADER, rows), fmt="hourly")
    assert [(b.line, b.reason) for b in d.bad_rows] == [(2, "usage_hours is negative"), (3, "billed_cost is negative"),
                                                          (4, "effective_cost is negative")]
    (row,) = d.hourly.to_dict("records")  # the fourth row: azure, 1.5 h, 5.5095 USD
    assert (row["provider"], row["usage_hours"], row["billed_cost"]) == ("azure", 1.5, 5.5095)


# ------------------------------------------------------------------------------------------- (b) CLI options

runner = CliRunner()

NUM = st.one_of(st.sampled_from(["inf", "-inf", "nan", "-1", "0", "-0", "1e308", "-1e308", "1e16", "1e15", "0.5",
                                 "1", "2", "100", "1e-300", "", " ", "abc", "\u00e9", "1" * 400, "0x10", "1_000"]),
                st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-10**20, 10**20).map(str))
TEXT = st.one_of(st.sampled_from(["", " ", "-", "--", "x" * 5000, "\u4e2d\u6587", "\U0001F600", "a\nb", "a,b",
                                  "../../etc/passwd", "%s", "{}", "null", "inf", "nan", "-1"]),
                 st.text(max_size=20))


def _json_ok(text: str) -> None:
    """A JSON document with no NaN/Infinity and no negative price, cost or USD amount (changes and savings aside)."""
    def no_const(c):
        raise AssertionError(f"non-finite number {c} in JSON output")

    doc = json.loads(text, parse_constant=no_const)

    def walk(x, key=""):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            assert math.isfinite(x), (key, x)
            k = key.lower()
            if any(s in k for s in ("usd", "price", "cost")) and not any(
                    s in k for s in ("change", "saving", "delta", "diff", "pct", "percent")):
                assert x >= 0, (key, x)

    walk(doc)


def _cli(args: list[str], codes=(0, 1, 2)) -> tuple[int, str, str]:
    """Run the console script's entry point (as `gpuopt ARGS`) in CliRunner's isolation; any exception other than
    SystemExit fails the test. Checks the exit code, stderr (one line, or one JSON error document with --format
    json) and, on success, JSON stdout."""
    with runner.isolation() as streams:
        try:
            main(args)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        out, err = streams[0].getvalue().decode(errors="replace"), streams[1].getvalue().decode(errors="replace")
    assert code in codes, (args, code, err)
    fmts = [args[i + 1] for i in range(len(args) - 1) if args[i] in ("--format", "-f")]
    as_json = bool(fmts) and fmts[-1] == "json"
    if code != 0:
        if as_json:
            doc = json.loads(err)  # one document, nothing else on stderr
            assert doc["kind"] == "error" and doc["exit_code"] == code, doc
        else:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("gpuopt:"), (args, err)
        assert "Traceback" not in err
    elif as_json:
        if not out.strip() and "--output" in args:  # written to the file instead of stdout
            out = Path(args[args.index("--output") + 1]).read_text(encoding="utf-8")
        _json_ok(out)
    return code, out, err


def _opts(pool: dict[str, st.SearchStrategy[str]], max_size: int):
    return st.lists(st.sampled_from(sorted(pool)).flatmap(lambda o: st.tuples(st.just(o), pool[o])),
                    max_size=max_size).map(lambda kv: [x for pair in kv for x in pair])


def mostly(good: list[str], bad: st.SearchStrategy[str] = NUM) -> st.SearchStrategy[str]:
    """A value that is valid about three times in four (so that the fuzzer reaches the results too), else ``bad``."""
    # not the bounds of the range (hypothesis draws them more often than the values inside)
    return st.integers(0, 7).flatmap(lambda i: bad if i in (2, 5) else st.sampled_from(good))


FMT = mostly(["json", "table"], st.sampled_from(["", "xml", "\u00e9", "JSON"]))
MODELS = mostly(["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf"], st.one_of(st.just("gpt-9"), TEXT))
POS = ["1", "2", "8", "100", "0.5", "1e3"]

ESTIMATE = {"--params": mostly(["7e9", "1.3e10"]), "--task": mostly(["serve", "train", "finetune", "lora"], TEXT),
            "--gpu": mostly(["A100-80GB", "H100-80GB", "L4"], TEXT), "--gpus": mostly(["1", "8", "16"]),
            "--tokens": mostly(["1e9", "2e10"]), "--tokens-per-second": mostly(POS),
            "--deadline-hours": mostly(["24", "730"]), "--precision": mostly(["bf16", "fp8", "int4"], TEXT),
            "--context": mostly(["2048", "4096"]), "--concurrency": mostly(["1", "8", "64"]),
            "--request-rate": mostly(["0.5", "2"]), "--tensor-parallel": mostly(["1", "2", "8"]),
            "--pipeline-parallel": mostly(["1", "2"]), "--input-tokens": mostly(["128", "1024"]),
            "--output-tokens": mostly(["16", "128"]), "--ttft-ms": mostly(["500", "2000"]),
            "--tpot-ms": mostly(["50", "200"]), "--zero-stage": mostly(["0", "3"]),
            "--micro-batch-size": mostly(["1", "4"]), "--mfu": mostly(["0.3", "0.5"]),
            "--global-batch-tokens": mostly(["4e6"]), "--context-parallel": mostly(["1", "2"]),
            "--expert-parallel": mostly(["1"]), "--engine": mostly(["vllm", "sglang"], TEXT),
            "--scenario": mostly(["server", "offline"], TEXT), "--optimizer": mostly(["adam", "sgd"], TEXT),
            "--offload": mostly(["none", "optimizer"], TEXT), "--framework": mostly(["fsdp", "megatron"], TEXT),
            "--model": MODELS}


@settings(max_examples=80, **FUZZ)
@given(model=MODELS, opts=_opts(ESTIMATE, 3), fmt=FMT)
def test_fuzz_estimate_options(model, opts, fmt):
    _cli(["estimate", "--model", model, *opts, "--format", fmt])


PRICES = {"--gpu": mostly(["H100", "A100-80GB", "L4"], TEXT), "--provider": mostly(["aws", "azure", "gcp"], TEXT),
          "--region": mostly(["us-east-1", "eastus"], TEXT), "--pricing": mostly(["on_demand", "spot", "reserved_1y"], TEXT),
          "--limit": mostly(["0", "1", "5"]),
          "--prices-on": mostly(["2026-01-01"], st.one_of(st.sampled_from(["9999-12-31", "0001-01-01", "2026-02-30"]),
                                                          TEXT))}


@settings(max_examples=80, **FUZZ)
@given(opts=_opts(PRICES, 4), fmt=FMT)
def test_fuzz_prices_list_options(opts, fmt):
    _cli(["prices", "list", *opts, "--format", fmt])


RECOMMEND = {"--budget": mostly(["1e5", "1e6", "10"]), "--budget-total": mostly(["1e7"]),
             "--max-upfront": mostly(["0", "1e5"]), "--max-commitment": mostly(["0", "1e6"]),
             "--horizon": mostly(["1", "12", "36"]), "--leftover-value": mostly(["0", "0.5", "1"]),
             "--placement": mostly(["region", "provider", "any"], TEXT), "--region-group": mostly(["us", "eu"], TEXT),
             "--start-month": mostly(["1", "2"]), "--end-month": mostly(["6", "12"]), "--months": mostly(["3"]),
             "--precision": mostly(["bf16", "fp8"], TEXT), "--input-tokens": mostly(["512"]),
             "--output-tokens": mostly(["64"]), "--ttft-ms": mostly(["2000"]), "--context": mostly(["4096"]),
             "--concurrency": mostly(["16"]), "--max-instances": mostly(["1", "4"]), "--min-replicas": mostly(["1", "2"]),
             "--spot-capacity": mostly(["0", "16"]), "--name": TEXT,
             "--gpu": mostly(["A100-80GB", "H100-80GB", "L4"], TEXT),
             "--provider": mostly(["aws", "azure", "gcp", "lambda"], TEXT),
             "--pricing": mostly(["on_demand", "spot", "reserved_1y"], TEXT)}


@settings(max_examples=25, **FUZZ)
@given(tps=mostly(["10", "100", "1000"]), opts=_opts(RECOMMEND, 3), fmt=FMT)
def test_fuzz_recommend_options(tps, opts, fmt):
    _cli(["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", tps, *opts,
          "--no-explain", "--time-limit", "5", "--format", fmt])


REVIEW = {"--usage-format": mostly(["auto"], st.one_of(st.sampled_from(U.FORMATS), TEXT)),
          "--lookback": mostly(["30d", "720h", "1d"], st.one_of(st.sampled_from(["0d", "-1d", "infd", "nand", "1e308d",
                                                                            "d", "1e400h"]), TEXT)),
          "--term": mostly(["1y", "3y"], TEXT),
          "--payment": mostly(["no_upfront", "partial_upfront", "all_upfront"], TEXT),
          "--scope": mostly(["shared", "account"], TEXT)}


@settings(max_examples=40, **FUZZ)
@given(usage=st.sampled_from([AZURE, HOURLY, FIX / "synthetic_cur2.csv"]), opts=_opts(REVIEW, 3), fmt=FMT)
def test_fuzz_review_options(usage, opts, fmt):
    _cli(["review", "--usage", str(usage), *opts, "--format", fmt])


GOOD_MONEY = st.floats(0, 1e7, allow_nan=False)
MONEY = st.integers(0, 7).flatmap(lambda i: GOOD_MONEY if i not in (2, 5) else st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([-1.0, 1e15, 1e16]),
    st.integers(-10**20, 10**20), st.none(), st.text(max_size=4), st.booleans()))
LINE = st.fixed_dictionaries({"provider": st.sampled_from(["aws", "azure"]),
                              "instance_type": mostly(["p4d.24xlarge", "g6.xlarge"], TEXT),
                              "pricing": st.sampled_from(["on_demand", "reserved_1y"]),
                              "count": st.integers(0, 7).flatmap(lambda i: st.one_of(
                                  st.integers(-3, -1), st.floats(), st.none()) if i == 5 else st.integers(0, 5)),
                              "total_usd": MONEY})
PLAN = st.integers(0, 5).flatmap(lambda i: st.fixed_dictionaries(
    {"schema_version": mostly([2], st.sampled_from([1, 99, None, "2", True])),  # issue 30: unknown versions refused
     "kind": mostly(["recommend"], st.sampled_from(["estimate", "plan-diff", ""])),
     "status": st.just("optimal"), "total_usd": MONEY if i == 4 else GOOD_MONEY, "max_month_usd": GOOD_MONEY,
     "commitment_usd": MONEY, "upfront_usd": GOOD_MONEY, "lines": st.lists(LINE, max_size=3)}) if i != 3 else st.one_of(
    st.lists(st.integers(), max_size=2), st.text(max_size=5), st.just({"total_usd": 1.0})))


@settings(max_examples=60, **FUZZ)
@given(old=PLAN, new=PLAN, fail_above=st.one_of(st.none(), mostly(["0", "5", "100"])), fmt=FMT, raw=st.sampled_from(["", "nan", "\ufeff"]))
def test_fuzz_diff_plans_and_options(tmp_path, old, new, fail_above, fmt, raw):
    po, pn = tmp_path / "old.json", tmp_path / "new.json"
    po.write_text(json.dumps(old), encoding="utf-8")
    text = json.dumps(new)
    pn.write_text(raw + text if raw == "\ufeff" else text.replace("0.0", raw) if raw else text, encoding="utf-8")
    gate = [] if fail_above is None else ["--fail-above", fail_above]
    _cli(["diff", str(po), str(pn), *gate, "--format", fmt], codes=(0, 1, 2, 4) if gate else (0, 1, 2))


@pytest.mark.parametrize("value", ["a\nb", "a\r\nb", "a\u2028b", "a\x85b"])
def test_line_break_in_an_option_value_stays_one_line(value):
    """Found by the fuzzer: `--gpu $'a\\nb'` printed the error on two lines; the break is shown escaped."""
    code, _, err = _cli(["prices", "list", "--gpu", value, "--format", "table"])
    assert code == 1
    assert err.startswith("gpuopt: error: --gpu: unknown GPU 'a") and err.count("\n") == 1 and err.endswith("\n")
    assert repr(value)[1:-1] in err


@pytest.mark.parametrize("where", ["total_usd", "line"])
def test_diff_refuses_a_negative_amount(tmp_path, where):
    """Found by the fuzzer: a plan whose line cost -1 USD was diffed and printed as a -1.00 USD line; recommend never
    writes a negative amount (schemas.Usd), so the file is refused naming the field."""
    plan = {"schema_version": 2, "kind": "recommend", "status": "optimal", "total_usd": 10.0, "max_month_usd": 1.0,
            "commitment_usd": 0.0, "upfront_usd": 0.0,
            "lines": [{"provider": "aws", "instance_type": "g6.xlarge", "pricing": "on_demand", "count": 1,
                       "total_usd": 10.0}]}
    (tmp_path / "old.json").write_text(json.dumps(plan), encoding="utf-8")
    if where == "line":
        plan["lines"][0]["total_usd"] = -1.0
    else:
        plan["total_usd"] = -1.0
    (tmp_path / "new.json").write_text(json.dumps(plan), encoding="utf-8")
    code, out, err = _cli(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "table"])
    field = "lines[0].total_usd" if where == "line" else "total_usd"
    assert code == 1 and out == ""
    assert err.startswith(f"gpuopt: error: new: {tmp_path / 'new.json'}: {field}: must be a number from 0 to 1e+15")


# issue 30, point 6: the newest inputs in the fuzz suite -- the measured-results reader and the output paths
MEASURED_COLS = ["model", "input_len", "output_len", "output_tokens_per_second", "ttft_ms", "tpot_ms", "gpu", "tp",
                 "model_names", "input_sequence_length"]
MEASURED_VALUES = st.one_of(st.sampled_from(["meta-llama/Llama-2-7b-hf", "1000", "100", "2000", "1e12", "H100-80GB",
                                             "1", "0", "-1", "nan", "", "9000", "1e7"]), TEXT)


@settings(max_examples=40, **FUZZ)
@given(cols=st.lists(st.sampled_from(MEASURED_COLS), min_size=1, max_size=7),
       rows=st.lists(st.lists(MEASURED_VALUES, min_size=7, max_size=7), max_size=3), as_json=st.booleans())
def test_fuzz_measured_file(tmp_path, cols, rows, as_json):
    f = tmp_path / ("m.json" if as_json else "m.csv")
    if as_json:
        f.write_text(json.dumps([dict(zip(cols, r)) for r in rows]), encoding="utf-8")
    else:  # a column may come twice: refused naming it
        f.write_text("\n".join([",".join(cols)] + [",".join(r[:len(cols)]) for r in rows]) + "\n", encoding="utf-8")
    _cli(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H100-80GB", "--measured", str(f),
          "--format", "table"])


@settings(max_examples=30, **FUZZ)
@given(name=st.sampled_from(["x.parquet", "x.PQ", "x.json", "x.txt", "missing/x.json", ""]), fmt=FMT)
def test_fuzz_output_paths(tmp_path, name, fmt):
    out = tmp_path / name
    code, _, _ = _cli(["prices", "list", "--gpu", "H100", "--limit", "2", "--output", str(out), "--format", fmt])
    if out.suffix.lower() in (".parquet", ".pq"):
        assert code != 0 and not out.exists()  # text is never written into a Parquet file
