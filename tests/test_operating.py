"""The operating point of a serving replica at a request rate (issue 27, point 1): queueing against closed forms,
the simulation's determinism, and latency that follows the load."""

from __future__ import annotations

import pytest

from optimizer.sizing import Workload, operating_point, replicas_at_load
from optimizer.sizing.operating import Engine, mean_field, simulate
from optimizer.sizing.specs import load_gpu, load_model


def _const(step_s: float, pre_s: float, cap: int, out: float) -> Engine:
    return Engine(step=lambda b: step_s, prefill_s=pre_s, prefill_latency_s=pre_s, cap=cap, output_tokens=out)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_one_slot_one_token_is_m_d_1(rho):
    """One slot and one-token requests: each request holds the replica for exactly S = prefill + one iteration, so
    with Poisson arrivals the replica is an M/D/1 queue and the mean TTFT is S + rho S / (2 (1 - rho))
    (Pollaczek-Khinchine mean wait for deterministic service)."""
    S = 0.010 + 0.040
    e = _const(0.010, 0.040, 1, 1.0)
    got = simulate(e, rho / S, n_requests=20000, warmup=1000, time_budget_s=10.0)
    want = S + rho * S / (2 * (1 - rho))
    assert got.ttft_ms / 1e3 == pytest.approx(want, rel=0.06)
    assert e.max_rate() == pytest.approx(1 / S)


def test_the_simulation_is_deterministic_and_agrees_with_the_mean_field():
    e = _const(0.020, 0.050, 64, 200.0)
    a, b = simulate(e, 3.0, seed=7), simulate(e, 3.0, seed=7)
    assert a == b
    mf = mean_field(e, 3.0)
    # constant step: TPOT = step / (1 - rate x prefill) = 0.020 / 0.85 (the mean field is exact here)
    assert mf.tpot_ms == pytest.approx(1e3 * 0.020 / (1 - 3.0 * 0.050))
    assert a.tpot_ms == pytest.approx(mf.tpot_ms, rel=0.05)
    assert a.batch == pytest.approx(mf.batch, rel=0.1)  # Little: rate x O x TPOT = 3 x 200 x 23.5 ms = 14.1


def test_saturation():
    e = _const(0.020, 0.050, 8, 100.0)
    # 8 slots x 1 / (100 x 20 ms + 8 x 50 ms): 3.33 requests/s
    assert e.max_rate() == pytest.approx(8 / (100 * 0.020 + 8 * 0.050))
    assert mean_field(e, 4.0).saturated and simulate(e, 4.0).saturated
    assert not simulate(e, 2.0).saturated


def test_latency_follows_the_load_llama_3_1_70b_on_4_h100():
    """Issue 27: TTFT and TPOT were the same at 0.5, 2, 8 and 32 requests/s, with "concurrency 332" at 0.5.
    Published sweeps of such setups: TPOT ~20 ms at low load rising to 60-90 ms near saturation. One replica
    (TP4, vLLM, 1,000 in / 200 out) at rising rates: the batch and both latencies rise, the p99 above the p50."""
    w = Workload(task="serve", model=load_model("Llama-3.1-70B"), precision="bf16", input_tokens=1000,
                 output_tokens=200)
    h100 = load_gpu("H100-80GB")
    pts = [operating_point(w, h100, 4, 1, r) for r in (0.5, 2.0, 8.0)]
    assert pts[0].batch < 3 and 12 <= pts[0].tpot_ms <= 25
    assert pts[0].tpot_ms < pts[1].tpot_ms < pts[2].tpot_ms and pts[2].tpot_ms > 40
    assert pts[0].ttft_ms < pts[2].ttft_ms
    assert all(p.ttft_p99_ms > p.ttft_p50_ms and p.tpot_p99_ms >= p.tpot_p50_ms for p in pts)
    assert operating_point(w, h100, 4, 1, 32.0).saturated
    # 32 requests/s under the chat target (p99 TPOT <= 50 ms): more replicas, each below saturation
    n, pt = replicas_at_load(w, h100, 4, 1, 32.0)
    assert n >= 4 and pt.tpot_p99_ms <= 50 and pt.utilization < 1


def test_estimate_sweep_draws_the_curve_and_its_pareto_front(tmp_path):
    """`gpuopt estimate --sweep`: points per precision and TP size; tokens/s per GPU rises with the load while
    tokens/s per user falls; the Pareto front is exactly the non-dominated points; a PNG with --chart."""
    import json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    png = tmp_path / "curve.png"
    r = CliRunner().invoke(app, ["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "L40S",
                                 "--precision", "bf16,fp8", "--sweep", "--chart", str(png), "--format", "json"])
    assert r.exit_code == 0, r.output
    pts = json.loads(r.stdout)["curve"]
    assert {(p["precision"], p["tensor_parallel"]) for p in pts} >= {("bf16", 1), ("fp8", 1)}
    one = [p for p in pts if (p["precision"], p["tensor_parallel"]) == ("bf16", 1)]
    assert [p["tokens_per_second_per_gpu"] for p in one] == sorted(p["tokens_per_second_per_gpu"] for p in one)
    assert one[0]["tokens_per_second_per_user"] > one[-1]["tokens_per_second_per_user"]
    front = [p for p in pts if p["pareto"]]
    assert front
    for p in pts:
        dominated = any(q["tokens_per_second_per_gpu"] >= p["tokens_per_second_per_gpu"]
                        and q["tokens_per_second_per_user"] >= p["tokens_per_second_per_user"]
                        and q != p for q in pts)
        assert p["pareto"] == (not dominated)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = CliRunner().invoke(app, ["estimate", "--model", "llama-2-7b", "--task", "train", "--tokens", "1e9",
                                   "--sweep"])
    assert bad.exit_code == 1 and "sweep" in bad.output


@pytest.mark.parametrize("scenario, ttft_t, tpot_t", [("chat", 2000.0, 50.0), ("interactive", 450.0, 40.0)])
def test_a_plan_says_how_loaded_its_replicas_run_at_peak(scenario, ttft_t, tpot_t):
    """Issue 27 point 2 (in part): a serving plan reports its replicas' operating point at the peak demand -- the
    demand routed in proportion to the replicas' sized throughput, each replica's rate, its share of the rate it
    saturates at, and p99 TTFT/TPOT simulated at that load. The replicas are sized at the largest batch whose p99
    meets the targets, so at the plan's (lower) load the simulated p99 must meet them too."""
    import json as _json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--tokens-per-second",
                                 "5000", "--scenario", scenario, "--provider", "aws", "--no-explain", "--format",
                                 "json"])
    assert r.exit_code == 0, r.output
    d = _json.loads(r.stdout)
    (w,) = d["workloads"]
    ap = w["at_peak"]
    assert ap["method"] == "simulation" and not ap["saturated"]
    assert 0.05 < ap["utilization"] < 1.0
    assert ap["ttft_p99_ms"] <= ttft_t and ap["tpot_p99_ms"] <= tpot_t
    # the rate: the peak demand's requests/s (128 output tokens each) shared by capacity, so at most all of it
    assert ap["rate_per_replica"] <= 5000 / 128 + 1e-6
    assert any(n.startswith("workload: at its peak") and f"{100 * ap['utilization']:.0f} %" in n for n in d["notes"])


# ------------------------------------------------------------------ a finite benchmark run, the operating capacity


def test_a_finite_run_above_saturation_builds_the_queue_a_load_generator_sees():
    """vLLM's benchmark_serving sends N prompts at rate R; above the replica's capacity the queue grows through the
    run, so TTFT depends on N. One slot, deterministic service S: request k arrives near k / R and starts near k S,
    so the median request (k = N / 2) waits about N / 2 x (S - 1 / R)."""
    S = 0.010 + 0.040
    e = _const(0.010, 0.040, 1, 1.0)
    rate, n = 2.0 / S, 400
    got = simulate(e, rate, n_requests=n, transient=True, seed=3)
    assert got.saturated and got.method == "simulation (finite run)"
    assert got.ttft_p50_ms / 1e3 == pytest.approx(n / 2 * (S - 1 / rate), rel=0.15)
    # the benchmark's output throughput: the replica's capacity, not the offered rate
    assert got.tokens_per_second == pytest.approx(1 / S, rel=0.05)
    longer = simulate(e, rate, n_requests=2 * n, transient=True, seed=3)
    assert longer.ttft_p50_ms > 1.8 * got.ttft_p50_ms
    # below saturation a long finite run agrees with the steady state
    calm = simulate(e, 0.5 / S, n_requests=4000, transient=True, time_budget_s=10.0)
    steady = simulate(e, 0.5 / S, n_requests=4000, time_budget_s=10.0)
    assert calm.ttft_ms == pytest.approx(steady.ttft_ms, rel=0.1)


def test_capacity_at_the_operating_point_is_the_highest_rate_meeting_the_p99_targets():
    from optimizer.sizing.operating import max_rate_within, tpot_tail

    e = _const(0.020, 0.050, 64, 200.0)
    # no target: the saturation rate itself
    free = max_rate_within(e, None, None)
    assert free.rate == pytest.approx(e.max_rate(), rel=1e-6) and free.utilization == pytest.approx(1.0)
    # TPOT target 30 ms at p99 = mean x the simulation's tail (tpot_tail: 1.1 + 4 r^0.6 u^0.25, r = 50 ms / (200 x
    # 20 ms)): below the rate a constant 1.15 would give, (1 - 20 ms / (30 / 1.15 ms)) / 50 ms = 4.67/s
    pt = max_rate_within(e, None, 30.0, p99_over_mean=(1.73, 1.15))
    assert pt.tpot_ms * tpot_tail(e, pt.utilization, 1.15) == pytest.approx(30.0, rel=1e-3)
    assert pt.rate < (1 - 0.020 / (30.0 / 1.15 / 1e3)) / 0.050
    assert tpot_tail(e, 0.5) == pytest.approx(1.1 + 4.0 * (0.050 / (200 * 0.020)) ** 0.6 * 0.5 ** 0.25)
    # targets that bind nowhere: held at 95 % of saturation (the breaker's "6.7 days" TTFT at 100 %)
    assert max_rate_within(e, 1e12, 1e12, p99_over_mean=(1.73, 1.15)).utilization == pytest.approx(0.95)
    # a TTFT target binds through the queue: a tighter one gives a lower rate, at the target exactly
    loose = max_rate_within(e, 600.0, None, p99_over_mean=(1.73, 1.15))
    tight = max_rate_within(e, 300.0, None, p99_over_mean=(1.73, 1.15))
    assert tight.rate < loose.rate < e.max_rate()
    assert tight.ttft_ms * 1.73 == pytest.approx(300.0, rel=1e-3)
    # a target no rate meets
    assert max_rate_within(e, 50.0, None, p99_over_mean=(1.73, 1.15)) is None


def test_a_serving_replica_is_sized_at_its_operating_point():
    """Issue 27 point 2: with targets the replica's capacity is the rate whose p99s meet them (tokens/s = rate x
    output tokens) and it states its utilization; offline replicas run at saturation (no rate, no utilization)."""
    from optimizer.sizing import size_replica
    from optimizer.sizing import serving as sv

    m, h100 = load_model("Llama-3.1-70B"), load_gpu("H100-80GB")
    chat = size_replica(Workload(task="serve", model=m, precision="bf16", scenario="chat"), h100, 4)
    assert chat.request_rate is not None and 0 < chat.utilization < 1
    assert chat.tokens_per_second_per_replica == pytest.approx(chat.request_rate * chat.output_tokens)
    assert chat.time_per_output_token_ms * sv.P99_OVER_MEAN_TPOT <= 50.0 + 1e-6
    assert any("sized at the operating point" in a for a in chat.assumptions)
    # the server scenario's 2 s TTFT binds through the wait for a slot (Llama-2-13B on one L40S: 68 % of
    # saturation, where the batch alone allowed 276 tokens/s); else TPOT binds, or the 95 % cap
    server = size_replica(Workload(task="serve", model=m, precision="bf16", scenario="server"), h100, 4)
    assert server.ttft_ms * sv.P99_OVER_MEAN_TTFT <= 2000.0 and server.utilization <= 0.95
    l13 = size_replica(Workload(task="serve", model=load_model("Llama-2-13b-hf"), precision="bf16",
                                scenario="server", input_tokens=1024, output_tokens=256), load_gpu("L40S"), 1)
    assert l13.ttft_ms * sv.P99_OVER_MEAN_TTFT == pytest.approx(2000.0, rel=0.01) and l13.utilization < 0.75
    offline = size_replica(Workload(task="serve", model=m, precision="bf16", scenario="offline"), h100, 4)
    assert offline.request_rate is None and offline.utilization is None
    assert offline.tokens_per_second_per_replica > server.tokens_per_second_per_replica


def test_vllm_v0_carries_its_fitted_host_time_on_every_iteration():
    """benchmarks/latency_fit.py fits host time per iteration by engine generation on published rate sweeps: vLLM's
    V0 engine (0.7.3, AccelMark) 12 ms + 0.02 ms per running sequence, V1 0 ms (it overlaps the host work)."""
    from optimizer.sizing import serving as sv

    m, a100 = load_model("Llama-3.1-8B"), load_gpu("A100-80GB")
    lay = sv.Layout(1, 1)
    v1 = sv.point(m, a100, lay, "bf16", sv.load_engine("vllm"), 64, 280, 310)
    v0 = sv.point(m, a100, lay, "bf16", sv.load_engine("vllm-v0"), 64, 280, 310)
    assert v0.step_ms - v1.step_ms == pytest.approx(12.0 + 0.02 * 64 - 0.0, abs=1e-6)
    assert sv.load_engine("vllm0").name == "vllm-v0" and sv.load_engine("vllm-v0").max_batch(a100) == 256


def test_the_fitted_latency_model_on_full_statistics_vllm_sweeps():
    """The IOG-Foundation vLLM 0.8.5 sweeps (ShareGPT, Poisson 1-32 requests/s, 200 prompts per rate; full
    statistics; benchmarks/data/rate_sweeps.csv) replayed as run, with the shipped V1 host time: 80 % of median TPOT
    and 60 % of median TTFT within +-35 % (benchmarks/latency_fit.py prints the same)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    import latency_fit as lf

    rows, _left = lf.load_rows(str(root / "benchmarks" / "data" / "rate_sweeps.csv"))
    iog = [r for r in rows if "IOG-Foundation" in r.source]
    assert len(iog) == 55 and {r.group for r in iog} == {"vllm"}
    from optimizer.sizing.serving import ENGINES

    errs = lf.score(iog, {"vllm": (ENGINES["vllm"].step_overhead_s, ENGINES["vllm"].seq_overhead_s)})
    within = {k: sum(abs(x) <= 0.35 for x in v) / len(v) for k, v in errs.items()}
    assert within["tpot"] >= 0.78 and within["ttft"] >= 0.58
    # and without the host time the V0 rows are far worse: the fit is doing something
    v0 = [r for r in rows if r.group == "vllm-v0"][:40]
    assert lf.loss(v0, ENGINES["vllm-v0"].step_overhead_s, ENGINES["vllm-v0"].seq_overhead_s) < lf.loss(v0, 0.0, 0.0)


# ------------------------------------------------------------------ serving options: prefix cache, speculative decoding


def test_tokens_per_verification_is_leviathan_et_al_eq_1():
    """Expected tokens per speculative step, (1 - a^(k+1)) / (1 - a) (Leviathan, Kalman, Matias, ICML 2023, eq. 1):
    their Table 1 style figures -- a = 0.8, k = 4: 3.36; a = 0.6, k = 2: 1.96; k = 0: 1."""
    from optimizer.sizing.serving import tokens_per_verification

    assert tokens_per_verification(4, 0.8) == pytest.approx((1 - 0.8 ** 5) / 0.2) == pytest.approx(3.3616)
    assert tokens_per_verification(2, 0.6) == pytest.approx(1.96)
    assert tokens_per_verification(0, 0.9) == 1.0


def _sized(**kw):
    from optimizer.sizing import size_replica

    w = Workload(task="serve", model=load_model("Llama-3.1-70B"), precision="bf16", input_tokens=4000,
                 output_tokens=200, **kw)
    return size_replica(w, load_gpu("H100-80GB"), 4)


def test_a_prefix_cache_cuts_prefill_where_prompts_are_long():
    """80 % of a 4,000-token prompt from the prefix cache: a fifth of the prefill left, so TTFT falls and a
    prefill-heavy replica serves more at the same targets; at 0 % nothing changes."""
    base, cached = _sized(scenario="chat"), _sized(scenario="chat", prefix_cache_hit_rate=0.8)
    assert _sized(scenario="chat", prefix_cache_hit_rate=0.0).tokens_per_second_per_replica == \
        base.tokens_per_second_per_replica
    assert cached.tokens_per_second_per_replica > 2 * base.tokens_per_second_per_replica
    off, off_cached = _sized(scenario="offline"), _sized(scenario="offline", prefix_cache_hit_rate=0.8)
    assert off_cached.ttft_ms < off.ttft_ms and off_cached.concurrency == off.concurrency  # the same KV per sequence
    assert any("prefix cache: 80%" in a for a in cached.assumptions)


def test_speculative_decoding_helps_small_batches_and_fades_at_large_ones():
    """Speculation trades FLOPs for fewer memory-bound iterations: at batch 1 (interactive) TPOT falls by about
    the tokens per verification less the draft and verification cost; at a large offline batch, where the
    iteration is closer to compute-bound, the gain is much smaller."""
    from optimizer.sizing import serving as sv

    m, h100 = load_model("Llama-3.1-70B"), load_gpu("H100-80GB")
    lay = sv.Layout(4, 1)
    plain = sv.load_engine("vllm")
    spec = sv.engine_for(Workload(task="serve", model=m, speculative_tokens=4, acceptance_rate=0.7))
    e = sv.tokens_per_verification(4, 0.7)  # 2.77
    one = sv.point(m, h100, lay, "bf16", plain, 1, 1000, 200).tpot_ms / sv.point(m, h100, lay, "bf16", spec, 1, 1000,
                                                                               200).tpot_ms
    assert 0.75 * e < one < e
    big = sv.point(m, h100, lay, "bf16", plain, 256, 1000, 200).tpot_ms / sv.point(m, h100, lay, "bf16", spec, 256,
                                                                                 1000, 200).tpot_ms
    assert big < 0.75 * one
    assert any("speculative decoding: 4 draft tokens" in a for a in _sized(
        scenario="interactive", speculative_tokens=4, acceptance_rate=0.7).assumptions)


@pytest.mark.parametrize("kw, field", [
    ({"prefix_cache_hit_rate": 1.0}, "prefix_cache_hit_rate"),
    ({"speculative_tokens": 3}, "acceptance_rate"),
    ({"speculative_tokens": 3, "acceptance_rate": 1.5}, "acceptance_rate"),
    ({"acceptance_rate": 0.5}, "acceptance_rate"),
    ({"speculative_tokens": 40, "acceptance_rate": 0.5}, "speculative_tokens"),
])
def test_serving_options_refuse_what_does_not_mean_anything(kw, field):
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing import validate_workload

    with pytest.raises(InputError) as exc:
        validate_workload(Workload(task="serve", model=load_model("Llama-3.1-8B"), **kw))
    assert exc.value.field == field


def test_cli_estimate_and_recommend_take_the_serving_options(tmp_path):
    import json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    r = CliRunner().invoke(app, ["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "L40S",
                                 "--input-tokens", "3000", "--prefix-cache-hit-rate", "0.5", "--speculative-tokens",
                                 "3", "--acceptance-rate", "0.6", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert any("prefix cache: 50%" in a for a in d["assumptions"])
    assert any("speculative decoding: 3 draft tokens" in a for a in d["assumptions"])
    bad = CliRunner().invoke(app, ["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--speculative-tokens",
                                   "3"])
    assert bad.exit_code == 1 and "acceptance_rate" in bad.output and "Traceback" not in bad.output
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--tokens-per-second",
                                 "500", "--provider", "aws", "--prefix-cache-hit-rate", "0.5", "--no-explain",
                                 "--print-workload"])
    assert r.exit_code == 0 and "prefix_cache_hit_rate: 0.5" in r.output


# ------------------------------------------------------------------ --trace replays arrival times


def _write_trace(path, times, inp=800, out=200):
    lines = ["timestamp,input_tokens,output_tokens"] + [f"{t},{inp},{out}" for t in times]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_trace_with_arrival_times_is_replayed_and_bursts_cost_latency(tmp_path):
    """Issue 27 point 1: `--trace` replays arrival times when the trace has them. The same mean rate (4
    requests/s) as 20-request bursts every 5 s queues far more than Poisson arrivals: p99 TTFT well above."""
    from optimizer.sizing.serving import load_trace

    bursts = [5.0 * k for k in range(150) for _ in range(20)]
    t = load_trace(str(_write_trace(tmp_path / "bursty.csv", bursts)))
    assert t.requests == 3000 and t.arrivals[0] == 0.0 and t.rate == pytest.approx(2999 / 745.0)
    assert t.lengths[0] == (800, 200) and "replayed by the operating point" in t.describe()
    w = Workload(task="serve", model=load_model("Llama-3.1-8B"), precision="bf16", input_tokens=800,
                 output_tokens=200)
    l40s = load_gpu("L40S")
    burst = operating_point(w, l40s, 1, 1, t.rate, trace=t)
    poisson = operating_point(w, l40s, 1, 1, t.rate)
    assert burst.method == "simulation (trace arrivals)" and poisson.method == "simulation"
    assert burst.ttft_p99_ms > 3 * poisson.ttft_p99_ms
    # dealt round-robin over more replicas the bursts shrink
    assert operating_point(w, l40s, 1, 1, t.rate / 4, trace=t, replicas=4).ttft_p99_ms < burst.ttft_p99_ms


def test_trace_times_may_be_iso_timestamps_and_a_bad_one_is_named(tmp_path):
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing.serving import load_trace

    p = _write_trace(tmp_path / "iso.csv", ["2026-01-05T10:00:01Z", "2026-01-05T10:00:00Z", "2026-01-05T10:00:03Z"])
    t = load_trace(str(p))
    assert t.arrivals == (0.0, 1.0, 3.0) and t.rate == pytest.approx(2 / 3)
    bad = _write_trace(tmp_path / "bad.csv", ["0", "soon"])
    with pytest.raises(InputError) as exc:
        load_trace(str(bad))
    assert exc.value.field == "trace" and "line 3" in exc.value.message
    # a trace without arrival times keeps only its lengths
    plain = tmp_path / "plain.csv"
    plain.write_text("input_tokens,output_tokens\n100,10\n300,30\n", encoding="utf-8")
    assert load_trace(str(plain)).arrivals == () and load_trace(str(plain)).rate is None


def test_small_things_a_breaker_found():
    """--request-rate 0 was accepted by estimate (recommend refuses it); a vanishing rate lost the simulated times'
    precision (TTFT p50 0.0 ms); 16 draft tokens at acceptance 0.01 were planned silently though slower."""
    from gpuopt import api
    from gpuopt.kernel.errors import InputError

    with pytest.raises(InputError) as exc:
        api.estimate(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", request_rate=0.0)
    assert exc.value.field == "request_rate"
    tiny = api.estimate(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", request_rate=1e-12)
    op = tiny.numbers["operating_point"]
    assert op["ttft_p99_ms"] == op["ttft_ms"] > 20 and "vanishing" in op["method"]
    slow = api.estimate(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", speculative_tokens=16,
                        acceptance_rate=0.01)
    assert any(a.startswith("WARNING: speculative decoding is slower than none") for a in slow.assumptions)
    # a fixed concurrency caps the simulated batch (it ran 51 sequences at --concurrency 4)
    capped = api.estimate(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", concurrency=4,
                          request_rate=3.0)
    assert capped.numbers["operating_point"]["batch"] <= 4.0
