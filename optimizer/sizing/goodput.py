"""Training goodput: the fraction of wall time a synchronous training job spends on useful steps (issue 11, point 3).

A synchronous job stops as a whole when any of its GPUs fails (Llama 3, arXiv 2407.21783 section 3.3.4: "a single
GPU failure may require a restart of the entire job") or when a spot instance is reclaimed. It then restarts from
its last checkpoint. With interruptions at rate ``lambda`` (Poisson, summed over GPUs and, on spot, instances),
checkpoints of ``delta`` seconds every ``tau`` seconds of work and a restart of ``R`` seconds, the first-order waste
(Young 1974; Daly 2006; to first order Kokolis et al. 2025's E[ETTR] = (1 - lambda (R + tau/2)) / (1 + delta/tau),
arXiv 2410.21680) is::

    goodput = 1 - delta/tau - lambda * (tau/2 + R)      clamped to [0, 1]

(checkpointing, rework since the last checkpoint, restart). ``tau`` defaults to Young's optimum sqrt(2 delta M),
``M = 1/lambda``. On spot, when a checkpoint fits inside AWS's 2-minute interruption notice, a reclaim costs one
checkpoint instead of the rework (and ``tau`` is optimised over the unwarned failures only).

Units: seconds, hours, bytes, GB/s (1e9 bytes/s). Pure Python, no work at import time. Every number below has its
source in a ``#:`` comment; every result carries them in :attr:`Goodput.source`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuopt.kernel.errors import InputError

# ------------------------------------------------------------------------------------ Llama 3 pre-training (Meta)
# Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4, quoted: "During a 54-day snapshot
# period of pre-training, we experienced a total of 466 job interruptions. Of these, 47 were planned interruptions due
# to automated maintenance operations [...]. The remaining 419 were unexpected interruptions" and "we achieved higher
# than 90% effective training time [...] The effective training time measures the time spent on useful training over
# the elapsed time." Section 3.3.1: "Llama 3 405B is trained on up to 16K H100 GPUs"; Table 4 lists 16,384 GPUs.
#: Length of the snapshot, days (arXiv 2407.21783 section 3.3.4).
LLAMA3_SNAPSHOT_DAYS = 54
#: Job interruptions in the snapshot, all causes (arXiv 2407.21783 section 3.3.4).
LLAMA3_INTERRUPTIONS = 466
#: Planned interruptions: automated maintenance, operator-initiated changes (arXiv 2407.21783 section 3.3.4).
LLAMA3_PLANNED_INTERRUPTIONS = 47
#: Unexpected interruptions, classified in Table 5; ~78 % hardware (arXiv 2407.21783 section 3.3.4).
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
#: GPUs (H100-80GB) of the 405B run: "up to 16K" (section 3.3.1), 16,384 in Table 4. The snapshot's exact count is
#: not stated; the largest count gives the lowest per-GPU rate the figures allow.
LLAMA3_GPUS = 16_384
#: Effective training time reported: "higher than 90%" (arXiv 2407.21783 section 3.3.4).
LLAMA3_EFFECTIVE_TRAINING_TIME_MIN = 0.90
#: Sustained throughput of the Tectonic storage fabric used for checkpoints, bytes/s: "a sustainable throughput of
#: 2 TB/s and a peak throughput of 7 TB/s" (arXiv 2407.21783 section 3.3.1, Storage).
LLAMA3_STORAGE_SUSTAINED_BYTES_PER_S = 2e12

#: Unexpected interruptions per GPU-hour, DERIVED: 419 / (54 d x 24 h x 16,384 GPUs) = 1.97e-5 (one per 3.09 h on
#: 16,384 GPUs). Cross-check: 3.79 failures per 1000 node-days of 8 GPUs, between the 2.34 and 6.50 Meta measured
#: on its RSC-2 and RSC-1 research clusters (Kokolis et al. 2025, arXiv 2410.21680, as quoted by secondary copies).
FAILURE_RATE_PER_GPU_HOUR = LLAMA3_UNEXPECTED_INTERRUPTIONS / (LLAMA3_SNAPSHOT_DAYS * 24 * LLAMA3_GPUS)

# ----------------------------------------------------------------------------------------------------- checkpoints
#: Checkpoint bytes per parameter, DERIVED from the mixed-precision Adam state: bf16 weights 2 + fp32 master weights
#: 4 + Adam momentum 4 + variance 4 (ZeRO's K = 12 plus the 16-bit weights; Rajbhandari et al. 2020, arXiv
#: 1910.02054). Checked against BLOOM-176B's checkpoints (perf/memory.csv rows 89-90: 329 GB bf16 weights, 2.3 TB
#: full; tests/test_goodput.py).
CHECKPOINT_BYTES_PER_PARAM = 2 + 4 + 4 + 4
#: Checkpoint write bandwidth per node, GB/s, DERIVED: Llama 3's 2 TB/s sustained storage throughput shared by the
#: 16,384 / 8 = 2,048 nodes of its 405B run = 0.98 GB/s per node (each node writes its shard in parallel).
#: Conservative for small jobs, whose nodes do not share the fabric with 2,047 others.
CHECKPOINT_WRITE_GBPS_PER_NODE = LLAMA3_STORAGE_SUSTAINED_BYTES_PER_S / (LLAMA3_GPUS / 8) / 1e9
#: Restart time after an interruption, s: 10 min. MegaScale (Jiang et al. 2024, arXiv 2402.15627, section 6.3): "The
#: average time required for detecting failure and executing diagnostic tests is less than 10 minutes"; inside the
#: 5-20 min restart overhead (u0) Kokolis et al. 2025 (arXiv 2410.21680) give for Meta's RSC clusters (as quoted by
#: secondary copies). Assumption: reloading the checkpoint fits in the same 10 minutes.
RESTART_S = 600.0

# ------------------------------------------------------------------------------------------------------ AWS spot
#: Warning before a reclaim, s: "A Spot Instance interruption notice is a warning that is issued two minutes before
#: Amazon EC2 stops or terminates your Spot Instance" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/
#: spot-instance-termination-notices.html). "Interruption notices are emitted on a best effort basis" (same page).
SPOT_NOTICE_S = 120.0
#: Spot Instance Advisor buckets (https://aws.amazon.com/ec2/spot/instance-advisor/): "Frequency of interruption
#: represents the rate at which Spot has reclaimed capacity during the trailing month. They are in ranges of < 5%,
#: 5-10%, 10-15%, 15-20% and >20%" (quoted from the Advisor's data, spot-advisor-data.json).
SPOT_ADVISOR_BUCKETS = ("<5%", "5-10%", "10-15%", "15-20%", ">20%")
#: Fraction of spot capacity reclaimed per month assumed by default: 0.20, the upper edge of the worst bucket that has
#: an upper edge (15-20 %; >20 % is unbounded). Assumption: scarce GPU types are not assumed to sit in the <5 % bucket.
SPOT_MONTHLY_INTERRUPTION_FRACTION = 0.20
#: Hours in an average month (8760 / 12).
HOURS_PER_MONTH = 8760 / 12
#: Reclaims per instance-hour, DERIVED: -ln(1 - 0.20) / 730 h = 3.06e-4, reading the bucket as the probability that an
#: instance running the whole month is reclaimed, with a constant hazard. A lower bound when instances live less than
#: a month (the Advisor does not say which instances it counts); override with spot_interruptions_per_instance_hour.
SPOT_INTERRUPTIONS_PER_INSTANCE_HOUR = -math.log(1.0 - SPOT_MONTHLY_INTERRUPTION_FRACTION) / HOURS_PER_MONTH
#: Time to get replacement spot capacity before the restart, s: 10 min. Assumption: no provider publishes it, and when
#: the type has no spot capacity the wait is unbounded; override with spot_reacquire_s.
SPOT_REACQUIRE_S = 600.0


def _number(field: str, value: object, *, minimum: float = 0.0, strict: bool = True, finite: bool = True) -> float:
    """``value`` as a float > minimum (>= when not strict), else InputError naming ``field``."""
    accepted = f"a number {'>' if strict else '>='} {minimum:g}" + ("" if finite else " (inf allowed)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, f"not a number: {value!r}", accepted=accepted)
    x = float(value)
    if math.isnan(x) or (finite and math.isinf(x)) or x < minimum or (strict and x == minimum):
        raise InputError(field, f"out of range: {value!r}", accepted=accepted)
    return x


def young_daly_interval_s(checkpoint_s: float, mtbf_s: float, *, higher_order: bool = False) -> float:
    """Optimal compute time between two checkpoints, s.

    First order (Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9)):
    ``sqrt(2 * checkpoint_s * mtbf_s)``. ``higher_order=True``: Daly 2006 ("A higher order estimate of the optimum
    checkpoint interval for restart dumps", FGCS 22(3), doi:10.1016/j.future.2004.11.016), for delta < 2M:
    ``sqrt(2 delta M) * (1 + sqrt(delta/(2M))/3 + delta/(18M)) - delta``, else ``M``.

    Args:
        checkpoint_s: time to write one checkpoint (delta), s, > 0.
        mtbf_s: mean time between interruptions of the job (M), s, > 0; ``math.inf`` gives ``math.inf``.
        higher_order: use Daly's higher-order estimate instead of Young's.

    Returns:
        The interval, s (``math.inf`` when nothing ever fails).

    Raises:
        InputError: field ``checkpoint_s`` or ``mtbf_s`` not a positive number.
    """
    delta = _number("checkpoint_s", checkpoint_s)
    m = _number("mtbf_s", mtbf_s, finite=False)
    if math.isinf(m):
        return math.inf
    if not higher_order:
        return math.sqrt(2.0 * delta * m)
    if delta >= 2.0 * m:
        return m
    x = delta / (2.0 * m)
    return math.sqrt(2.0 * delta * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta


@dataclass(frozen=True)
class Goodput:
    """Expected goodput of a training job and where the rest of the wall time goes.

    Attributes:
        fraction: useful training time / wall time, 0..1 (Llama 3's "effective training time"; 0.0 when the job
            cannot make progress: interruptions come faster than it can checkpoint and restart).
        mtbf_hours: the job's mean time between interruptions, h (``math.inf`` when none).
        checkpoint_interval_s: compute time between checkpoints, s (``math.inf`` when nothing fails).
        checkpoint_s: time one checkpoint blocks training, s.
        restart_s: time from an interruption to training again, s (on spot, the mean over failures and reclaims).
        interruptions_per_hour: expected interruptions of the job per wall hour (failures + spot reclaims).
        lost_fraction_checkpointing: share of wall time spent writing checkpoints.
        lost_fraction_rework: share spent redoing the work since the last checkpoint.
        lost_fraction_restart: share spent restarting (and re-acquiring spot capacity).
            The three lost shares are first-order; they sum to 1 - fraction unless the fraction was clamped.
        source: every assumption with its source, and notes on the result's validity.
    """

    fraction: float
    mtbf_hours: float
    checkpoint_interval_s: float
    checkpoint_s: float
    restart_s: float
    interruptions_per_hour: float
    lost_fraction_checkpointing: float
    lost_fraction_rework: float
    lost_fraction_restart: float
    source: tuple[str, ...]

    def describe(self) -> str:
        """One line: the goodput, the MTBF, the checkpoint cadence and the three losses."""
        return (f"goodput {100 * self.fraction:.1f} % (MTBF {self.mtbf_hours:.3g} h, "
                f"checkpoint {self.checkpoint_s:.3g} s every {self.checkpoint_interval_s / 60:.3g} min, "
                f"restart {self.restart_s / 60:.3g} min; lost: checkpointing "
                f"{100 * self.lost_fraction_checkpointing:.1f} %, rework {100 * self.lost_fraction_rework:.1f} %, "
                f"restart {100 * self.lost_fraction_restart:.1f} %)")


def training_goodput(gpus: float, params: float, *, gpus_per_node: int = 8,
                     checkpoint_write_gbps_per_node: float | None = None, restart_s: float | None = None,
                     failure_rate_per_gpu_hour: float | None = None, interval_s: float | None = None,
                     spot: bool = False, spot_interruptions_per_instance_hour: float | None = None,
                     spot_reacquire_s: float | None = None, checkpoint_s: float | None = None,
                     checkpoint_bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM) -> Goodput:
    """Expected goodput of a synchronous training job of ``params`` parameters on ``gpus`` GPUs.

    Interruptions per hour: ``gpus x failure_rate_per_gpu_hour`` (+ on spot ``instances x
    spot_interruptions_per_instance_hour``, instances = nodes = ceil(gpus / gpus_per_node)). Checkpoint time: params x
    checkpoint_bytes_per_param / (nodes x checkpoint_write_gbps_per_node x 1e9), every node writing its shard in
    parallel (or ``checkpoint_s`` when given, e.g. the blocking part of an asynchronous save). Interval: ``interval_s``
    or Young's optimum. Goodput: ``1 - delta/tau - lambda (tau/2 + R)``, clamped to [0, 1]. On spot R adds
    ``spot_reacquire_s`` for reclaims, and when delta <= 120 s (the notice) a reclaim costs one checkpoint, not rework.

    Args:
        gpus: GPUs of the job, > 0 (fractional allowed).
        params: model parameters, > 0.
        gpus_per_node: GPUs per node (instance), > 0.
        checkpoint_write_gbps_per_node: write bandwidth of one node to checkpoint storage, GB/s (1e9 BYTES/s, not
            bits); default :data:`CHECKPOINT_WRITE_GBPS_PER_NODE`.
        restart_s: restart time after an interruption, s, >= 0; default :data:`RESTART_S`.
        failure_rate_per_gpu_hour: unplanned job interruptions per GPU-hour, >= 0; default
            :data:`FAILURE_RATE_PER_GPU_HOUR`.
        interval_s: compute time between checkpoints, s, > 0; default Young's optimum.
        spot: the instances are spot (reclaimable) capacity.
        spot_interruptions_per_instance_hour: reclaims per instance-hour, >= 0; default
            :data:`SPOT_INTERRUPTIONS_PER_INSTANCE_HOUR`. Ignored unless ``spot``.
        spot_reacquire_s: time to get replacement spot capacity, s, >= 0; default :data:`SPOT_REACQUIRE_S`.
        checkpoint_s: time one checkpoint blocks training, s, > 0; default from the bytes and bandwidth (when given,
            checkpoint_write_gbps_per_node and checkpoint_bytes_per_param are not used).
        checkpoint_bytes_per_param: checkpoint bytes per parameter, > 0; default :data:`CHECKPOINT_BYTES_PER_PARAM`.

    Returns:
        A :class:`Goodput`; ``fraction`` 0.0 (with the reason in ``source``) when the job cannot make progress.

    Raises:
        InputError: the field named is not a number in its range.
    """
    n_gpus = _number("gpus", gpus)
    n_params = _number("params", params)
    per_node = _number("gpus_per_node", gpus_per_node)
    nodes = math.ceil(n_gpus / per_node)
    src: list[str] = []

    def pick(field: str, value: float | None, default: float, default_src: str, **kw: object) -> float:
        if value is None:
            src.append(f"{field} = {default:.4g}: {default_src}")
            return default
        x = _number(field, value, **kw)  # type: ignore[arg-type]
        src.append(f"{field} = {x:.4g}: given")
        return x

    f_gpu = pick("failure_rate_per_gpu_hour", failure_rate_per_gpu_hour, FAILURE_RATE_PER_GPU_HOUR,
                 "DERIVED, 419 unexpected interruptions / (54 d x 24 h x 16,384 H100), Llama 3 arXiv 2407.21783 "
                 "section 3.3.4", strict=False)
    r = pick("restart_s", restart_s, RESTART_S, "MegaScale arXiv 2402.15627 section 6.3 (detection + diagnosis < 10 "
             "min); within Kokolis et al. arXiv 2410.21680's 5-20 min; assumption: reload included", strict=False)
    if checkpoint_s is None:
        bw = pick("checkpoint_write_gbps_per_node", checkpoint_write_gbps_per_node, CHECKPOINT_WRITE_GBPS_PER_NODE,
                  "DERIVED, Llama 3's 2 TB/s sustained storage (arXiv 2407.21783 section 3.3.1) / 2,048 nodes")
        b = _number("checkpoint_bytes_per_param", checkpoint_bytes_per_param)
        src.append(f"checkpoint_bytes_per_param = {b:g}: " + ("DERIVED, bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4"
                                                             if b == CHECKPOINT_BYTES_PER_PARAM else "given"))
        delta = n_params * b / (nodes * bw * 1e9)
    else:
        delta = _number("checkpoint_s", checkpoint_s)
        src.append(f"checkpoint_s = {delta:.4g}: given")
    lam_fail = n_gpus * f_gpu / 3600.0  # per second
    lam_spot, r_spot, warned = 0.0, r, False
    if spot:
        s_rate = pick("spot_interruptions_per_instance_hour", spot_interruptions_per_instance_hour,
                      SPOT_INTERRUPTIONS_PER_INSTANCE_HOUR, "DERIVED, -ln(1 - 0.20)/730 h: upper edge of the Spot "
                      "Instance Advisor's 15-20 % per trailing month bucket (assumption: which bucket)", strict=False)
        r_spot = r + pick("spot_reacquire_s", spot_reacquire_s, SPOT_REACQUIRE_S,
                          "assumption, no published figure", strict=False)
        lam_spot = nodes * s_rate / 3600.0
        warned = delta <= SPOT_NOTICE_S
        src.append(f"spot: {nodes} instances; " + (
            f"checkpoint {delta:.3g} s fits the 120 s interruption notice (AWS EC2 user guide), so a reclaim costs "
            "one checkpoint, not rework (assumption: the best-effort notice arrives)" if warned else
            f"checkpoint {delta:.3g} s exceeds the 120 s interruption notice: a reclaim loses the work since the last "
            "checkpoint"))
    lam = lam_fail + lam_spot
    lam_rework = lam_fail + (0.0 if warned else lam_spot)
    if interval_s is not None:
        tau = _number("interval_s", interval_s, finite=False)
        src.append(f"interval_s = {tau:.4g}: given")
    else:
        tau = young_daly_interval_s(delta, 1.0 / lam_rework if lam_rework > 0 else math.inf)
        src.append("interval: Young 1974 sqrt(2 x checkpoint_s x MTBF) over the interruptions that lose work")
    lost_ckpt = delta / tau + (lam_spot * delta if warned else 0.0)
    lost_rework = lam_rework * tau / 2.0 if lam_rework > 0 else 0.0
    lost_restart = lam_fail * r + lam_spot * r_spot
    src.append("goodput = 1 - checkpoint_s/interval - rate x (interval/2 + restart), first order (Young 1974; Daly "
               "2006; Kokolis et al. arXiv 2410.21680 E[ETTR])")
    fraction = 1.0 - lost_ckpt - lost_rework - lost_restart
    if fraction <= 0.0:
        fraction = 0.0
        src.append(f"NO PROGRESS: losses {100 * (lost_ckpt + lost_rework + lost_restart):.0f} % of wall time >= 100 %; "
                   "the job cannot make progress (fewer GPUs, faster checkpoints or restarts, or fewer failures)")
    elif lam > 0 and not math.isinf(tau) and lam * (tau + r_spot) > 0.25:
        src.append("first-order model stretched: interval + restart > MTBF/4 (it assumes at most one interruption "
                   "per interval), so the goodput is approximate")
    mean_r = (lam_fail * r + lam_spot * r_spot) / lam if lam > 0 else r
    return Goodput(fraction=min(fraction, 1.0), mtbf_hours=1.0 / (lam * 3600.0) if lam > 0 else math.inf,
                   checkpoint_interval_s=tau, checkpoint_s=delta, restart_s=mean_r, interruptions_per_hour=lam * 3600.0,
                   lost_fraction_checkpointing=lost_ckpt, lost_fraction_rework=lost_rework,
                   lost_fraction_restart=lost_restart, source=tuple(src))
