"""Physical bounds for a user's measured serving figures (``--measured FILE``, issue 33 point 3).

A benchmark row states output tokens/s, TTFT and TPOT for a replica (model, GPU, TP x PP, precision, concurrency).
Before the row corrects the model (:meth:`optimizer.sizing.serving.Measurements.correction`) it is checked against
what the replica's GPUs can do, from their datasheet (``optimizer/data/gpu_specs.csv``: dense tensor-core peak by
precision, memory bandwidth) and the roofline of ``/work/shared/FORMULAS.md`` section 7::

    t_step >= max( bytes of weights read per step / mem_BW , 2 N_active B / peak_FLOPs )

and against its own figures (a closed loop of ``C`` users: Little's law). Each check's factor and source:

* **compute ceiling** (:meth:`Roofline.compute_ceiling`): output tokens/s <= GPUs x peak / (2 N_active), factor
  :data:`COMPUTE_FACTOR` = 1.0 -- every output token costs at least one forward pass of its active parameters, 2
  FLOP each (FORMULAS.md section 2, Kaplan et al. 2020), whatever the engine (speculative decoding verifies each
  accepted token in the target model; prefill only adds FLOPs), and no engine exceeds the datasheet's dense peak.
  The calibration set (``/work/shared/data/perf/serving.csv``, 442 rows) reaches at most 0.34 of it (row 55,
  Llama-3.1-8B on A100-80GB fp16, 6,627 tokens/s per GPU).
* **bandwidth ceiling at the row's concurrency** (:meth:`Roofline.memory_ceiling`): a decode step reads the active
  weights once for the whole batch, so output tokens/s <= (k + 1) x C x GPUs x mem_BW / bytes read per step, with
  ``C`` sequences in flight (the running batch is at most the concurrency) and ``k + 1`` tokens per sequence per step
  at most: :data:`MEMORY_FACTOR` = 17, gpuopt's largest speculative decoding (``--speculative-tokens`` 0-16,
  gpuopt/request.py) plus the target's own token (Leviathan et al., ICML 2023, eq. 1). The calibration set reaches
  at most 0.57 of the ceiling without the factor (row 699, Llama-3.3-70B on 2x H100 fp8 at concurrency 1).
* **TPOT floor** (:meth:`Roofline.tpot_floor_ms`): one token of one sequence needs every layer's active weights
  read once: TPOT >= bytes read per step / (TP x mem_BW) / :data:`MEMORY_FACTOR` (pipeline stages run one after
  the other for one token, so PP does not shorten it). The calibration set's TPOTs are at least 1.7x the floor
  without the factor (row 699).
* **self-consistency** (:func:`expected_tokens_per_second`): ``C`` users each waiting TTFT + (O - 1) x TPOT per
  request of O output tokens produce C x O / (TTFT + (O - 1) TPOT) output tokens/s (Little's law); a stated
  tokens/s more than :data:`CONSISTENCY_FACTOR` = 10x above it (or, when TTFT is given, 10x below it) contradicts
  the row's own TPOT and concurrency. On the calibration set's 7 rows with concurrency, TTFT and TPOT (NVIDIA NIM
  1.8.0, rows 692-699) the formula is within 0.5 % of the stated tokens/s. Without TTFT only the upper side is
  checked: a long prefill can make throughput far lower than C / TPOT. An open loop at ``request_rate`` r cannot
  emit more than r x O output tokens/s for long, same factor.

The bytes read per step are the active parameters' weights at the precision's bytes (``WEIGHT_BYTES`` of
:mod:`optimizer.sizing.serving`) less the input embedding table (a lookup reads a few rows of it, not all): a
lower bound, so the ceilings are upper bounds. A figure the row does not give (GPU, layout, precision) takes the
loosest value: the fastest GPU, the fewest bytes. This module is a leaf: the caller passes the peak and the bytes
(``matmul_peak_flops`` and ``weight_bytes`` of :mod:`optimizer.sizing.serving`), so the two do not import each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

from gpuopt.kernel.errors import InputError
from optimizer.sizing.specs import GpuSpec, ModelSpec

#: No engine computes faster than the datasheet's dense tensor-core peak (1.0x peak).
COMPUTE_FACTOR = 1.0
#: Tokens one decode step can emit per sequence at most: gpuopt's largest speculative decoding (16 draft tokens,
#: gpuopt/request.py ``speculative_tokens`` le=16) plus the target model's own token.
MAX_DRAFT_TOKENS = 16
MEMORY_FACTOR = float(MAX_DRAFT_TOKENS + 1)
#: How far a row's tokens/s may sit from what its own TPOT, TTFT and concurrency imply.
CONSISTENCY_FACTOR = 10.0

SPECS = "optimizer/data/gpu_specs.csv"
#: ``gpu_label`` of :func:`roofline` for a row that names no GPU (the loosest: the fastest of the table's).
FASTEST = "fastest"


@dataclass(frozen=True)
class Roofline:
    """What one replica's GPUs can do, from the datasheet.

    Attributes:
        model: the model's name (for messages).
        gpu: the GPU's name, or a phrase for the loosest one ("the fastest GPU of gpu_specs.csv").
        gpus: GPUs of the replica (TP x PP).
        tensor_parallel: GPUs that split each layer (the TPOT floor divides the bytes by it).
        precision: the precision the peak and bytes are taken at ("any precision" when the row names none).
        peak_flops: dense tensor-core peak of one GPU, FLOP/s (gpu_specs.csv, the precision's column).
        bandwidth: memory bandwidth of one GPU, B/s (gpu_specs.csv ``memory_bandwidth_gbps`` x 1e9).
        flops_per_token: 2 x active parameters, FLOP per output token.
        bytes_per_step: bytes of weights a decode step reads at least (active weights less the input embedding).
    """

    model: str
    gpu: str
    gpus: int
    tensor_parallel: int
    precision: str
    peak_flops: float
    bandwidth: float
    flops_per_token: float
    bytes_per_step: float

    def compute_ceiling(self) -> float:
        """Output tokens/s of the replica at most: ``COMPUTE_FACTOR x gpus x peak / (2 N_active)``."""
        return COMPUTE_FACTOR * self.gpus * self.peak_flops / self.flops_per_token

    def compute_how(self) -> str:
        """How :meth:`compute_ceiling` was derived, for a message."""
        n = f"{self.gpus} x " if self.gpus > 1 else ""
        return (f"{n}{self.peak_flops / 1e12:g} TFLOPS / (2 x {_e(self.flops_per_token / 2)} FLOP per token); "
                f"{SPECS}, FORMULAS.md section 7")

    def memory_ceiling(self, concurrency: float) -> float:
        """Output tokens/s at most with ``concurrency`` sequences in flight: ``MEMORY_FACTOR x C x gpus x mem_BW /
        bytes per step``."""
        return MEMORY_FACTOR * concurrency * self.gpus * self.bandwidth / self.bytes_per_step

    def memory_how(self, concurrency: float) -> str:
        """How :meth:`memory_ceiling` was derived at ``concurrency``, for a message."""
        n = f"{self.gpus} x " if self.gpus > 1 else ""
        return (f"{MEMORY_FACTOR:g} tokens per step (16 draft + 1) x concurrency {concurrency:g} x {n}"
                f"{self.bandwidth / 1e9:g} GB/s / {self.bytes_per_step / 1e9:.3g} GB of weights read per step; "
                f"{SPECS}, FORMULAS.md section 7")

    def tpot_floor_ms(self) -> float:
        """The shortest TPOT, ms: ``bytes per step / (TP x mem_BW) / MEMORY_FACTOR``."""
        return self.bytes_per_step / (self.tensor_parallel * self.bandwidth) / MEMORY_FACTOR * 1e3

    def tpot_how(self) -> str:
        """How :meth:`tpot_floor_ms` was derived, for a message."""
        t = f"{self.tensor_parallel} x " if self.tensor_parallel > 1 else ""
        return (f"{self.bytes_per_step / 1e9:.3g} GB of weights read per token / ({t}{self.bandwidth / 1e9:g} GB/s) "
                f"/ {MEMORY_FACTOR:g} tokens per step (16 draft + 1); {SPECS}, FORMULAS.md section 7")

    def label(self) -> str:
        """"the L4's" / "2 x H100-80GB's" -- the replica, for a message."""
        if self.gpu == FASTEST:
            return f"{self.gpus} of the fastest GPUs' (any of {SPECS})"
        return f"the {self.gpu}'s" if self.gpus == 1 else f"{self.gpus} x {self.gpu}'s"


def roofline(model: ModelSpec, gpus: Iterable[GpuSpec], n_gpus: int, tensor_parallel: int,
             precisions: Iterable[str], *, peak_of: Callable[[GpuSpec, str], float],
             bytes_of: Callable[[ModelSpec, str], float], gpu_label: str | None = None) -> Roofline | None:
    """The loosest :class:`Roofline` over the candidate ``gpus`` and ``precisions`` (one each when the row names
    them): the highest peak, the highest bandwidth, the fewest bytes.

    Args:
        peak_of: dense peak FLOP/s of a GPU at a precision; raises InputError when the GPU lacks it (skipped).
        bytes_of: bytes of the model's weights at a precision (all parameters).
        gpu_label: the name to show when several GPUs are candidates.
    Returns:
        None when no candidate GPU runs any of the precisions (no bound).
    """
    gpus, precisions = list(gpus), list(precisions)
    peak, bw, nbytes = 0.0, 0.0, math.inf
    for g in gpus:
        for p in precisions:
            try:
                f = peak_of(g, p)
            except InputError:
                continue
            peak, bw = max(peak, f), max(bw, g.memory_bandwidth_gbps * 1e9)
            nbytes = min(nbytes, bytes_of(model, p))
    if peak <= 0 or bw <= 0:
        return None
    active = model.params_active / max(model.params_total, 1.0)
    embed = float(model.vocab_size * model.hidden_size) * 2.0
    per_step = max(nbytes * active - embed, nbytes * active * 0.5)
    return Roofline(model=model.name, gpu=gpu_label or gpus[0].name, gpus=max(1, n_gpus),
                    tensor_parallel=max(1, tensor_parallel),
                    precision=precisions[0] if len(precisions) == 1 else "any precision", peak_flops=peak,
                    bandwidth=bw, flops_per_token=2.0 * max(model.params_active, 1.0), bytes_per_step=per_step)


def expected_tokens_per_second(concurrency: float, output_tokens: float, tpot_ms: float,
                               ttft_ms: float | None) -> float:
    """Output tokens/s of ``concurrency`` closed-loop users, each request ``output_tokens`` long taking
    ``TTFT + (O - 1) x TPOT`` (Little's law; TTFT 0 when not given, which makes it an upper bound)."""
    cycle_s = ((ttft_ms or 0.0) + max(output_tokens - 1.0, 0.0) * tpot_ms) / 1e3
    if cycle_s <= 0:
        cycle_s = tpot_ms / 1e3
    return concurrency * output_tokens / cycle_s


def check_figures(where: str, r: Roofline | None, *, tokens_per_second: float | None, tpot_ms: float | None,
                  ttft_ms: float | None, concurrency: float | None, output_tokens: float,
                  request_rate: float | None = None) -> None:
    """Refuse a measured row whose figures a replica with roofline ``r`` cannot produce, or that contradict each
    other (the checks and their factors: the module's docstring).

    Args:
        where: the row's place for the message, e.g. ``"bench.csv row 3 (line 4)"``.
        r: the replica's roofline; None (no GPU runs the precision): only :func:`check_consistency`.
        tokens_per_second: the row's output tokens/s of the whole replica (None: not given).
        tpot_ms, ttft_ms: mean TPOT and TTFT, ms (None: not given).
        concurrency: closed-loop users (None: not given); request_rate: requests/s of an open loop (None).
        output_tokens: output tokens per request.
    Raises:
        InputError("measured"): one line naming the row, the column, the value, the bound and how it was derived.
    """
    tps = tokens_per_second
    if r is None:
        return check_consistency(where, tokens_per_second=tps, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                                 concurrency=concurrency, output_tokens=output_tokens, request_rate=request_rate)
    on = f"{r.label()} {{what}} of {{bound}} for {r.model} at {r.precision}"
    if tps is not None:
        bound = r.compute_ceiling()
        if tps > bound:
            raise InputError("measured", f"{where}: output_tokens_per_second {tps:g} is above "
                             + on.format(what="compute roofline", bound=f"{bound:,.0f} tokens/s")
                             + f" ({r.compute_how()})", accepted=f"<= {bound:,.0f} tokens/s")
        if concurrency is not None:
            bound = r.memory_ceiling(concurrency)
            if tps > bound:
                raise InputError("measured", f"{where}: output_tokens_per_second {tps:g} is above "
                                 + on.format(what="memory-bandwidth ceiling", bound=f"{bound:,.0f} tokens/s")
                                 + f" ({r.memory_how(concurrency)})", accepted=f"<= {bound:,.0f} tokens/s")
    if tpot_ms is not None:
        floor = r.tpot_floor_ms()
        if tpot_ms < floor:
            raise InputError("measured", f"{where}: tpot_ms {tpot_ms:g} is below "
                             + on.format(what="memory-bound floor", bound=f"{floor:.3g} ms")
                             + f" ({r.tpot_how()})", accepted=f">= {floor:.3g} ms")
    check_consistency(where, tokens_per_second=tps, tpot_ms=tpot_ms, ttft_ms=ttft_ms, concurrency=concurrency,
                      output_tokens=output_tokens, request_rate=request_rate)


def check_row(where: str, r: Roofline | None, row, *, request_rate: float | None = None) -> None:
    """:func:`check_figures` on a measured row (an ``optimizer.sizing.serving.Measurement``: its
    ``tokens_per_second``, ``tpot_ms``, ``ttft_ms``, ``concurrency`` and ``output_tokens``).

    Raises:
        InputError("measured"): as :func:`check_figures`.
    """
    check_figures(where, r, tokens_per_second=row.tokens_per_second, tpot_ms=row.tpot_ms, ttft_ms=row.ttft_ms,
                  concurrency=row.concurrency, output_tokens=row.output_tokens, request_rate=request_rate)


def check_consistency(where: str, *, tokens_per_second: float | None, tpot_ms: float | None,
                      ttft_ms: float | None, concurrency: float | None, output_tokens: float,
                      request_rate: float | None = None) -> None:
    """Refuse a row whose tokens/s contradicts its own TPOT (and TTFT) and concurrency by more than
    :data:`CONSISTENCY_FACTOR` (:func:`expected_tokens_per_second`), or exceeds its request rate x output tokens
    by as much. Needs no GPU: the row's own figures.

    Raises:
        InputError("measured"): naming the row, the column, the value and the figure it contradicts.
    """
    tps, k = tokens_per_second, CONSISTENCY_FACTOR
    if tps is None:
        return
    if concurrency is not None and tpot_ms is not None:
        exp = expected_tokens_per_second(concurrency, output_tokens, tpot_ms, ttft_ms)
        ttft = f"TTFT {ttft_ms:g} ms + " if ttft_ms is not None else ""
        how = (f"concurrency {concurrency:g} x {output_tokens:g} output tokens / ({ttft}{output_tokens - 1:g} x TPOT "
               f"{tpot_ms:g} ms) = {exp:,.4g} tokens/s, Little's law")
        if tps > k * exp or (ttft_ms is not None and tps < exp / k):
            side = "above" if tps > exp else "below"
            raise InputError("measured", f"{where}: output_tokens_per_second {tps:g} is more than {k:g}x {side} what "
                                         f"the row's own TPOT and concurrency give ({how})",
                             accepted=f"{exp / k:,.4g} to {exp * k:,.4g} tokens/s, or fix tpot_ms / concurrency")
    if request_rate is not None and math.isfinite(request_rate) and request_rate > 0:
        cap = request_rate * output_tokens
        if tps > k * cap:
            raise InputError("measured", f"{where}: output_tokens_per_second {tps:g} is more than {k:g}x the "
                                         f"request_rate {request_rate:g}/s x {output_tokens:g} output tokens "
                                         f"({cap:,.4g} tokens/s)", accepted=f"<= {k * cap:,.4g} tokens/s")


def finite_number(value: object) -> float | None:
    """``value`` as a finite float > 0, else None (a request rate of ``"inf"`` or a non-number: no bound from it)."""
    if isinstance(value, bool):
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def _e(x: float) -> str:
    """8.03e+09 -> "8.03e9"."""
    return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")
