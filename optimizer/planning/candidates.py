"""Candidates of the planning model: which offers can host a replica of a workload, and how.

:func:`candidates_for` turns offers + a workload into the candidate *units* the planning model
(``optimizer.planning``, the one model) buys: a unit is ``k`` instances of one offer hosting ``r`` replicas
(``k > 1`` when one replica needs more GPUs than one instance has; ``r > 1`` when one instance holds several
replicas, e.g. 8 GPUs hosting two 4-GPU replicas). Sizing (``optimizer.sizing``) decides what fits; the unit's
price is ``k`` x the offer's effective hourly rate and its throughput ``r`` x a replica's (spot reduced by
:data:`SPOT_INTERRUPTION_OVERHEAD`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import default_offering_class
from optimizer.planning.owned import owned_rows

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from optimizer.sizing import ReplicaSizing, Workload

#: Fraction of a spot instance's throughput lost to interruptions for SERVING replicas (a stated planning assumption,
#: not a measured figure: 10 % lost). Training jobs use :mod:`optimizer.sizing.goodput` instead (issue 11): failures of
#: large jobs (Llama 3), checkpoint and restart time, and spot interruptions at a checkpoint interval.
SPOT_INTERRUPTION_OVERHEAD = 0.10

COMMITTED = frozenset({"reserved_1y", "reserved_3y"})
#: The pricing options a plan considers unless ``--pricing`` names others: every one (spot only with --allow-spot),
#: but capacity blocks for services (optimizer.planning.problem_build.make_problem: a service runs on blocks, in periods
#: of at most 5 months, only when --pricing names capacity_block; training jobs use them by default). Flex-start serves
#: training jobs only; savings plans where the offers carry their rates (the shipped snapshot has none).
DEFAULT_PRICING: tuple[str, ...] = ("on_demand", "reserved_1y", "reserved_3y", "spot", "capacity_block", "flex_start",
                                    "savings_plan_1y", "savings_plan_3y")

#: Right-hand side the demand/work row is scaled to (see the module docstring).
ROW_SCALE = 1000.0

#: Largest tensor/pipeline replica gpuopt will build (GPUs); beyond it the planner reports "does not fit".
MAX_GPUS_PER_REPLICA = 64


@dataclass(frozen=True)
class Candidate:
    """One way to buy capacity: ``instances_per_unit`` instances of one offer hosting ``replicas_per_unit`` replicas.

    ``offer`` is the normalized offer row as a dict (gpuopt.kernel.records.OFFER_COLUMNS). ``usd_per_unit_hour`` is
    instances_per_unit x offer usd_per_hour; ``throughput_per_unit`` is in tokens/s (serve) or FLOP/s (train),
    spot already reduced by :data:`SPOT_INTERRUPTION_OVERHEAD`.

    Layout of one replica (:func:`unit_shape`): ``tensor_parallel`` GPUs split each layer inside one instance
    (serving; train/finetune: the job's layout at its scale, ``sizing.training_layout``; 1 for LoRA and for a share
    of a GPU);
    ``pipeline_parallel`` stages split the layers over that many instances, one stage per instance (serving
    replicas too big for one instance; then ``instances_per_unit == pipeline_parallel``). ``fabric`` is the offer's
    inter-node fabric (``offer_network``; "" unknown). ``max_units``: the most units of this candidate one job may
    use; 1 for a training job on an offer without a cluster fabric, whose data-parallel group must then stay inside
    one instance; None = no limit. (The planning model has to honour it.)
    """

    key: str
    offer: dict[str, Any]
    instances_per_unit: int
    replicas_per_unit: int
    sizing: "ReplicaSizing"
    usd_per_unit_hour: float
    throughput_per_unit: float
    shape: str = ""
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    fabric: str = ""
    max_units: int | None = None

    @property
    def committed(self) -> bool:
        return self.offer["pricing"] in COMMITTED

    @functools.cached_property
    def okey(self) -> str:
        """The offer's key ``provider|region|zone|instance_type|pricing|payment`` (the planner's offer key),
        computed once."""
        return offer_key(self.offer)


def offer_key(o: dict[str, Any]) -> str:
    """``provider|region|zone|instance_type|pricing|payment`` of an offer dict (missing values empty), then
    ``|<offering_class>`` when the class is not the default one (``records.default_offering_class``: standard for an
    AWS reservation, "" otherwise), so a Convertible term and a Standard one of the same payment are two offers and
    the keys of every other offer stay as they were; then ``|owned:<id>`` for a commitment the team owns."""
    key = "|".join(str(o.get(c) or "") for c in ("provider", "region", "zone", "instance_type", "pricing", "payment"))
    cls = str(o.get("offering_class") or "")
    if cls in ("nan", "<NA>"):
        cls = ""
    key += f"|{cls}" if cls and cls != default_offering_class(o.get("provider"), o.get("pricing")) else ""
    src = str(o.get("source") or "")
    # a commitment the team owns (optimizer.planning.owned): its own offer, beside one bought on the same terms
    return key + f"|{src}" if src.startswith("owned:") else key


def _replica_gpu_counts() -> list[int]:
    """GPU counts a replica is tried at: 1, 2, 4, 8, then multiples of 8 up to :data:`MAX_GPUS_PER_REPLICA`."""
    out, n = [], 1
    while n <= MAX_GPUS_PER_REPLICA:
        out.append(n)
        n = n * 2 if n < 8 else n + 8
    return out


def unit_shape(sizing_fn, workload, gpu, offer_gpus: float, interconnect: str = "", network=None):
    """How one offer hosts replicas of ``workload``: (instances_per_unit k, replicas_per_unit r, replica sizing),
    or (None, None, reason) with reason ``does_not_fit`` or ``no_cluster_fabric``.

    * A share of one GPU (``offer_gpus < 1``): at most one replica, on that share (BUG-10: never a whole GPU).
    * Inside one instance: the smallest replica of 1, 2, 4, 8, 16, 24, ... GPUs (at most ``offer_gpus``) that fits;
      serving replicas are tensor parallel over its GPUs (NVLink, or PCIe at its cost: ``gpu`` is the board's own
      spec row, so ``interconnect`` is not needed here), LoRA replicas ZeRO data parallel; k = 1,
      r = ``offer_gpus // n``. Train/finetune jobs: :func:`_training_shape` (issue 11).
    * Across k >= 2 whole instances, when no replica fits inside one (at most ``MAX_GPUS_PER_REPLICA`` GPUs):

      - serving: tensor parallel over t GPUs inside each instance (t = the largest of 1, 2, 4, 8, 16, ... that
        the instance has) and k pipeline stages, one per instance (PP = k) -- never one tensor-parallel group
        across instances (vLLM distributed serving docs: "the tensor parallel size is the number of GPUs you want
        to use in each node, and the pipeline parallel size is the number of nodes"), and only over a cluster
        fabric (DESIGN.md: "PP across instances only where the fabric allows"; else ``no_cluster_fabric``): a stage
        boundary carries 2 x hidden x 2 B per token, costed by ``sizing.size_replica`` over ``network``;
      - LoRA: one ZeRO replica over k x ``offer_gpus`` GPUs, only over a cluster fabric (``network.cluster``:
        EFA, InfiniBand, RDMA, GPUDirect-TCPX/O); its collectives cross the fabric at ``network.gbps_per_node``
        (``sizing.data_parallel_efficiency``). Without a cluster fabric the reason is ``no_cluster_fabric`` when
        such a replica would fit and ``does_not_fit`` when not even that would.

    ``sizing_fn`` is ``optimizer.sizing.size_replica``; ``network`` a ``sizing.NodeNetwork`` (None: the default
    network with ``gpus_per_node = offer_gpus``); r = 1 across instances.
    """
    from optimizer.sizing import DEFAULT_NODE_NETWORK

    if workload.task == "serve":
        return _serving_shape(sizing_fn, workload, gpu, offer_gpus, network)
    if offer_gpus < 1.0:
        s = sizing_fn(workload, gpu, offer_gpus)
        if s.fits:
            return 1, 1, s
        return None, None, "does_not_fit"
    whole = int(offer_gpus)
    net = network or dataclasses.replace(DEFAULT_NODE_NETWORK, gpus_per_node=whole)
    if workload.task in ("train", "finetune"):
        return _training_shape(workload, gpu, whole, net)
    counts = _replica_gpu_counts()
    for n in counts:
        if n > offer_gpus:
            break
        s = sizing_fn(workload, gpu, float(n), network=net)
        if s.fits:
            return 1, int(offer_gpus // n), s
    if workload.task == "serve":
        t = max(n for n in counts if n <= whole)
        for k in range(2, MAX_GPUS_PER_REPLICA // t + 1):
            if k > workload.model.layers:
                break
            s = sizing_fn(workload, gpu, float(k * t), pipeline_parallel=k, network=net)
            if s.fits:
                # pipeline stages across instances only where the fabric allows (DESIGN.md, the planning model):
                # a cluster fabric between the instances, not a chain of single-GPU boxes over the internet
                return (k, 1, s) if net.cluster else (None, None, "no_cluster_fabric")
        return None, None, "does_not_fit"
    for k in range(2, MAX_GPUS_PER_REPLICA // whole + 1):
        s = sizing_fn(workload, gpu, float(k * whole), network=net)
        if s.fits:
            return (k, 1, s) if net.cluster else (None, None, "no_cluster_fabric")
    return None, None, "does_not_fit"


#: Largest training job the planner lays out, GPUs (optimizer.sizing.training.MAX_TRAIN_GPUS).
MAX_TRAIN_JOB_GPUS = 16384


def _training_shape(workload, gpu, whole: int, net):
    """:func:`unit_shape` for train/finetune (issue 11): the job's throughput per GPU at the scale it will run.

    1. The smallest job that fits (``optimizer.sizing.size_training``: the fastest layout that fits memory): inside
       one instance (all its GPUs, data parallel and tensor parallel over NVLink), else 2, 4, 8, ... instances over
       a cluster fabric (``no_cluster_fabric`` without one; ``does_not_fit`` beyond 16,384 GPUs).
    2. The job's scale: with a deadline, the fewest whole instances (doubling from that smallest job) whose wall
       time -- tokens / (tokens/s per GPU x GPUs) / goodput -- meets it (the fastest tried when none
       does; scanned upward); without one, the smallest job. Without a cluster fabric the job stays in one instance.
    3. The unit is the smallest job's instances; its throughput is its GPUs x the tokens/s per GPU *at the job's
       scale* (the fabric's real scaling: data-parallel traffic over the offer's network, pipeline bubbles), so the
       plan's linear work constraint sees the efficiency of the job it will run. The sizing returned carries the
       job's layout, MFU, step time, goodput (on-demand and spot) and ``job_gpus``.

    Returns (instances per unit, 1, sizing) or (None, None, reason) with reason ``precision_unsupported`` (fp8 on
    a GPU without FP8), ``does_not_fit``, ``no_cluster_fabric``.
    """
    from optimizer.sizing import check_training_options, size_training

    try:
        check_training_options(workload, gpu, network=net)
    except InputError as exc:
        if exc.field == "precision":  # fp8 without FP8 tensor cores, bf16 on Volta/Turing
            return None, None, "precision_unsupported"
        raise
    cache: dict[int, Any] = {}

    def size(n: int):
        if n not in cache:
            cache[n] = size_training(workload, gpu, float(n), network=net)
        return cache[n]

    counts = [n for n in (1, 2, 4, 8) if n < whole] + [whole * 2**k for k in range(15)
                                                      if whole * 2**k <= MAX_TRAIN_JOB_GPUS]
    base = next((n for n in counts if size(n).fits and (n <= whole or net.cluster)), None)
    if base is None:
        if not net.cluster and any(size(n).fits for n in counts[-3:] if n > whole):
            return None, None, "no_cluster_fabric"
        return None, None, "does_not_fit"
    unit_gpus = max(base, whole) if base <= whole else base
    job = unit_gpus
    if workload.deadline_hours and net.cluster:
        scale = [n for n in counts if n >= unit_gpus]

        def wall(n: int) -> float:
            s = size(n)
            if not s.fits or not s.goodput:
                return float("inf")
            return float(workload.tokens) / s.tokens_per_second_per_replica / 3600.0 / s.goodput

        # upward: the fewest that meet it (wall time need not fall monotonically: ZeRO-3 gathers per micro-batch)
        job = next((n for n in scale if wall(n) <= workload.deadline_hours), None)
        if job is None:
            job = min(scale, key=wall)
    s_job = size(job)
    if not s_job.fits:
        s_job, job = size(unit_gpus), unit_gpus
    per_gpu = s_job.tokens_per_second_per_replica / job
    ratio = unit_gpus / job
    s_unit = dataclasses.replace(
        s_job, gpus_per_replica=float(unit_gpus), tokens_per_second_per_replica=per_gpu * unit_gpus,
        flops_per_second_per_replica=(s_job.flops_per_second_per_replica or 0.0) * ratio,
        memory_gib_per_replica=s_job.memory_gib_per_gpu * unit_gpus,
        breakdown_gib={k: v * ratio for k, v in s_job.breakdown_gib.items()}, job_gpus=job,
        assumptions=s_job.assumptions + (f"throughput per GPU as in a job of {job:,} GPUs (the scale that "
                                         + ("meets the deadline" if workload.deadline_hours else "holds the model")
                                         + f" on this offer); a unit is {unit_gpus} GPUs",))
    return max(1, unit_gpus // whole), 1, s_unit


def serving_precisions(workload, gpu) -> list[str]:
    """The precisions a serving replica of ``workload`` may use on ``gpu``: ``workload.precision_options`` (else its
    ``precision``) that the GPU runs (``optimizer.sizing.serving.supported_precisions``: fp8 on Ada/Hopper/Blackwell, fp4 on
    Blackwell)."""
    from optimizer.sizing.serving import supported_precisions

    ok = supported_precisions(gpu)
    return [p for p in (workload.precision_options or (workload.precision,)) if p in ok]


def _serving_shape(sizing_fn, workload, gpu, offer_gpus: float, network=None):
    """:func:`unit_shape` for serving (issue 10): inside one instance, every replica option -- tensor parallel over
    1, 2, 4, 8 ... of its GPUs, each allowed precision the GPU runs -- sized under the latency targets, and the one
    that gives the instance the most tokens/s (``replicas x tokens/s``; the instance's price is fixed, so the
    cheapest per token) wins; ties go to fewer GPUs per replica. Only when no option serves inside one instance,
    pipeline stages across instances as before. Reasons: ``does_not_fit``, ``no_cluster_fabric``,
    ``precision_unsupported`` (no allowed precision runs on this GPU), ``misses_latency_target`` (the weights fit
    but no batch meets the targets)."""
    from optimizer.sizing import DEFAULT_NODE_NETWORK

    precisions = serving_precisions(workload, gpu)
    if not precisions:
        return None, None, "precision_unsupported"
    options = [dataclasses.replace(workload, precision=p) if p != workload.precision else workload
               for p in precisions]
    memory_fits = False

    def better(cur, cand):
        return cur is None or cand[0] > cur[0] * (1 + 1e-9)

    if getattr(workload, "serve_phase", None):  # one pool of a disaggregated deployment (gpuopt.phase_mix)
        return _pool_shape(workload, gpu, offer_gpus, network, options)
    if offer_gpus < 1.0:
        best = None
        for w in options:
            s = sizing_fn(w, gpu, offer_gpus)
            memory_fits |= (s.kv_capacity_sequences or 0) >= 1
            if s.fits and better(best, (s.tokens_per_second_per_replica, s)):
                best = (s.tokens_per_second_per_replica, s)
        if best:
            return 1, 1, best[1]
        return None, None, "misses_latency_target" if memory_fits else "does_not_fit"
    whole = int(offer_gpus)
    net = network or dataclasses.replace(DEFAULT_NODE_NETWORK, gpus_per_node=whole)
    counts = _replica_gpu_counts()
    best = None
    from optimizer.sizing.serving import tp_supported

    for n in counts:
        if n > offer_gpus:
            break
        if not tp_supported(workload.model, n):
            continue
        for w in options:
            s = sizing_fn(w, gpu, float(n), network=net)
            memory_fits |= (s.kv_capacity_sequences or 0) >= 1
            if s.fits:
                r = int(offer_gpus // n)
                if better(best, (r * s.tokens_per_second_per_replica, r, s)):
                    best = (r * s.tokens_per_second_per_replica, r, s)
    mode = getattr(workload, "disaggregate", "off")
    if mode != "off":
        unit = _disaggregated_shape(workload, gpu, whole, net, options)
        if mode == "on" or (unit and (best is None or _fewer_instances(workload, unit, best[0]))):
            if unit:
                return unit
            if whole < 2 and not net.cluster:  # one GPU and no cluster fabric: no room for two pools
                return None, None, "no_disaggregated_unit"
            return None, None, "misses_latency_target" if memory_fits else "does_not_fit"
    if best:
        return 1, best[1], best[2]
    tps = [n for n in counts if n <= whole and tp_supported(workload.model, n)]
    if not tps:
        return None, None, "does_not_fit"
    t = max(tps)
    across = cross_node_rule(gpu, whole, net)
    for k in range(2, MAX_GPUS_PER_REPLICA // t + 1):
        if k > workload.model.layers:
            break
        for w in options:
            s = sizing_fn(w, gpu, float(k * t), pipeline_parallel=k, network=net)
            holds = (s.kv_capacity_sequences or 0) >= 1
            memory_fits |= holds
            # a replica over several instances only node by node over a cluster fabric of stated bandwidth
            # (cross_node_rule), never a chain of single-GPU VMs
            if holds and across:
                return None, None, across
            if s.fits:
                return k, 1, s
    return None, None, "misses_latency_target" if memory_fits else "does_not_fit"


def cross_node_rule(gpu, whole: int, net) -> str:
    """Why a serving replica may not span several instances of this offer ("" when it may), issue 31.

    Engines serve a model on one node when it fits one (SGLang and vLLM document DeepSeek-V3 on one 8 x H200 or
    8 x B200 node), and across nodes only node by node over a cluster fabric (vLLM distributed serving: "the tensor
    parallel size is the number of GPUs you want to use in each node, and the pipeline parallel size is the number
    of nodes"; LMSYS's large-scale expert-parallel DeepSeek deployment: 12 nodes of 8 x H100 over InfiniBand).
    Reasons, in the order checked:

    * ``not_whole_node``: the instance holds fewer GPUs than one node of its GPU (``sizing.node_gpus``: 8 on an
      HGX/OAM board, 4 on a GB200/GB300 NVL72 compute tray, 1 on a GH200 superchip) -- e.g. a chain of
      single-H100 ``p5.4xlarge`` VMs or 4-GPU L4 VMs. A model that fits one node belongs on one node; one that
      does not belongs on whole nodes.
    * ``no_cluster_fabric``: no cluster fabric (EFA, InfiniBand, RoCE/RDMA, GPUDirect-TCPX/O) between them.
    * ``no_fabric_bandwidth``: a cluster fabric whose bandwidth no source states (``net.stated`` false): the stage
      traffic would be costed on an assumed figure.
    """
    from optimizer.sizing import node_gpus

    if whole < node_gpus(gpu.name):
        return "not_whole_node"
    if not net.cluster:
        return "no_cluster_fabric"
    if not getattr(net, "stated", True):
        return "no_fabric_bandwidth"
    return ""


#: Units a production service runs at least (gpuopt's default ``min_replicas``) and spare units (its default N+1:
#: losing any instance of a unit loses the unit): a disaggregated unit is sized so that the workload's demand
#: takes the fewest instances, and ``--disaggregate auto`` takes it on an offer only when it needs fewer instances
#: than co-located replicas would (a rule of the candidate, before the MILP; the plan's own N+1 and floors apply).
MIN_SERVING_UNITS = 2
SPARE_UNITS = 1


def _fewer_instances(workload, unit, colocated_tps_per_instance: float) -> bool:
    """Whether the disaggregated ``unit`` (k, 1, sizing) carries the workload's tokens/s in fewer instances than
    co-located replicas giving ``colocated_tps_per_instance`` (both with :data:`MIN_SERVING_UNITS` and
    :data:`SPARE_UNITS`); without a demand, whether it gives more tokens/s per instance."""
    from optimizer.sizing.disaggregated import units_for

    k, _r, s = unit
    demand = workload.tokens_per_second
    if not demand:
        return s.tokens_per_second_per_replica / k > colocated_tps_per_instance * (1 + 1e-9)
    mine = k * units_for(demand, s.tokens_per_second_per_replica, MIN_SERVING_UNITS, SPARE_UNITS)
    theirs = units_for(demand, colocated_tps_per_instance, MIN_SERVING_UNITS, SPARE_UNITS)
    return mine < theirs


def _pool_shape(workload, gpu, offer_gpus: float, network, options):
    """(1, replicas, sizing) of the ``workload.serve_phase`` pool on one offer
    (:func:`optimizer.sizing.disaggregated.pool_sizing`): replicas of n = 1, 2, 4 ... of its GPUs (tensor parallel
    inside the instance), each allowed precision, the option giving the instance the most tokens/s; the KV moves
    between instances over the offer's network, which must be a cluster fabric (``no_pool_fabric``
    otherwise). Reasons as :func:`_serving_shape`."""
    from optimizer.sizing import DEFAULT_NODE_NETWORK
    from optimizer.sizing.disaggregated import pool_sizing
    from optimizer.sizing.serving import batch_cap, engine_for, tp_supported, Layout
    from optimizer.sizing.workload import serve_lengths

    if offer_gpus < 1.0:
        return None, None, "does_not_fit"
    whole = int(offer_gpus)
    net = network or dataclasses.replace(DEFAULT_NODE_NETWORK, gpus_per_node=whole)
    if not net.cluster:  # the KV crosses between instances: over a cluster fabric, as a unit across instances does
        return None, None, "no_pool_fabric"
    best, fits = None, False
    for n in _replica_gpu_counts():
        if n > whole:
            break
        if not tp_supported(workload.model, n):
            continue
        r = whole // n
        for w in options:
            s = pool_sizing(w, gpu, n, r, net)
            if s is None:
                inp, out = serve_lengths(w)
                fits |= batch_cap(w.model, gpu, Layout(n, 1), w.precision, engine_for(w), inp, out,
                                  w.context_tokens) >= 1
                continue
            fits = True
            if best is None or r * s.tokens_per_second_per_replica > best[0] * (1 + 1e-9):
                best = (r * s.tokens_per_second_per_replica, r, s)
    if best:
        return 1, best[1], best[2]
    return None, None, "misses_latency_target" if fits else "does_not_fit"


def _disaggregated_shape(workload, gpu, whole: int, net, options):
    """(instances k, 1, the unit's sizing) of the best disaggregated unit of prefill and decode replicas on this
    offer (:func:`optimizer.sizing.disaggregated.best_unit`: inside one instance, or across instances over a
    cluster fabric; the split needing the fewest instances for the workload's tokens/s with at least
    :data:`MIN_SERVING_UNITS` units), over the allowed precisions; None when none meets the targets."""
    from optimizer.sizing.disaggregated import best_unit, unit_sizing

    best = None
    for w in options:
        unit = best_unit(w, gpu, whole, network=net if net.cluster else None, demand_tps=w.tokens_per_second,
                         min_units=MIN_SERVING_UNITS, spare_units=SPARE_UNITS)
        if unit and (best is None or unit.tokens_per_second / unit.instances
                     > best[1].tokens_per_second / best[1].instances * (1 + 1e-9)):
            best = (w, unit)
    if best is None:
        return None
    w, unit = best
    return unit.instances, 1, unit_sizing(w, gpu, unit, network=net)


@dataclass
class UnitTable:
    """What every offer row of a frame gives one workload, as arrays over the rows (no Python object per row), so
    a big catalog can be pruned before candidates exist (``optimizer.planning.problem_build.make_problem``).

    ``offers``: the frame the arrays index (candidates_for's pricing filter applied), ``pricing`` its pricing
    column as an object array. Per row: ``ok`` — the row
    makes a candidate; ``instances`` (k), ``replicas`` (r), ``throughput`` (tokens/s or FLOP/s of a unit, r x a
    replica's, spot reduced), ``usd_per_unit_hour`` (k x usd_per_hour) and ``hw`` (index of the row's distinct
    hardware in ``hardware``: (k, r, sizing, shape label, theta, fabric, max_units) or (None, reason)). Rows of the
    same ``hw`` give every workload the same units. ``rejected`` counts rows by reason, as candidates_for does.
    """

    offers: "pd.DataFrame"
    ok: Any
    instances: Any
    replicas: Any
    throughput: Any
    usd_per_unit_hour: Any
    hw: Any
    hardware: list
    rejected: dict[str, int]
    sizing_by_gpu: dict[str, "ReplicaSizing"]
    pricing: Any = None  # the rows' pricing column as an object array (read once: big frames)
    records: dict | None = None  # row label -> the row's dict, shared by every table of the same catalog frame

    def candidates(self, rows=None) -> list[Candidate]:
        """Candidates of the rows ``rows`` (positions in ``offers``, ascending; default every row that makes one),
        in frame order, equal to what candidates_for gives for them."""
        import numpy as np

        idx = np.flatnonzero(self.ok) if rows is None else np.asarray(rows, dtype=np.int64)
        if len(idx) == 0:
            return []
        recs = self._records(idx)
        out: list[Candidate] = []
        k_a, t_a, u_a, h_a = (self.instances[idx].tolist(), self.throughput[idx].tolist(),
                              self.usd_per_unit_hour[idx].tolist(), self.hw[idx].tolist())
        for off, k, theta_r, usd, h in zip(recs, k_a, t_a, u_a, h_a):
            _, r, s, label, _, fabric, max_units = self.hardware[h]
            key = offer_key(off)
            # a frozen dataclass's __init__ sets each field through object.__setattr__ (~4 us); big catalogs make
            # hundreds of thousands: fill the instance's dict at once (same fields, no __post_init__ to skip), and
            # the okey cached_property's slot with the same string offer_key computes
            cand = object.__new__(Candidate)
            cand.__dict__.update(key=key, offer=off, instances_per_unit=int(k), replicas_per_unit=r, sizing=s,
                                 usd_per_unit_hour=usd, throughput_per_unit=theta_r, shape=label,
                                 tensor_parallel=s.tensor_parallel, pipeline_parallel=s.pipeline_parallel,
                                 fabric=fabric, max_units=max_units, okey=key)
            out.append(cand)
        return out

    def _records(self, idx) -> list[dict[str, Any]]:
        """The rows at positions ``idx`` as dicts (:func:`offer_records`), one dict per catalog row however many
        workloads make candidates of it (200 workloads made 1.4 million copies of 7,149 rows: 1.5 GB)."""
        if self.records is None:
            return offer_records(self.offers.iloc[idx])
        labels = self.offers.index[idx].tolist()
        store = self.records
        miss = [i for i, lab in zip(idx.tolist(), labels) if lab not in store]
        if miss:
            for lab, rec in zip(self.offers.index[miss].tolist(), offer_records(self.offers.iloc[miss])):
                store[lab] = rec
        return [store[lab] for lab in labels]


def shared_records(offers: "pd.DataFrame") -> dict | None:
    """A fresh row-dict store for the unit tables of one planning problem over the catalog frame ``offers`` (pass
    it to every :func:`unit_table` of that problem: each catalog row then becomes one dict, read by every workload's
    candidates, never written); None when the frame's index is not unique (rows not told apart by label)."""
    return {} if offers.index.is_unique else None


#: Columns that make an offer's hardware (what sizing looks at): rows equal in these give the same units.
HARDWARE_COLUMNS = ("gpu_model", "interconnect", "gpu_memory_gib", "gpu_count", "provider", "instance_type", "fabric")


def text_values(col) -> "np.ndarray":
    """A text column as an object array of str; a categorical one through its codes (each category's one str
    object: 6 ms for 500,000 rows, where ``astype(object)`` of a pyarrow string column makes 500,000 objects)."""
    import numpy as np

    if str(col.dtype) == "category":
        cats = np.asarray(col.cat.categories, dtype=object)
        codes = col.cat.codes.to_numpy()
        out = np.empty(len(codes), dtype=object)
        out[:] = None
        has = codes >= 0
        out[has] = cats[codes[has]]
        return out
    return col.astype(object).to_numpy()


def shared_shapes(workload: "Workload", store: dict | None = None) -> dict[tuple, tuple]:
    """The replica-shape cache (shape key -> (instances, replicas, sizing)) of ``workload`` in ``store`` (one dict
    per planning problem, :func:`optimizer.planning.problem_build.make_problem`; None: a fresh cache): shared with
    every workload equal to it but for the demand (``tokens_per_second``, ``request_rate``) when its shapes do not
    depend on the demand -- serving without disaggregation (a training job's layout follows its deadline, a
    disaggregated unit its demand). A plan file of 200 services over five models sized the same shapes 200 times: 34 s
    of 41. A workload that cannot be hashed (a user's measurements) gets a cache of its own."""
    if store is None or workload.task != "serve" or getattr(workload, "disaggregate", "off") != "off":
        return {}
    try:
        key = dataclasses.replace(workload, tokens_per_second=None, request_rate=None)
        hash(key)
    except (TypeError, ValueError):
        return {}
    return store.setdefault(key, {})


def unit_table(workload: "Workload", offers: "pd.DataFrame", *, allow_spot: bool = False,
               pricing: tuple[str, ...] | None = None, records: dict | None = None,
               shapes: dict | None = None) -> UnitTable:
    """The :class:`UnitTable` of ``workload`` over ``offers``: the layout is computed once per distinct hardware
    (:data:`HARDWARE_COLUMNS`), then spread over the rows as arrays. Arguments as :func:`candidates_for`;
    ``records``: a :func:`shared_records` store of ``offers`` shared by the problem's tables (None: each
    candidate gets its own copy of its row); ``shapes``: the problem's :func:`shared_shapes` store (None: shapes
    sized for this workload alone)."""
    import numpy as np
    import pandas as pd

    allowed = set(pricing) if pricing else set(DEFAULT_PRICING)
    if not allow_spot:
        allowed.discard("spot")
    rejected: dict[str, int] = {}
    # the pricing filter a column at a time (big catalogs)
    pricing_col = offers["pricing"]
    keep = pricing_col.isin(sorted(allowed)) | owned_rows(offers)  # owned: never ruled out by --pricing
    for p, n in pricing_col[~keep].value_counts(dropna=False).items():
        if not n:
            continue  # a categorical column counts its absent categories too
        reason = "spot_not_allowed" if p == "spot" and not allow_spot else "pricing_not_allowed"
        rejected[reason] = rejected.get(reason, 0) + int(n)
    offers = offers[keep.to_numpy()]
    n = len(offers)
    cols = [c for c in HARDWARE_COLUMNS if c in offers.columns]
    if n:
        hw = offers.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
        first = np.full(int(hw.max()) + 1, -1, dtype=np.int64)
        first[hw[::-1]] = np.arange(n - 1, -1, -1)  # the first row of each distinct hardware
    else:
        hw, first = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    shapes = shared_shapes(workload, shapes)
    gpu_cache: dict[str, Any] = {}
    networks: dict[tuple, Any] = {}
    sizing_by_gpu: dict[str, ReplicaSizing] = {}
    hardware = [offer_hardware(workload, off, gpu_cache, networks, shapes, sizing_by_gpu)
                for off in offer_records(offers.iloc[first])] if n else []
    fits = np.array([h[0] is not None for h in hardware], dtype=bool)
    K = np.array([h[0] if h[0] is not None else 0 for h in hardware], dtype=np.int64)
    R = np.array([h[1] if h[0] is not None else 0 for h in hardware], dtype=np.int64)
    TH = np.array([h[4] if h[0] is not None else 0.0 for h in hardware], dtype=float)
    for h, cnt in zip(hardware, np.bincount(hw, minlength=len(hardware)).tolist() if n else []):
        if h[0] is None and cnt:
            rejected[h[1]] = rejected.get(h[1], 0) + int(cnt)
    ok = fits[hw] if n else np.zeros(0, dtype=bool)
    theta = TH[hw] if n else np.zeros(0)
    pricing_arr = text_values(offers["pricing"])
    spot = pricing_arr == "spot"
    if workload.task in ("train", "finetune"):  # goodput of a job of that size (optimizer.sizing.goodput), by pricing
        gp = np.array([h[2].goodput if h[0] is not None and h[2].goodput else 1.0 for h in hardware], dtype=float)
        gps = np.array([h[2].goodput_spot if h[0] is not None and h[2].goodput_spot else 1.0 for h in hardware],
                       dtype=float)
        theta = np.where(spot, theta * (gps[hw] if n else 0.0), theta * (gp[hw] if n else 0.0))
        if n and (spot & ok).any():
            theta = _spot_goodput_by_type(workload, offers, hardware, hw, TH, spot & ok, theta)
    else:
        theta = np.where(spot, theta * (1.0 - SPOT_INTERRUPTION_OVERHEAD), theta)
    bad = ok & ~(theta > 0)
    if bad.any():
        rejected["no_throughput"] = rejected.get("no_throughput", 0) + int(bad.sum())
    ok = ok & (theta > 0)
    k = K[hw] if n else np.zeros(0, dtype=np.int64)
    r = R[hw] if n else np.zeros(0, dtype=np.int64)
    usd = pd.to_numeric(offers["usd_per_hour"], errors="coerce").to_numpy(dtype=float, na_value=np.nan) if n \
        else np.zeros(0)
    return UnitTable(offers=offers, ok=ok, instances=k, replicas=r, throughput=r * theta, usd_per_unit_hour=k * usd,
                     hw=hw, hardware=hardware, rejected=rejected, sizing_by_gpu=sizing_by_gpu, pricing=pricing_arr,
                     records=records)


def _spot_goodput_by_type(workload, offers, hardware, hw, TH, rows, theta):
    """Training throughput of spot rows at the interruption rate of their instance type and region (issue 26: "spot
    interruption is one bucket for every instance type"): AWS Spot Advisor buckets shipped with their date
    (pricing_cache.spot_risk: a bucket's midpoint, ">20 %" as 0.20, 0.20 where the Advisor lists no row) in the job's
    goodput (optimizer.sizing.goodput.training_goodput, same job size, checkpoint and restart model)."""
    import numpy as np

    from optimizer.sizing.goodput import training_goodput
    from pricing_cache.spot_risk import interruptions_per_instance_hour

    prov, reg, itype = (text_values(offers[c]) for c in ("provider", "region", "instance_type"))
    gpn = pd_numeric(offers["gpu_count"])
    params = float(getattr(workload.model, "params_total", 0.0) or 0.0)
    cache: dict[tuple, float] = {}
    out = theta.copy()
    for i in np.flatnonzero(rows):
        s = hardware[hw[i]][2]
        n = float(getattr(s, "job_gpus", 0) or 0)
        if n <= 0 or params <= 0:
            continue
        key = (prov[i], reg[i], itype[i], int(hw[i]))
        if key not in cache:
            rate, _src = interruptions_per_instance_hour(str(prov[i]), str(reg[i]), str(itype[i]))
            g = training_goodput(n, params, gpus_per_node=max(1, int(round(gpn[i] or 8))), spot=True,
                                 spot_interruptions_per_instance_hour=rate)
            cache[key] = g.fraction
        out[i] = TH[hw[i]] * cache[key]
    return out


def pd_numeric(col):
    """A numeric column as a float array (NaN where not a number)."""
    import numpy as np
    import pandas as pd

    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def candidates_for(
    workload: "Workload",
    offers: "pd.DataFrame",
    *,
    allow_spot: bool = False,
    pricing: tuple[str, ...] | None = None,
) -> tuple[list[Candidate], dict[str, int], dict[str, "ReplicaSizing"]]:
    """Turn offers into candidate units for ``workload``.

    Each offer's network between instances comes from its ``fabric`` column (``optimizer.sizing.offer_network``:
    bandwidth from ``providers.facts.fabric_gbps_per_node``; a frame without the column gets the documented fabric
    of the instance type). :func:`unit_shape` lays the replica out on the offer, once per distinct hardware
    (:func:`unit_table`).

    Args:
        workload: optimizer.sizing.Workload (validated).
        offers: normalized offers (gpuopt.kernel.records.OFFER_COLUMNS), already filtered by provider/region/GPU.
        allow_spot: keep spot offers (only when the workload may be interrupted).
        pricing: pricing models allowed (default: all but spot).

    Returns:
        (candidates, rejected, sizing_by_gpu): rejected counts offers by reason (``no_spec`` — the GPU has no
        datasheet row, ``does_not_fit`` — no replica of up to 64 GPUs fits, ``no_cluster_fabric`` — a training
        replica would need several instances and the offer has no cluster fabric, ``pricing_not_allowed``,
        ``spot_not_allowed``, ``no_throughput``); sizing_by_gpu holds the replica sizing used per GPU shape
        (:func:`shape_label`).
    """
    t = unit_table(workload, offers, allow_spot=allow_spot, pricing=pricing)
    return t.candidates(), t.rejected, t.sizing_by_gpu


def offer_hardware(workload: "Workload", off: dict[str, Any], gpu_cache: dict, networks: dict, shapes: dict,
              sizing_by_gpu: dict) -> tuple:
    """What one offer's hardware gives a replica of ``workload``: (instances per unit, replicas per unit, sizing,
    shape label, throughput per replica (tokens/s or FLOP/s, before the spot reduction), fabric, max_units), or
    (None, rejection reason). The caches are shared over a catalog (GPU datasheet rows, networks, shapes)."""
    from optimizer.sizing import offer_network, size_replica
    from optimizer.sizing.specs import load_gpu_board

    gm = off["gpu_model"]
    board = (gm, str(off["interconnect"]))
    if board not in gpu_cache:
        try:
            gpu_cache[board] = load_gpu_board(gm, str(off["interconnect"]))
        except InputError:
            gpu_cache[board] = None
    gpu = gpu_cache[board]
    if gpu is None:
        return None, "no_spec"
    net_key = (str(off.get("provider")), str(off.get("instance_type")), str(off.get("fabric", "<absent>")),
               str(off.get("gpu_count")))
    if net_key not in networks:
        networks[net_key] = offer_network(off)
    net = networks[net_key]
    # Size against the offer's own per-GPU memory (AWS reports an L4 as 22.35 GiB, not the datasheet's 24 GB;
    # a user catalog may say less): the datasheet row gives bandwidth and FLOPs only.
    mem = usable_gpu_memory_gib(gm, off.get("gpu_memory_gib"), gpu.memory_gib)
    shape_key = (gm, float(off["gpu_count"]), str(off["interconnect"]), round(mem, 4), net)
    if shape_key not in shapes:
        g = dataclasses.replace(gpu, memory_gib=mem) if abs(mem - gpu.memory_gib) > 1e-9 else gpu
        shapes[shape_key] = unit_shape(size_replica, workload, g, float(off["gpu_count"]), str(off["interconnect"]),
                                        net)
    k, r, s = shapes[shape_key]
    if k is None:
        return None, s
    label = shape_label(gm, float(off["gpu_count"]), mem, str(off["interconnect"]), instances=k,
                        tensor_parallel=s.tensor_parallel, pipeline_parallel=s.pipeline_parallel,
                        fabric=net.fabric, gbps_per_node=net.gbps_per_node,
                        split=getattr(s, "disaggregated", None))
    sizing_by_gpu[label] = s
    theta = s.tokens_per_second_per_replica if workload.task == "serve" else (s.flops_per_second_per_replica or 0.0)
    return k, r, s, label, theta, net.fabric, None if workload.task == "serve" or net.cluster else 1


def offer_records(offers: "pd.DataFrame") -> list[dict[str, Any]]:
    """The rows of ``offers`` as dicts, column name -> value, equal to ``offers.to_dict("records")`` (same values
    and types: pd.NA for missing strings, NaN for missing numbers) and ~8x faster on string columns (4,675 offers:
    0.02 s instead of 0.17 s), one ``tolist`` per column."""
    cols = list(offers.columns)
    return [dict(zip(cols, vals)) for vals in zip(*(offers[c].tolist() for c in cols))]


def usable_gpu_memory_gib(gpu_model: str, offered: float | None, datasheet_gib: float) -> float:
    """Memory of one GPU to size with, GiB: the smaller of the offer's figure and the memory the clouds report
    for that GPU (providers.gpu_names.GPU_MEMORY_MIB: AWS reports an L4 as 22,888 MiB = 22.35 GiB, although
    catalogs that copy the datasheet say "24"), so the same GPU is sized the same on every provider. A user
    catalog that says less (a partitioned GPU) is honoured."""
    from providers.gpu_names import GPU_MEMORY_MIB

    vals = [datasheet_gib]
    if offered is not None and offered == offered and offered > 0:
        vals = [float(offered)]
    reported = GPU_MEMORY_MIB.get(gpu_model)
    if reported:
        vals.append(reported / 1024.0)
    return min(vals)


def shape_label(gpu_model: str, gpu_count: float, memory_gib: float, interconnect: str, *, instances: int = 1,
                tensor_parallel: int = 1, pipeline_parallel: int = 1, fabric: str = "",
                gbps_per_node: float | None = None, split: dict | None = None) -> str:
    """How a GPU shape is named in the sizing table, e.g. "L4 x4 (22.35 GiB, pcie)".

    A disaggregated unit (``split``: its dict, optimizer.sizing.disaggregated) adds its prefill and decode replicas
    and the link its KV crosses, e.g. "H100-80GB x8 (80 GiB, nvlink) disaggregated 6P+2D TP1, KV over NVLink".
    A replica over several instances adds its layout and the network it crosses, e.g.
    "H100-80GB x8 (80 GiB, nvlink) x2 instances, TP8 PP2 over efa 400 GB/s" (serving) or
    "A100-40GB x8 (40 GiB, nvlink) x3 instances, ZeRO over efa 50 GB/s" (training): the same GPU shape sized over
    another layout or network is another row.
    """
    label = f"{gpu_model} x{gpu_count:g} ({memory_gib:.4g} GiB, {interconnect})"
    if split and split.get("pool"):  # one pool of a disaggregated deployment (gpuopt.phase_mix)
        return label + f" {split['pool']} pool TP{split['gpus_per_replica']}, KV over {split['link']}"
    if split:  # a disaggregated unit (optimizer.sizing.disaggregated): its prefill and decode replicas
        label += (f" x{instances} instances," if instances > 1 else "") + (
            f" disaggregated {split['prefill_replicas']}P+{split['decode_replicas']}D TP{split['gpus_per_replica']}"
            f", KV over {split['link']}")
        return label
    if instances > 1:
        layout = f"TP{tensor_parallel} PP{pipeline_parallel}" if pipeline_parallel > 1 else "ZeRO"
        net = fabric or "unknown network"
        if gbps_per_node is not None:
            net += f" {gbps_per_node:g} GB/s"
        label += f" x{instances} instances, {layout} over {net}"
    return label
