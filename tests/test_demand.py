"""Demand profiles (every CSV layout, binning by max, errors with line numbers) and the load-duration-curve merge."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.kernel.errors import InputError
from optimizer.planning.demand import DemandProfile, flat_profile, inline_profile, load_profile, merge_blocks

PROFILES = Path(__file__).parent / "fixtures" / "profiles"
CHAT = PROFILES / "chat_daily.csv"


def _csv(tmp_path, text: str, name: str = "p.csv") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def _hours_csv(tmp_path, values, column="hour", demand="demand") -> Path:
    rows = "\n".join(f"{i},{v}" for i, v in enumerate(values))
    return _csv(tmp_path, f"{column},{demand}\n{rows}\n")


def _check_month(p: DemandProfile) -> None:
    assert p.total_hours == pytest.approx(730.0)
    assert p.peak == max(p.values)
    assert p.mean == pytest.approx(sum(b.hours * b.demand for b in p.blocks) / 730.0)
    assert [b.index for b in p.blocks] == list(range(len(p.blocks)))


# ------------------------------------------------------------------------------------------- layouts
def test_hour_of_day_fixture():
    p = load_profile(CHAT)
    _check_month(p)
    assert (p.kind, p.period_hours, p.unit, len(p.blocks)) == ("hour_of_day", 24, "tokens/s", 24)
    assert p.blocks[0].hours == pytest.approx(730 / 24)
    assert p.blocks[19].label == "19:00-20:00" and p.blocks[19].demand == 1400
    assert p.peak == 1400 and min(p.values) == 150
    assert p.source == str(CHAT)


def test_hour_of_week_layout_and_case_insensitive_columns(tmp_path):
    values = [100 + (i % 24) * 10 + (i // 24) for i in range(168)]
    p = load_profile(_hours_csv(tmp_path, values, "Hour_Of_Week", "Tokens_Per_Second"))
    _check_month(p)
    assert (p.kind, p.period_hours, len(p.blocks)) == ("hour_of_week", 168, 168)
    assert p.blocks[0].hours == pytest.approx(730 / 168)
    assert p.blocks[0].label == "Mon 00:00" and p.blocks[167].label == "Sun 23:00"
    assert list(p.values) == values


def test_rows_in_any_order_and_comments_and_blank_lines(tmp_path):
    rows = [f"{h},{h * 10}" for h in range(24)][::-1]
    p = load_profile(_csv(tmp_path, "# a comment\n\nhour,demand\n" + "\n".join(rows) + "\n\n"))
    assert list(p.values) == [h * 10 for h in range(24)]


def test_timestamps_bin_by_hour_of_week_taking_the_max(tmp_path):
    # two weeks of 30-minute samples starting Monday 2024-03-04 (naive = UTC); demand = hour of week,
    # except one spike in week 2; each bin keeps the MAX of its rows (capacity covers the peak)
    from datetime import datetime, timedelta

    start = datetime(2024, 3, 4)
    lines = ["timestamp,demand"]
    for k in range(14 * 48):
        t = start + timedelta(minutes=30 * k)
        how = t.weekday() * 24 + t.hour
        d = how + (0.5 if t.minute == 30 else 0)
        if k == 7 * 48 + 10:  # Monday 05:00 of week 2
            d = 999
        lines.append(f"{t.isoformat()},{d}")
    p = load_profile(_csv(tmp_path, "\n".join(lines) + "\n"))
    _check_month(p)
    assert (p.kind, p.period_hours, len(p.blocks)) == ("timestamps", 168, 168)
    assert p.blocks[5].demand == 999
    assert p.blocks[6].demand == 6.5
    assert "max" in p.note and "peak" in p.note
    assert p.span == ("2024-03-04T00:00:00+00:00", "2024-03-17T23:30:00+00:00")


def test_timestamps_any_timezone_converted_to_utc(tmp_path):
    # 02:00+02:00 is 00:00 UTC; Z and naive are UTC
    rows = ["timestamp,demand"] + [f"2024-03-04T{h:02d}:00:00Z,{h}" for h in range(24)]
    rows[1] = "2024-03-04T02:00:00+02:00,500"
    p = load_profile(_csv(tmp_path, "\n".join(rows) + "\n"), blocks=24)
    assert (p.kind, p.period_hours, len(p.blocks)) == ("timestamps", 24, 24)
    assert p.blocks[0].demand == 500 and p.blocks[23].demand == 23


def test_timestamps_hour_of_day_takes_max_over_days(tmp_path):
    rows = ["timestamp,demand"]
    for day in range(3):
        rows += [f"2024-03-0{day + 1} {h:02d}:00:00,{h + 100 * day}" for h in range(24)]
    p = load_profile(_csv(tmp_path, "\n".join(rows) + "\n"), blocks=24)
    assert list(p.values) == [h + 200 for h in range(24)]


def test_timestamps_into_consecutive_blocks_of_the_month(tmp_path):
    # a 30-day month of hourly samples into 30 blocks: one per day (30 divides neither 24 nor 168)
    from datetime import datetime, timedelta

    start = datetime(2024, 4, 1)
    rows = ["timestamp,demand"] + [f"{(start + timedelta(hours=k)).isoformat()},{k // 24 * 10 + (k % 24)}"
                                   for k in range(30 * 24)]
    p = load_profile(_csv(tmp_path, "\n".join(rows) + "\n"), blocks=30)
    _check_month(p)
    assert (p.kind, p.period_hours, len(p.blocks)) == ("timestamps", 730, 30)
    assert list(p.values) == [d * 10 + 23 for d in range(30)]
    assert p.blocks[1].label == "2024-04-02 00:00"


def test_timestamps_empty_bins_are_named(tmp_path):
    rows = ["timestamp,demand"] + [f"2024-03-04T{h:02d}:00:00,{h}" for h in range(24)]  # Monday only
    with pytest.raises(InputError) as exc:
        load_profile(_csv(tmp_path, "\n".join(rows) + "\n"))
    assert exc.value.field == "demand_profile"
    assert "144 of the 168 blocks" in str(exc.value) and "Tue 00:00" in str(exc.value)


def test_rebinning_hour_layouts(tmp_path):
    f = _hours_csv(tmp_path, range(24))
    six = load_profile(f, blocks=6)  # 4-hour blocks of the day, max of each
    assert list(six.values) == [3, 7, 11, 15, 19, 23] and six.blocks[1].label == "04:00-08:00"
    assert six.blocks[0].hours == pytest.approx(730 / 6)
    week = load_profile(f, blocks=168)  # the day repeated over the week
    assert week.period_hours == 168 and week.values[24 + 5] == 5
    _check_month(week)
    g = _hours_csv(tmp_path, [i // 24 * 1000 + i % 24 for i in range(168)], "hour_of_week")
    day = load_profile(g, blocks=24)  # a week folded into a day: the max over the seven days
    assert list(day.values) == [6000 + h for h in range(24)]
    days = load_profile(g, blocks=7)
    assert list(days.values) == [d * 1000 + 23 for d in range(7)] and days.blocks[2].label == "Wed 00:00 (24 h)"
    with pytest.raises(InputError) as exc:
        load_profile(f, blocks=5)
    assert exc.value.field == "blocks"


def test_flat_and_inline():
    f = flat_profile(250)
    _check_month(f)
    assert (f.kind, len(f.blocks), f.blocks[0].hours, f.peak, f.mean) == ("flat", 1, 730, 250, 250)
    d = inline_profile([float(h) for h in range(24)])
    assert (d.kind, d.period_hours, d.blocks[3].label) == ("inline", 24, "03:00-04:00")
    w = inline_profile([1.0] * 168)
    assert w.period_hours == 168
    four = inline_profile([1, 2, 3, 4])
    assert (four.period_hours, four.blocks[0].hours) == (730, 182.5)
    assert list(inline_profile([1, 2, 3, 4], blocks=2).values) == [2, 4]
    for bad in ([], [1, -1], [math.nan], [1, "x"]):
        with pytest.raises(InputError) as exc:
            inline_profile(bad)
        assert exc.value.field == "demand"


# ------------------------------------------------------------------------------------------- CSV errors
@pytest.mark.parametrize(
    "text, expected",
    [
        ("hour,demand\n0,1\n1,-5\n", "line 3: demand must be 0 or more"),
        ("hour,demand\n0,1\n1,nan\n", "line 3: demand must be a finite number"),
        ("hour,demand\n0,1\n1,abc\n", "line 3: demand must be a number"),
        ("hour,demand\n0,1\n1,\n", "line 3: the demand is empty"),
        ("hour,demand\n0,1\n0,2\n", "line 3: hour 0 is given twice (first on line 2)"),
        ("hour,demand\n0,1\n24,2\n", "line 3: hour must be a whole number from 0 to 23"),
        ("hour,demand\n0,1\n1.5,2\n", "line 3: hour must be a whole number from 0 to 23"),
        ("hour_of_week,demand\n168,2\n", "line 2: hour_of_week must be a whole number from 0 to 167"),
        ("# c\nhour,load\n0,1\n", "line 2: unknown column 'load'"),
        ("hour,demand,tokens_per_second\n0,1,1\n", "exactly one time column and one demand column"),
        ("demand\n1\n", "exactly one time column and one demand column"),
        ("hour,demand\n0,1,2\n", "line 2: expected 2 values"),
        ("timestamp,demand\n2024-03-01T00:00,1\nyesterday,2\n", "line 3: 'yesterday' is not an ISO 8601 timestamp"),
        ("hour,demand\n", "has a header but no rows"),
        ("", "is empty"),
        ("hour,demand\n" + "".join(f"{h},1\n" for h in range(22)), "no row for hour 22, 23"),
    ],
)
def test_csv_errors_name_the_line(tmp_path, text, expected):
    with pytest.raises(InputError) as exc:
        load_profile(_csv(tmp_path, text))
    assert exc.value.field == "demand_profile"
    assert expected in str(exc.value)


def test_missing_file_and_bad_blocks(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_profile(tmp_path / "nope.csv")
    for bad in (0, -24, 2.5, True):
        with pytest.raises(InputError) as exc:
            load_profile(CHAT, blocks=bad)
        assert exc.value.field == "blocks"


# ------------------------------------------------------------------------------------------- merge
def test_merge_equal_demand_vectors():
    chat = load_profile(CHAT)
    merged = merge_blocks({"chat": chat})
    distinct = sorted(set(chat.values))
    assert len(merged) == len(distinct)
    assert merged.grid_blocks == 24
    assert merged.note == f"24 blocks -> {len(distinct)} merged blocks (equal demand merged, hours added)"
    by_demand = {b.demand["chat"]: b for b in merged}
    assert by_demand[1200].members == (9, 10, 11, 13, 14, 15)
    assert by_demand[1200].hours == pytest.approx(6 * 730 / 24)
    assert by_demand[1200].label == "09:00-10:00 (+5 more)"
    assert sum(b.hours for b in merged) == pytest.approx(730)
    assert [b.index for b in merged] == list(range(len(merged)))


def test_merge_vectors_not_values():
    # equal for one workload is not enough: the whole vector must match
    a = inline_profile([1, 1, 2, 2] * 6)
    b = inline_profile([5, 6, 5, 6] * 6)
    merged = merge_blocks({"a": a, "b": b})
    assert sorted((m.demand["a"], m.demand["b"]) for m in merged) == [(1, 5), (1, 6), (2, 5), (2, 6)]
    assert all(m.hours == pytest.approx(730 / 4) for m in merged)


def test_flat_aligns_with_anything_and_day_expands_into_week():
    chat = load_profile(CHAT)
    week = inline_profile([100.0 * (i // 24) for i in range(168)])
    merged = merge_blocks({"chat": chat, "week": week, "flat": flat_profile(7)})
    assert merged.grid_blocks == 168
    for m in merged:
        assert m.demand["flat"] == 7
        for j in m.members:
            assert m.demand["chat"] == chat.values[j % 24] and m.demand["week"] == week.values[j]
    assert sum(m.hours for m in merged) == pytest.approx(730)


def test_cyclic_blocks_of_different_lengths_align_on_the_finer_grid():
    six = inline_profile([float(h) for h in range(24)], blocks=6)  # 4-hour blocks of the day
    days = inline_profile([float(i // 24) for i in range(168)], blocks=7)  # days of the week
    merged = merge_blocks({"six": six, "days": days})
    assert merged.grid_blocks == 42  # 4-hour blocks of the week
    assert len(merged) == 42 and {m.demand["days"] for m in merged} == set(range(7))


def test_mismatched_grids_are_refused():
    with pytest.raises(InputError, match="one block count must divide the other"):
        merge_blocks({"a": inline_profile([1, 2, 3, 4]), "b": inline_profile([1, 2, 3, 4, 5, 6])})
    with pytest.raises(InputError, match="cannot align 'a'"):
        merge_blocks({"a": inline_profile([1, 2, 3, 4]), "b": load_profile(CHAT)})
    # calendar block counts that divide each other align
    merged = merge_blocks({"a": inline_profile([1, 2]), "b": inline_profile([1, 2, 3, 4])})
    assert [(m.demand["a"], m.demand["b"]) for m in merged] == [(1, 1), (1, 2), (2, 3), (2, 4)]


def test_splits_are_respected_for_cyclic_profiles():
    chat = load_profile(CHAT)
    merged = merge_blocks({"chat": chat}, splits=[240, 240.0, -5, 730, 1000])
    assert merged.splits == (240.0,)
    assert "split at 240 h" in merged.note
    for m in merged:
        assert m.end_hour <= 240 or m.start_hour >= 240
    before = [m for m in merged if m.end_hour <= 240]
    assert sum(m.hours for m in before) == pytest.approx(240)
    # every hour of the day is in the first 240 h, in proportion
    assert sum(m.hours for m in before if m.demand["chat"] == 1200) == pytest.approx(6 * 240 / 24)
    assert [m.start_hour for m in merged] == sorted(m.start_hour for m in merged)


def test_splits_cut_calendar_blocks():
    p = inline_profile([5, 5, 5, 5])  # four stretches of 182.5 h, all equal
    assert len(merge_blocks({"p": p})) == 1
    merged = merge_blocks({"p": p}, splits=[200])
    assert [(m.start_hour, m.end_hour, m.members) for m in merged] == [(0, 200, (0, 1)), (200, 730, (1, 2, 3))]
    assert [m.hours for m in merged] == pytest.approx([200, 530])


def test_no_serving_profile_gives_one_block_per_segment():
    merged = merge_blocks({}, splits=[100, 500])
    assert [(m.start_hour, m.end_hour, m.hours, m.demand) for m in merged] == [
        (0, 100, 100, {}), (100, 500, 400, {}), (500, 730, 230, {})]


# ------------------------------------------------------------------------------------------- property
_levels = st.sampled_from([0.0, 10.0, 25.0, 100.0, 400.0])


@st.composite
def _profile(draw):
    kind = draw(st.sampled_from(["flat", "day", "week", "day6", "week7"]))
    if kind == "flat":
        return flat_profile(draw(_levels))
    n = {"day": 24, "week": 168, "day6": 24, "week7": 168}[kind]
    values = draw(st.lists(_levels, min_size=n, max_size=n))
    return inline_profile(values, blocks={"day6": 6, "week7": 7}.get(kind))


@settings(max_examples=60, deadline=None)
@given(profiles=st.lists(_profile(), min_size=0, max_size=3),
       splits=st.lists(st.floats(min_value=-10, max_value=800, allow_nan=False), max_size=3))
def test_merge_preserves_demand_hours_and_peak(profiles, splits):
    named = {f"w{i}": p for i, p in enumerate(profiles)}
    merged = merge_blocks(named, splits)
    assert sum(m.hours for m in merged) == pytest.approx(730)
    for name, p in named.items():
        assert sum(m.hours * m.demand[name] for m in merged) == pytest.approx(p.demand_hours)
        assert max(m.demand[name] for m in merged) == p.peak
    for s in splits:
        assert all(m.end_hour <= s + 1e-9 or m.start_hour >= s - 1e-9 for m in merged)
    vectors = [(round(m.start_hour, 9), tuple(m.demand.values())) for m in merged]
    assert len(vectors) == len(set(vectors))  # nothing left unmerged within a segment
