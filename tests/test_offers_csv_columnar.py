"""The offers CSV's columnar reader (pyarrow, for big files) against the row-by-row reader, which defines it.

The columnar reader either returns exactly the frame the row-by-row reader returns, or None (the file goes row by
row, whose error names the line). Random files mix valid and faulty fields of every column.
"""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import providers.offers_csv as oc
from gpuopt.kernel.errors import InputError

COLUMNS = ("provider", "region", "zone", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "vcpus",
           "interconnect", "fabric", "zone_kind", "pricing", "payment", "upfront_usd", "recurring_usd_per_hour",
           "usd_per_hour", "term_hours", "currency", "source", "as_of")
VALUES = {
    "provider": ["myco", "AWS", " gcp ", "", "aws"],
    "region": ["dc1", "us-east-1", " eu ", ""],
    "zone": ["", "us-east-1a", "use1-atl2-az1", "us-east-1-wl1-bos-wlz-1"],
    "instance_type": ["box", "p4d.24xlarge", "a2-highgpu-1g", ""],
    "gpu_model": ["A100-80GB", "A100", "H100", "bogus", "nvidia a10g", ""],
    "gpu_count": ["8", "0.5", "1", "0", "-1", "x", "inf", ""],
    "gpu_memory_gib": ["80", "40", "24", "0", "nan", ""],
    "vcpus": ["", "96", "0", "1e3"],
    "interconnect": ["", "nvlink", "pcie", "NVLINK"],
    "fabric": ["", "efa", "EFA", "infiniband", "carrier-pigeon"],
    "zone_kind": ["", "local_zone", "LOCAL_ZONE", "moon"],
    "pricing": ["on_demand", "spot", "reserved_1y", "reserved_3y", "bad", ""],
    "payment": ["", "no_upfront", "all_upfront", "partial_upfront", "some"],
    "upfront_usd": ["", "0", "1000", "-5", "87600"],
    "recurring_usd_per_hour": ["", "0", "10", "9.5", "-1"],
    "usd_per_hour": ["10", "9.5", "12.0", "5", "0", "", "abc", "1e308", " 7 "],
    "term_hours": ["", "0", "8760", "26280", "100"],
    "currency": ["", "USD", "usd", "EUR"],
    "source": ["", "user:x, with a comma", "quote \"q\""],
    "as_of": ["", "2026-11-30"],
}


@pytest.fixture(autouse=True)
def _columnar_for_small_files(monkeypatch):
    monkeypatch.setattr(oc, "COLUMNAR_MIN_ROWS", 0)


def _text(cols: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows(rows)
    return buf.getvalue()


def _row_by_row(text: str) -> "pd.DataFrame | InputError":
    old = oc.COLUMNAR
    oc.COLUMNAR = False
    try:
        return oc.parse_offers_csv(text, "t.csv")
    except InputError as e:
        return e
    finally:
        oc.COLUMNAR = old


@st.composite
def offer_files(draw):
    cols = [c for c in COLUMNS if c in oc.REQUIRED_COLUMNS or draw(st.booleans())]
    n = draw(st.integers(1, 6))
    rows = []
    for _ in range(n):
        # mostly coherent rows (a valid reserved or hourly offer), some with a random fault
        pricing = draw(st.sampled_from(["on_demand", "spot", "reserved_1y", "reserved_3y"]))
        price = draw(st.sampled_from(["10", "9.5", "4", "12.5"]))
        base = {"provider": "myco", "region": draw(st.sampled_from(["dc1", "dc2"])), "zone": "",
                "instance_type": draw(st.sampled_from(["box", "box2", "box3"])), "gpu_model": "A100-80GB",
                "gpu_count": "8", "gpu_memory_gib": "80", "vcpus": "", "interconnect": "", "fabric": "",
                "zone_kind": "", "pricing": pricing,
                "payment": draw(st.sampled_from(oc.PAYMENT_OPTIONS)) if pricing.startswith("reserved") else "",
                "upfront_usd": "", "recurring_usd_per_hour": "", "usd_per_hour": price, "term_hours": "",
                "currency": "", "source": "", "as_of": ""}
        for c in draw(st.lists(st.sampled_from(COLUMNS), max_size=3)):
            base[c] = draw(st.sampled_from(VALUES[c]))
        rows.append([base[c] for c in cols])
    return _text(cols, rows)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offer_files())
def test_columnar_equals_row_by_row(text):
    header = next(csv.reader(io.StringIO(text)))
    fast = oc._parse_columnar(text, [h.strip() for h in header], "t.csv")
    slow = _row_by_row(text)
    if fast is None:
        return  # the row-by-row reader decides (its error or its frame is what the user gets)
    assert not isinstance(slow, InputError), f"columnar accepted a file the row-by-row reader refuses: {slow}"
    pd.testing.assert_frame_equal(fast, slow)


def test_columnar_reads_a_clean_file_and_refuses_to_guess_line_numbers():
    rows = [["myco", f"dc{i}", "box", "A100", "8", "80", "on_demand", "10"] for i in range(50)]
    cols = ["provider", "region", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "pricing",
            "usd_per_hour"]
    text = _text(cols, rows)
    fast = oc._parse_columnar(text, cols, "t.csv")
    assert fast is not None and len(fast) == 50
    assert fast.iloc[0]["gpu_model"] == "A100-80GB"  # "A100" mapped by its memory, as the row-by-row reader does
    pd.testing.assert_frame_equal(fast, _row_by_row(text))
    # a blank line or a quoted line break: line numbers could not be told column by column -> row by row
    assert oc._parse_columnar(text.replace("\n", "\n\n", 3), cols, "t.csv") is None
    assert oc._parse_columnar(text.replace("box", '"b\nox"', 1), cols, "t.csv") is None


def test_a_fault_deep_in_a_big_file_is_named_by_its_line():
    cols = ["provider", "region", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "pricing",
            "usd_per_hour"]
    rows = [["myco", f"dc{i}", "box", "A100-80GB", "8", "80", "on_demand", "10"] for i in range(3000)]
    rows[2500][7] = "inf"
    with pytest.raises(InputError) as ei:
        oc.parse_offers_csv(_text(cols, rows), "t.csv")
    assert "line 2502" in str(ei.value) and "usd_per_hour" in str(ei.value)


def test_candidates_built_without_init_equal_the_dataclass():
    """candidates_for fills each Candidate's __dict__ at once (big catalogs); every field of the dataclass must be
    there and the object must equal one built by Candidate(...)."""
    import dataclasses

    from optimizer.planning.candidates import Candidate, candidates_for, offer_key
    from optimizer.sizing import Workload
    from optimizer.sizing.specs import load_model
    from pricing_cache.store import load_offers

    offers, _ = load_offers(use_cache=False)
    cands, _, _ = candidates_for(Workload(task="serve", model=load_model("meta-llama/Llama-2-7b-hf"),
                                          tokens_per_second=500.0), offers.head(300), allow_spot=True)
    assert len(cands) > 100
    names = [f.name for f in dataclasses.fields(Candidate)]
    for c in cands:
        assert c == Candidate(**{n: getattr(c, n) for n in names})
        assert c.okey == offer_key(c.offer) == c.key
        with pytest.raises(dataclasses.FrozenInstanceError):
            c.key = "x"


@pytest.mark.parametrize("extra", [
    "ΑΣ,r,box,H100,8,80,on_demand,30,,\n",                      # final sigma: Python lowers to 'ας', pyarrow 'ασ'
    "myco,r,box,H100,8,80,on_demand,30,İnfiniband,\n",          # dotted capital I: not a known fabric in Python
    "İBM,r,box,H100,8,80,on_demand,30,,\ni̇bm,r,box,H100,8,80,on_demand,31,,\n",  # a duplicate once lowered
    "my\x00co,r,box,H100,8,80,on_demand,30,,\n",               # a NUL: keys are joined with NUL
    "myco,b\x00c,d,H100,8,80,on_demand,10,ethernet,local_zone\nmyco,b,c\x00d,H100,8,80,on_demand,20,ethernet,"
    "local_zone\nmyco,b\x00c,d,H100,8,80,spot,15,ethernet,local_zone\n",  # two places, one NUL-joined key
])
def test_the_breakers_files_read_as_the_row_by_row_reader_reads_them(extra):
    """A breaker's reproducers: the columnar reader lower-cased with pyarrow's Unicode case mapping (not Python's)
    and joined keys with NUL; it now hands such files to the row-by-row reader."""
    head = "provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,fabric,zone_kind\n"
    fill = "".join(f"myco,dc{i},box,A100-80GB,8,80,on_demand,20,ethernet,local_zone\n" for i in range(20))
    text = head + fill + extra
    header = [h.strip() for h in next(csv.reader(io.StringIO(text)))]
    assert oc._parse_columnar(text, header, "t.csv") is None
    slow = _row_by_row(text)
    try:
        got = oc.parse_offers_csv(text, "t.csv")
    except InputError as e:
        assert isinstance(slow, InputError) and str(e) == str(slow)
    else:
        pd.testing.assert_frame_equal(got, slow)


def test_a_missing_interconnect_is_the_known_types_own():
    # a fresh user's catalog without the interconnect column had AWS p4d sized as PCIe (601 -> 348 tokens/s a
    # replica, the plan 46 % dearer): the known clouds' types take the documented facts
    # (providers.skypilot.interconnect_for), any other provider PCIe; both readers agree
    cols = ["provider", "region", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "pricing",
            "usd_per_hour", "as_of"]
    text = _text(cols, [["aws", "us-east-1", "p4d.24xlarge", "A100-40GB", "8", "40", "on_demand", "21.957642",
                         "2026-10-01"],
                        ["aws", "us-east-1", "g5.12xlarge", "A10G", "4", "24", "on_demand", "5.672", "2026-10-01"],
                        ["onprem", "dc1", "dgx-a100", "A100-80GB", "8", "80", "on_demand", "18.5", "2026-10-01"]])
    fast = oc._parse_columnar(text, cols, "t.csv")
    slow = _row_by_row(text)
    for df in (fast, slow):
        assert list(df["interconnect"]) == ["nvlink", "pcie", "pcie"]
