"""Disaggregated serving: prefill and decode on separate replicas (issue 27, point 5).

Engines now run prefill and decode in separate pools (NVIDIA Dynamo, SGLang PD disaggregation, vLLM's disaggregated
prefill with a KV connector; DistServe, Zhong et al., OSDI 2024, arXiv 2401.09670; Splitwise, Patel et al., ISCA
2024): a prompt is prefilled on a prefill replica, its KV cache moves to a decode replica, which generates the rest.
Each pool is sized for one target: the prefill pool for TTFT, the decode pool for TPOT, and decode iterations no
longer carry other requests' prefills (the ``B / O x prefill`` term of co-located TPOT,
:func:`optimizer.sizing.serving.point`). It pays where prefill dominates -- long prompts under a tight TPOT -- and
costs a KV transfer per request and the pools' balance.

The model, per unit of ``P`` prefill and ``D`` decode replicas of ``n`` GPUs each:

* a prefill replica serves prompts one after another, ``S = prefill time of I tokens`` (compute-bound; the prefix
  cache's share not recomputed), Poisson arrivals: an M/D/1 queue; the highest ``rho`` (at most 0.95) whose p99
  wait (:func:`md1_wait_p99`) + ``S + t_kv`` meets the TTFT target gives ``r_p = rho / S`` requests/s (no target:
  ``rho`` -> 1);
* a decode replica runs the largest batch ``b`` (KV cache, engine caps) whose iteration ``step(b)`` x
  :data:`optimizer.sizing.serving.P99_OVER_MEAN_TPOT` meets the TPOT target: ``r_d = b / (O step(b))``;
* the KV cache of a request, ``I x kv bytes per token`` (all layers), crosses the link between the two replicas:
  inside one instance its GPU link (NVLink, or PCIe), between instances the instances' network; ``t_kv = bytes /
  bandwidth + latency`` at the link's full rate (NIXL/UCX transfers; optimistic, stated);
* the unit serves ``min(P r_p, D r_d)`` requests/s; ``P : D`` is chosen for the most tokens/s per instance.

The option is ``--disaggregate off`` (default: an engine deployment a team has to set up on purpose), ``on`` (only
disaggregated units) or ``auto`` (the planner takes it for an offer where it gives more tokens/s per instance). Pools on different GPU
types: a workload may also be planned as two, its prefill pool and its decode pool (``Workload.serve_phase``,
:func:`pool_sizing`), each on the offers that serve it cheapest, both in one provider's region so the KV moves
over the region's network (gpuopt.phase_mix; kept where cheaper than one pool or a unit on one offer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer.sizing.serving import DISAGGREGATE_MODES  # noqa: F401  (re-exported: the modes of --disaggregate)


@dataclass(frozen=True)
class DisaggregatedUnit:
    """A unit of ``prefill_replicas`` + ``decode_replicas`` replicas of ``gpus_per_replica`` GPUs over
    ``instances`` instances: ``request_rate`` requests/s, ``tokens_per_second`` (output), its TTFT and TPOT (means,
    ms), the KV transfer per request (ms) over ``link``, the per-pool rates (requests/s per replica), the prefill
    pool's utilization and the decode pool's batch."""

    prefill_replicas: int
    decode_replicas: int
    gpus_per_replica: int
    instances: int
    request_rate: float
    tokens_per_second: float
    ttft_ms: float
    tpot_ms: float
    kv_transfer_ms: float
    link: str
    prefill_rate: float
    decode_rate: float
    prefill_utilization: float
    decode_batch: int

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}

    def describe(self) -> str:
        return (f"disaggregated: {self.prefill_replicas} prefill + {self.decode_replicas} decode replicas of "
                f"{self.gpus_per_replica} GPU(s) over {self.instances} instance(s); {self.request_rate:,.3g} "
                f"requests/s, {self.tokens_per_second:,.0f} tokens/s; prefill pool at {self.prefill_utilization:.0%}, "
                f"decode batch {self.decode_batch}; TTFT {self.ttft_ms:,.0f} ms, TPOT {self.tpot_ms:.1f} ms; KV "
                f"{self.kv_transfer_ms:.1f} ms per request over {self.link} (DistServe / Dynamo-style pools, "
                "optimizer/sizing/disaggregated.py)")


#: The highest utilization of a prefill pool (as for co-located replicas, optimizer.sizing.operating).
MAX_PREFILL_UTILIZATION = 0.95


def md1_wait_p99(rho: float, service_s: float, q: float = 0.99) -> float:
    """The ``q`` quantile of the wait in an M/D/1 queue at utilization ``rho`` with service time ``service_s``, s:
    the Cramer-Lundberg tail ``P(W > t) ~ rho exp(-theta t)``, ``theta`` the positive root of
    ``lam (exp(theta S) - 1) = theta`` with ``lam = rho / S`` (the exponential decay of the M/G/1 waiting time,
    e.g. Asmussen, *Applied Probability and Queues*, ch. XIII); 0 when ``P(W > 0) = rho <= 1 - q``."""
    if rho <= 1.0 - q or service_s <= 0:
        return 0.0
    if rho >= 1.0:
        return math.inf
    lam = rho / service_s
    lo, hi = 1e-12, 1.0 / service_s
    while lam * math.expm1(hi * service_s) <= hi:  # the root lies above: widen
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if lam * math.expm1(mid * service_s) < mid:
            lo = mid
        else:
            hi = mid
    return math.log(rho / (1.0 - q)) / lo


def prefill_pool(w, gpu, n: int, t_kv_s: float, *, engine=None, layout=None) -> tuple[float, float] | None:
    """(requests/s per prefill replica, prefill time s) of ``w`` on replicas of ``n`` GPUs of ``gpu``: an M/D/1
    queue held at the highest utilization (at most :data:`MAX_PREFILL_UTILIZATION`) whose p99 wait
    (:func:`md1_wait_p99`) + prefill + ``t_kv_s`` (the KV's move to the decode replica) meets the TTFT target (no
    target: 0.999). None when the weights and one prompt's KV do not fit, or even an idle replica misses the
    target. Raises InputError as the serving model."""
    from optimizer.sizing import serving as sv
    from optimizer.sizing.workload import latency_targets, serve_lengths

    eng = engine or sv.engine_for(w)
    lay = layout or sv.Layout(n, 1)
    inp, out = serve_lengths(w)
    ttft_t, _ = latency_targets(w)
    if sv.batch_cap(w.model, gpu, lay, w.precision, eng, inp, out, w.context_tokens) < 1:
        return None
    S = (1.0 - eng.prefix_hit) * sv.prefill_s(w.model, gpu, lay, w.precision, inp, sv.FIT, eng.name)
    if ttft_t is None:
        rho = 0.999
    else:
        budget = ttft_t / 1e3 - S - t_kv_s  # what the p99 wait for the prefill pool may take
        if budget <= 0:
            return None
        lo, hi = 0.0, MAX_PREFILL_UTILIZATION
        if md1_wait_p99(hi, S) <= budget:
            lo = hi
        else:
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if md1_wait_p99(mid, S) <= budget:
                    lo = mid
                else:
                    hi = mid
        rho = lo
        if rho <= 0:
            return None
    return (rho / S if S > 0 else math.inf), S


def decode_pool(w, gpu, n: int, *, engine=None, layout=None) -> tuple[float, int, float] | None:
    """(requests/s per decode replica, its batch, decode iteration s) of ``w`` on replicas of ``n`` GPUs of
    ``gpu``: the largest batch (KV cache, engine caps) whose iteration -- no prefill in it -- x
    :data:`optimizer.sizing.serving.P99_OVER_MEAN_TPOT` meets the TPOT target, ``r_d = b / (O step(b))``. None when
    not even one sequence meets it or the weights do not fit. Raises InputError as the serving model."""
    from optimizer.sizing import serving as sv
    from optimizer.sizing.workload import latency_targets, serve_lengths

    eng = engine or sv.engine_for(w)
    lay = layout or sv.Layout(n, 1)
    inp, out = serve_lengths(w)
    _, tpot_t = latency_targets(w)
    cap = sv.batch_cap(w.model, gpu, lay, w.precision, eng, inp, out, w.context_tokens)
    if cap < 1:
        return None

    def step(b: int) -> float:  # a decode iteration with no prefill in it (ms -> s)
        return 1e-3 * sv.point(w.model, gpu, lay, w.precision, eng, b, inp, out).step_ms

    def ok(b: int) -> bool:
        return tpot_t is None or 1e3 * step(b) * sv.P99_OVER_MEAN_TPOT <= tpot_t

    b = sv.largest_batch(ok, cap)
    if b is None:
        return None
    return b / (out * step(b)), b, step(b)


def kv_bytes_per_request(w) -> float:
    """Bytes of one request's KV cache (its prompt, all layers) that move from the prefill to the decode replica."""
    from optimizer.sizing import serving as sv
    from optimizer.sizing.workload import serve_lengths

    return serve_lengths(w)[0] * w.model.kv_bytes_per_token(sv.KV_BYTES[w.precision])


def pool_rates(w, gpu, n: int, link_gbs: float, link_latency_s: float, *, engine=None, layout=None):
    """(prefill requests/s per replica, decode requests/s per replica, decode batch, prefill time s, decode step s,
    KV transfer s) of ``w`` on replicas of ``n`` GPUs of ``gpu`` (:func:`prefill_pool`, :func:`decode_pool`), the KV
    moving over a link of ``link_gbs`` GB/s after ``link_latency_s``; None when a pool cannot meet its target or
    the weights do not fit. Raises InputError as the serving model."""
    t_kv = kv_bytes_per_request(w) / (link_gbs * 1e9) + link_latency_s
    pre = prefill_pool(w, gpu, n, t_kv, engine=engine, layout=layout)
    if pre is None:
        return None
    dec = decode_pool(w, gpu, n, engine=engine, layout=layout)
    if dec is None:
        return None
    return pre[0], dec[0], dec[1], pre[1], dec[2], t_kv


def best_unit(w, gpu, offer_gpus: int, *, network=None, max_instances: int = 8, demand_tps: float | None = None,
              min_units: int = 1, spare_units: int = 0) -> DisaggregatedUnit | None:
    """The disaggregated unit for one offer of ``offer_gpus`` GPUs of ``gpu``: replicas of n = 1, 2, 4, 8 ... GPUs
    (tensor parallel inside an instance); inside one instance (``offer_gpus / n >= 2`` replicas, KV over the GPUs'
    link) or across up to ``max_instances`` instances, each wholly prefill or decode (KV over ``network``, a
    :class:`optimizer.sizing.NodeNetwork`; None = no network: inside one instance only).

    The planner buys whole units, so a big unit wastes instances on a small demand: with ``demand_tps`` (output
    tokens/s) the split needing the fewest instances for it, ``k x (max(min_units, ceil(demand / unit tokens/s)) +
    spare_units)`` (a spare unit: N+1 redundancy loses a whole unit with any of its instances), wins (ties: more
    tokens/s per instance); without, the most tokens/s per instance. None when no split meets the targets. Raises
    InputError as the serving model."""
    from optimizer.sizing import serving as sv

    def score(unit: DisaggregatedUnit) -> tuple[float, float]:
        per = unit.tokens_per_second / unit.instances
        if not demand_tps:
            return (-per, 0.0)
        return (float(units_for(demand_tps, unit.tokens_per_second, min_units, spare_units) * unit.instances), -per)

    best: tuple[tuple[float, float], DisaggregatedUnit] | None = None
    out = _out(w)
    n = 1
    while n <= offer_gpus:
        if sv.tp_supported(w.model, n):
            slots = int(offer_gpus // n)
            inside = (gpu.link_gbps_one_way or 32.0, 5e-6, gpu.link_label) if slots >= 2 else None
            across = ((network.gbps_per_node, network.hop_latency_s, f"{network.fabric or 'network'} "
                       f"{network.gbps_per_node:g} GB/s") if network is not None else None)
            for where in (inside, across):
                if where is None:
                    continue
                rates = pool_rates(w, gpu, n, where[0], where[1])
                if rates is None:
                    continue
                r_p, r_d, b, S, step, t_kv = rates
                splits = ([(p, slots - p, 1) for p in range(1, slots)] if where is inside else
                          [(p * slots, (k - p) * slots, k) for k in range(2, max_instances + 1) for p in range(1, k)])
                for P, D, k in splits:
                    rate = min(P * r_p, D * r_d)
                    rho = min(1.0, rate / (P / S)) if S > 0 else 0.0
                    wait = rho * S / (2.0 * (1.0 - rho)) if rho < 1 else math.inf
                    unit = DisaggregatedUnit(P, D, n, k, rate, rate * out, 1e3 * (wait + S + t_kv), 1e3 * step,
                                             1e3 * t_kv, where[2], r_p, r_d, rho, b)
                    sc = score(unit)
                    if best is None or sc < best[0]:
                        best = (sc, unit)
        n *= 2
    return best[1] if best else None


def units_for(demand_tps: float, unit_tps: float, min_units: int = 1, spare_units: int = 0) -> int:
    """Units of ``unit_tps`` tokens/s a demand of ``demand_tps`` needs: ``max(min_units, ceil(demand / unit)) +
    spare_units``."""
    return max(min_units, math.ceil(demand_tps / unit_tps - 1e-9)) + spare_units if unit_tps > 0 else 10 ** 9


def unit_sizing(w, gpu, unit: DisaggregatedUnit, network=None):
    """The :class:`optimizer.sizing.ReplicaSizing` of a whole disaggregated unit, as the planner takes a replica:
    its GPUs, memory (each replica's, from :func:`optimizer.sizing.size_replica` of ``gpus_per_replica`` GPUs) and
    tokens/s, TTFT and TPOT of the unit, ``disaggregated`` its split, the unit's description among the
    assumptions."""
    import dataclasses

    from optimizer.sizing.estimate import size_replica

    one = size_replica(w, gpu, float(unit.gpus_per_replica), network=network)
    reps = unit.prefill_replicas + unit.decode_replicas
    return dataclasses.replace(
        one, gpus_per_replica=float(reps * unit.gpus_per_replica),
        memory_gib_per_replica=one.memory_gib_per_replica * reps,
        breakdown_gib={k: v * reps for k, v in one.breakdown_gib.items()}, fits=True, meets_targets=True,
        tokens_per_second_per_replica=unit.tokens_per_second, ttft_ms=unit.ttft_ms,
        time_per_output_token_ms=unit.tpot_ms, concurrency=unit.decode_replicas * unit.decode_batch,
        request_rate=unit.request_rate, utilization=None, disaggregated=unit.as_dict(),
        assumptions=tuple(a for a in one.assumptions if not a.startswith(("batch ", "sized at the operating")))
        + (unit.describe(),))


#: The pools of a disaggregated deployment a workload may be planned as (``Workload.serve_phase``).
SERVE_PHASES = ("prefill", "decode")


def pool_sizing(w, gpu, n: int, replicas_per_instance: int, network):
    """The :class:`optimizer.sizing.ReplicaSizing` of one replica of the ``w.serve_phase`` pool (``prefill`` or
    ``decode``) of a disaggregated deployment whose two pools may run on different GPU types (issue 27, point 5):
    the planner buys each pool as a workload of its own and keeps both in one provider's region
    (gpuopt.phase_mix). ``n`` GPUs of ``gpu`` per replica (tensor parallel), ``replicas_per_instance`` of them on
    one instance, the KV cache moving between instances over ``network`` (an
    :class:`optimizer.sizing.NodeNetwork`: its GB/s per instance, shared by the instance's replicas, and its hop
    latency; NIXL/UCX-style transfers at the link's full rate, optimistic, stated).

    A prefill replica: :func:`prefill_pool` with the KV's move in its TTFT, its rate capped where the instance's
    network cannot send the KV it makes. A decode replica: :func:`decode_pool`, capped where the network cannot
    receive the KV. tokens/s is the requests/s x the mean output tokens, so both pools carry the workload's demand
    in the same unit. None when the pool misses its target or the weights do not fit. Raises InputError as the
    serving model."""
    import dataclasses

    from optimizer.sizing import serving as sv
    from optimizer.sizing.estimate import size_replica

    phase = w.serve_phase
    kv = kv_bytes_per_request(w)
    link = network.gbps_per_node * 1e9
    nic_rate = link / (max(1, replicas_per_instance) * kv) if kv > 0 else math.inf  # requests/s a replica's share carries
    t_kv = kv / link + network.hop_latency_s
    where = f"{network.fabric or 'network'} {network.gbps_per_node:g} GB/s"
    if phase == "prefill":
        got = prefill_pool(w, gpu, n, t_kv)
        if got is None:
            return None
        rate, S = got
        rate = min(rate, nic_rate)
        ttft, tpot, batch, util = 1e3 * (S + t_kv), None, 1, rate * S
        what = (f"prefill pool of a disaggregated deployment: replicas of {n} GPU(s) prefill {rate:,.3g} requests/s "
                f"each ({100 * util:.0f} % busy, M/D/1 held at the TTFT target), each prompt's KV "
                f"({kv / 2**20:,.1f} MiB) sent over {where} in {1e3 * t_kv:.1f} ms to the decode pool")
    elif phase == "decode":
        got = decode_pool(w, gpu, n)
        if got is None:
            return None
        rate, batch, step = got
        rate = min(rate, nic_rate)
        ttft, tpot, util = None, 1e3 * step, None
        what = (f"decode pool of a disaggregated deployment: replicas of {n} GPU(s) decode a batch of {batch} "
                f"({rate:,.3g} requests/s each), iterations with no prefill in them, the KV received over {where}")
    else:
        raise ValueError(f"serve_phase {phase!r} is not one of {SERVE_PHASES}")
    one = size_replica(dataclasses.replace(w, serve_phase=None, disaggregate="off"), gpu, float(n), network=network)
    out = _out(w)
    pool = {"pool": phase, "gpus_per_replica": n, "request_rate": rate, "kv_transfer_ms": 1e3 * t_kv,
            "kv_mib_per_request": kv / 2**20, "link": where, "utilization": util, "batch": batch}
    return dataclasses.replace(
        one, fits=True, meets_targets=True, tokens_per_second_per_replica=rate * out, ttft_ms=ttft,
        time_per_output_token_ms=tpot, concurrency=batch, request_rate=rate, utilization=util,
        disaggregated={k: (round(v, 4) if isinstance(v, float) else v) for k, v in pool.items()},
        assumptions=tuple(a for a in one.assumptions if not a.startswith(("batch ", "sized at the operating")))
        + (what + " (optimizer/sizing/disaggregated.py)",))


def _out(w) -> float:
    from optimizer.sizing.workload import serve_lengths

    return float(serve_lengths(w)[1])
