"""The operating point of a serving replica at the load users send (issue 27, point 1).

:func:`optimizer.sizing.serving.point` gives the steady state of continuous batching with every slot busy (``batch``
sequences, each finished one replaced at once). At a request rate ``lam`` (requests/s per replica) the replica runs
fewer sequences, and its latency follows the load. Two models, the same physics:

* **Mean field** (:func:`mean_field`). A decode iteration of ``b`` running sequences takes ``step(b)`` seconds
  (:func:`optimizer.sizing.serving.decode_step_s` through ``point``); each arriving request's prefill takes
  ``pre`` seconds of the same GPU (chunked prefill rides in the iterations). In one second the replica spends
  ``lam x pre`` on prefill and the rest on iterations, each giving every running sequence one token, so
  ``TPOT = step(b) / (1 - lam x pre)``; by Little's law a request stays ``O x TPOT`` in decode, so
  ``b = lam x O x TPOT``. The operating batch is the least ``b`` solving both (``b`` is continuous here). The
  replica saturates at ``lam_max = B / (O step(B) + B pre)`` (``B`` the batch cap: KV cache, engine limits) --
  ``point(B)``'s requests/s -- or when ``lam x pre >= 1``. Mean TTFT = the wait for a slot + the request's prefill
  + one iteration; the wait is the M/D/1 mean ``rho S / (2 (1 - rho))`` with ``S = 1 / lam_max`` and
  ``rho = lam / lam_max`` (Pollaczek-Khinchine; a heavy-traffic approximation of a batch server, stated as one).
* **Simulation** (:func:`simulate`): a seeded discrete-event simulation of the same engine -- Poisson arrivals
  (or the trace's own arrival times), first-come first-served admission while a slot is free, each admitted
  request's prefill added to the iteration that admits it, one token per running sequence per iteration --
  event-driven (the batch is constant between an arrival and a completion, so iterations are advanced in runs),
  bounded in requests and time. It gives p50/p90/p99 TTFT and TPOT; the mean field checks it (tests).

Sources: continuous batching with chunked prefill (Orca, Yu et al. OSDI 2022; Sarathi-Serve, Agrawal et al. 2024,
arXiv 2403.02310); Little's law; the Pollaczek-Khinchine mean wait of M/D/1.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Callable, Sequence

#: Requests a simulation draws (after :data:`SIM_WARMUP` discarded): enough for a stable p99 (20 requests above it).
SIM_REQUESTS = 2000
SIM_WARMUP = 200


@dataclass(frozen=True)
class OperatingPoint:
    """A replica's state at ``rate`` requests/s: the mean running ``batch``, ``tokens_per_second`` generated,
    TTFT and TPOT (ms: mean, p50, p90, p99; the mean-field model gives means only, its percentiles None),
    ``utilization`` = rate / ``max_rate`` (the saturation rate, requests/s), ``saturated`` when the rate is at or
    above it (latency then grows without bound: the figures are None), ``method`` "mean-field" or "simulation"."""

    rate: float
    batch: float
    tokens_per_second: float
    ttft_ms: float | None
    tpot_ms: float | None
    max_rate: float
    utilization: float
    saturated: bool
    method: str
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p90_ms: float | None = None
    tpot_p99_ms: float | None = None

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Engine:
    """What the two models need of a replica: ``step(b)`` the decode iteration time at ``b`` running sequences
    (s, b >= 1), ``prefill_s`` the GPU time of one request's prefill (s), ``prefill_latency_s`` the time a prompt
    takes to cross the replica (s; = prefill_s without pipeline stages), ``cap`` the most running sequences,
    ``output_tokens`` the mean output length."""

    step: Callable[[int], float]
    prefill_s: float
    prefill_latency_s: float
    cap: int
    output_tokens: float

    def max_rate(self) -> float:
        """Requests/s at which the replica saturates (every slot busy): ``B / (O step(B) + B pre)``."""
        B = self.cap
        return B / (self.output_tokens * self.step(B) + B * self.prefill_s) if B >= 1 else 0.0


def _step_at(e: Engine, b: float) -> float:
    """step() interpolated at a fractional batch (linear between whole batches; step(0) = step(1))."""
    if b <= 1.0:
        return e.step(1)
    lo = int(math.floor(b))
    hi = min(e.cap, lo + 1)
    f = b - lo
    return (1.0 - f) * e.step(lo) + f * e.step(hi)


def mean_field(e: Engine, rate: float) -> OperatingPoint:
    """The mean-field operating point at ``rate`` requests/s (module docstring). Raises ValueError for a negative
    rate."""
    if rate < 0 or not math.isfinite(rate):
        raise ValueError(f"rate must be a finite number >= 0, got {rate!r}")
    lam_max = e.max_rate()
    util = rate / lam_max if lam_max > 0 else math.inf
    if rate == 0:
        t = e.step(1)
        return OperatingPoint(0.0, 0.0, 0.0, 1e3 * (e.prefill_latency_s + t), 1e3 * t, lam_max, 0.0, False,
                              "mean-field")
    if util >= 1.0 or rate * e.prefill_s >= 1.0:
        return OperatingPoint(rate, float(e.cap), lam_max * e.output_tokens, None, None, lam_max, util, True,
                              "mean-field")
    share = 1.0 - rate * e.prefill_s
    k = rate * e.output_tokens / share  # the fixed point: b = k step(b), step piecewise linear between whole batches

    # the least whole batch n with n >= k step(n) (gap(cap) >= 0 below saturation), by bisection on whole batches;
    # then the root inside [n - 1, n] in closed form (step linear there; step(b <= 1) = step(1))
    if 1.0 >= k * e.step(1):
        b = k * e.step(1)
    else:
        lo, hi = 1, e.cap
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if mid >= k * e.step(mid):
                hi = mid
            else:
                lo = mid
        s0, s1 = e.step(lo), e.step(hi)
        slope = s1 - s0
        # b = lo + f, f in [0, 1]: lo + f = k (s0 + f slope)  ->  f = (k s0 - lo) / (1 - k slope)
        den = 1.0 - k * slope
        f = (k * s0 - lo) / den if den > 1e-12 else 1.0
        b = lo + min(1.0, max(0.0, f))
    tpot = _step_at(e, b) / share
    s = 1.0 / lam_max
    wait = util * s / (2.0 * (1.0 - util))
    ttft = wait + e.prefill_latency_s + tpot
    return OperatingPoint(rate, b, rate * e.output_tokens, 1e3 * ttft, 1e3 * tpot, lam_max, util, False,
                          "mean-field")


def _percentile(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of xs by linear interpolation (numpy's default)."""
    s = sorted(xs)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    f = math.floor(k)
    c = min(len(s) - 1, f + 1)
    return s[f] + (s[c] - s[f]) * (k - f)


def simulate(e: Engine, rate: float, *, n_requests: int = SIM_REQUESTS, warmup: int = SIM_WARMUP, seed: int = 0,
             arrivals: Sequence[float] | None = None, lengths: Sequence[tuple[float, float]] | None = None,
             time_budget_s: float = 1.0, transient: bool = False) -> OperatingPoint:
    """A seeded discrete-event simulation of the replica at ``rate`` requests/s (module docstring).

    Args:
        e: the replica (:class:`Engine`); its ``step`` and ``prefill_s`` hold for the mean lengths.
        rate: Poisson arrival rate, requests/s (> 0); ignored when ``arrivals`` is given.
        n_requests, warmup: requests simulated, and how many first ones are left out of the statistics.
        seed: the random seed (the same seed gives the same figures).
        arrivals: arrival times (s, non-decreasing) to replay instead of Poisson arrivals (a trace).
        lengths: (input, output) tokens per request, cycled; prefill time scales with input / mean input and the
            output is the request's own (default: every request the mean lengths).
        time_budget_s: wall-clock bound; the simulation stops early (fewer requests counted) past it.
        transient: a finite run as a load generator makes it (vLLM ``benchmark_serving --num-prompts N
            --request-rate R``): every request counts (no warmup), and a rate above saturation still gives figures
            -- the queue grows through the run, so TTFT depends on ``n_requests``; ``tokens_per_second`` is then the
            output tokens over the run's makespan (the benchmark's "output token throughput").
    Returns:
        An :class:`OperatingPoint` ("simulation", or "simulation (finite run)"); ``saturated`` when the rate is at
        or above the mean-field saturation rate or the queue grew through the run (steady-state latency figures
        then None; a ``transient`` run keeps its figures).
    Raises:
        ValueError: rate <= 0 without arrivals.
    """
    import time as _time

    if arrivals is None and (rate <= 0 or not math.isfinite(rate)):
        raise ValueError(f"rate must be a finite number > 0, got {rate!r}")
    lam_max = e.max_rate()
    if arrivals is None:
        rng = random.Random(seed)
        t, arr = 0.0, []
        for _ in range(n_requests):
            t += rng.expovariate(rate)
            arr.append(t)
    else:
        arr = list(arrivals)[:n_requests]
        if len(arr) > 1:
            rate = (len(arr) - 1) / max(1e-12, arr[-1] - arr[0])
    util = rate / lam_max if lam_max > 0 else math.inf
    if transient:
        warmup = 0
    elif util >= 1.0:
        return OperatingPoint(rate, float(e.cap), lam_max * e.output_tokens, None, None, lam_max, util, True,
                              "simulation")
    mean_in = None
    if lengths:
        mean_in = sum(i for i, _ in lengths) / len(lengths)
    n = len(arr)
    size = [(lengths[k % len(lengths)] if lengths else (None, e.output_tokens)) for k in range(n)]
    first = [math.nan] * n
    done = [math.nan] * n
    left: dict[int, float] = {}  # running request -> tokens still to generate
    nxt = 0  # next request not yet admitted
    t = 0.0
    busy = 0.0  # batch x time, for the mean batch
    t0 = _time.perf_counter()
    while nxt < n or left:
        if _time.perf_counter() - t0 > time_budget_s:
            break
        if not left and nxt < n and arr[nxt] > t:
            t = arr[nxt]  # idle until the next arrival
        # admit every arrived request while a slot is free; their prefills ride in this iteration
        pre = 0.0
        admitted = []
        while nxt < n and arr[nxt] <= t and len(left) + len(admitted) < e.cap:
            i_tok = size[nxt][0]
            pre += e.prefill_s * (i_tok / mean_in if (i_tok is not None and mean_in) else 1.0)
            admitted.append(nxt)
            nxt += 1
        b = len(left)
        step = e.step(max(1, b + len(admitted)))
        if admitted:
            t += step + pre
            busy += (b + len(admitted)) * (step + pre)
            for k in admitted:
                first[k] = t  # the prefill gives the first token at the end of this iteration
                out = max(1.0, float(size[k][1]))
                if out <= 1.0:
                    done[k] = t
                else:
                    left[k] = out - 1.0
            for k in list(left):
                if k not in admitted:
                    left[k] -= 1.0
                    if left[k] <= 0:
                        done[k] = t
                        del left[k]
            continue
        # no admission: run iterations until the next completion or the next arrival
        runs = min(left.values())
        if nxt < n and len(left) < e.cap:
            runs = min(runs, max(1.0, math.ceil((arr[nxt] - t) / step)))
        runs = max(1.0, float(math.floor(runs)))
        t += runs * step
        busy += b * runs * step
        for k in list(left):
            left[k] -= runs
            if left[k] <= 1e-9:
                done[k] = t
                del left[k]
    counted = [k for k in range(warmup, n) if not math.isnan(done[k])]
    if transient and counted:
        return _figures(rate, busy / t if t > 0 else 0.0, sum(size[k][1] for k in counted) / max(1e-12, t - arr[0]),
                        [first[k] - arr[k] for k in counted],
                        [(done[k] - first[k]) / max(1.0, size[k][1] - 1.0) for k in counted if size[k][1] > 1],
                        lam_max, util, util >= 1.0, "simulation (finite run)")
    if len(counted) < max(20, (n - warmup) // 2):
        return OperatingPoint(rate, float(e.cap), lam_max * e.output_tokens, None, None, lam_max, util, True,
                              "simulation")
    ttft = [first[k] - arr[k] for k in counted]
    tpot = [(done[k] - first[k]) / max(1.0, size[k][1] - 1.0) for k in counted if size[k][1] > 1]
    # a queue that grows through the run: the wait of the last tenth far above the first tenth's
    tenth = max(1, len(ttft) // 10)
    if sum(ttft[-tenth:]) / tenth > 10.0 * max(sum(ttft[:tenth]) / tenth, e.prefill_latency_s + e.step(1)):
        return OperatingPoint(rate, float(e.cap), lam_max * e.output_tokens, None, None, lam_max, util, True,
                              "simulation")
    mean_out = sum(s[1] for s in size) / n
    return _figures(rate, busy / t if t > 0 else 0.0, rate * mean_out, ttft, tpot, lam_max, util, False,
                    "simulation (trace arrivals)" if arrivals is not None else "simulation")


def _figures(rate: float, batch: float, tokens_per_second: float, ttft: list[float], tpot: list[float],
             lam_max: float, util: float, saturated: bool, method: str) -> OperatingPoint:
    """An OperatingPoint from per-request TTFT and TPOT samples (s): means and p50/p90/p99 in ms."""
    return OperatingPoint(
        rate, batch, tokens_per_second, 1e3 * sum(ttft) / len(ttft),
        1e3 * sum(tpot) / len(tpot) if tpot else None, lam_max, util, saturated, method,
        ttft_p50_ms=1e3 * _percentile(ttft, 0.5), ttft_p90_ms=1e3 * _percentile(ttft, 0.9),
        ttft_p99_ms=1e3 * _percentile(ttft, 0.99),
        tpot_p50_ms=1e3 * _percentile(tpot, 0.5) if tpot else None,
        tpot_p90_ms=1e3 * _percentile(tpot, 0.9) if tpot else None,
        tpot_p99_ms=1e3 * _percentile(tpot, 0.99) if tpot else None)


def replica_engine(m, gpu, layout, precision: str, engine, input_tokens: float, output_tokens: float, *,
                   fit=None, hop: tuple[float, float] = (0.0, 0.0), scale=None,
                   window: float | None = None, overhead: tuple[float, float] | None = None) -> Engine | None:
    """The :class:`Engine` of a serving replica from the serving model (optimizer.sizing.serving: ``point``'s
    iteration time at each batch, the prefill, the batch cap); None when it does not start (weights, window).
    ``scale``: the user's measurement's correction (its TPOT factor scales the iteration, its TTFT factor the
    prefill). ``overhead``: (s per iteration, s per running sequence per iteration) of host time added to every
    iteration on top of the engine profile's own (``step_overhead_s`` / ``seq_overhead_s``, already in
    :func:`optimizer.sizing.serving.point`); ``benchmarks/latency_fit.py`` fits them with a profile of none."""
    from optimizer.sizing import serving as sv

    fit = fit or sv.FIT
    cap = sv.batch_cap(m, gpu, layout, precision, engine, input_tokens, output_tokens, window)
    if cap < 1:
        return None
    cache: dict[int, float] = {}
    k_tpot = scale.tpot if scale is not None else 1.0
    k_ttft = scale.ttft if scale is not None else 1.0
    a_s, c_s = overhead if overhead is not None else (0.0, 0.0)

    def step(b: int) -> float:
        b = max(1, min(int(b), cap))
        if b not in cache:
            cache[b] = k_tpot * (1e-3 * sv.point(m, gpu, layout, precision, engine, b, input_tokens, output_tokens,
                                                 fit, False, hop).step_ms + a_s + c_s * b)
        return cache[b]

    fresh = 1.0 - engine.prefix_hit  # the prefix cache's share of the prompt is not recomputed
    pre = fresh * sv.prefill_s(m, gpu, layout, precision, input_tokens, fit, engine.name)
    own = pre if layout.pipeline_parallel == 1 else fresh * sv.prefill_s(m, gpu, layout, precision, input_tokens,
                                                                         fit, engine.name, latency=True) \
        + (layout.pipeline_parallel - 1) * (hop[0] + input_tokens * hop[1]) + hop[0]
    return Engine(step=step, prefill_s=k_ttft * pre, prefill_latency_s=k_ttft * own, cap=cap,
                  output_tokens=float(output_tokens))


#: p99 / mean TPOT of the simulation (:func:`simulate`) as the planner's mean field takes it:
#: ``a + b x r^c x u^d`` with ``r = prefill / (output tokens x step(1))`` -- how long one prompt's prefill stalls a
#: running request against its whole decode -- and ``u`` the utilization. Fitted on the simulation of 14 setups x 6
#: loads (``python benchmarks/tail_fit.py``: median error 8 %, 80 % within +-15 %); never below the MLPerf ratio.
TPOT_TAIL = (1.10, 4.0, 0.6, 0.25)

#: The highest utilization a replica with a latency target is sized at: above it the M/D/1 wait for a slot grows
#: without bound (rho / (2 (1 - rho)) service times: 9.5 at 0.95) and a finite run never settles.
MAX_UTILIZATION = 0.95


def tpot_tail(e: Engine, utilization: float, floor: float = 1.0) -> float:
    """p99 / mean TPOT at ``utilization`` (:data:`TPOT_TAIL`), at least ``floor``."""
    a, b, c, d = TPOT_TAIL
    r = e.prefill_s / max(1e-12, e.output_tokens * e.step(1))
    return max(floor, a + b * r ** c * max(0.0, min(1.0, utilization)) ** d)


def max_rate_within(e: Engine, ttft_p99_ms: float | None, tpot_p99_ms: float | None, *,
                    p99_over_mean: tuple[float, float] = (1.0, 1.0)) -> OperatingPoint | None:
    """The replica's capacity at the operating point (issue 27, point 2): the mean-field point at the highest
    request rate whose p99 TTFT (the mean x ``p99_over_mean[0]``) and p99 TPOT (the mean x :func:`tpot_tail`, at
    least ``p99_over_mean[1]``) meet the targets (None: no target), at most :data:`MAX_UTILIZATION` of saturation.
    TTFT includes the M/D/1 wait for a slot (:func:`mean_field`), so a TTFT target holds the replica below
    saturation; with no target the capacity is the saturation rate itself (utilization 1). None when even a
    vanishing rate misses the targets. Bisection on the rate, to 0.01 %. Raises nothing."""
    lam_max = e.max_rate()
    if lam_max <= 0:
        return None
    k_ttft, k_tpot = p99_over_mean

    def meets(pt: OperatingPoint) -> bool:
        if pt.saturated or pt.ttft_ms is None or pt.tpot_ms is None:
            return False
        return ((ttft_p99_ms is None or pt.ttft_ms * k_ttft <= ttft_p99_ms)
                and (tpot_p99_ms is None or pt.tpot_ms * tpot_tail(e, pt.utilization, k_tpot) <= tpot_p99_ms))

    # the saturation limit of the prefill share: lam x pre < 1
    top = min(lam_max, 1.0 / e.prefill_s if e.prefill_s > 0 else lam_max)
    if ttft_p99_ms is not None or tpot_p99_ms is not None:
        top = min(top, MAX_UTILIZATION * lam_max)
    if ttft_p99_ms is None and tpot_p99_ms is None:
        sat = mean_field(e, top * (1.0 - 1e-9))
        return replace(sat, utilization=1.0) if not sat.saturated else sat
    if not meets(mean_field(e, top * 1e-6)):
        return None
    if meets(mean_field(e, top)):
        return mean_field(e, top)
    lo, hi = top * 1e-6, top
    while hi - lo > 1e-4 * hi:  # the rate to 0.01 %
        mid = 0.5 * (lo + hi)
        if meets(mean_field(e, mid)):
            lo = mid
        else:
            hi = mid
    return mean_field(e, lo)
