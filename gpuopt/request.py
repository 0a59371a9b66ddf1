"""The request: one pydantic model (:class:`PlanRequest`) holds every ``gpuopt recommend`` option.

Each option is defined once, here: its name (the plan-file key, the Python API keyword and the JSON key, all the
same), its type and bounds (the annotated field types below), its default, its unit (in the field's description)
and the ``gpuopt recommend`` flag that sets it. The rest is derived from these fields:

* plan files (``gpuopt.plan_spec.load_plan_file``) are validated by :class:`PlanRequest`; their keys are its fields
  (workload keys under ``workloads:``, :class:`WorkloadItem`);
* ``gpuopt.recommend(request)`` / ``gpuopt.recommend(**keywords)`` take these names (:func:`request_keywords`
  checks keywords: old API names are deprecated aliases, :data:`DEPRECATED_KEYWORDS`; an unknown one is refused
  naming the closest known key);
* the CLI's help text and defaults come from the fields (:func:`cli_help`; :data:`CLI_OPTIONS` is each key's flag),
  and the CLI's values are validated by the model, so bounds and messages live here;
* ``docs/schemas/plan-request.schema.json`` is generated from the model (``python -m gpuopt.schemas --write``).

The model groups its fields into parts (field metadata ``group``, :data:`GROUPS`, :meth:`PlanRequest.part`):
per workload ``workload`` (what and when), ``demand`` (serving demand, training work, value), ``serving``,
``training``; for the plan ``purchase`` (pricing, spot capacity, max instances, horizon, leftover value, prices),
``placement`` (placement, region groups, spread, providers, regions, GPUs, local zones), ``budget`` (budget,
budget_total, max_upfront, max_commitment) and ``solver`` (objective, solver, time limit, blocks). The plan file
keeps them flat (users' files work unchanged); the grouping is the model's.

Units: budget USD, the most spent in any one month of the horizon (hourly, recurring and upfront payments of that
month), all workloads together; budget_total USD over the horizon; horizon_months months; start/end month numbers
(1 = the horizon's first month); tokens_per_second and demand in generated tokens/s for the whole fleet of a serving
workload; tokens to process for train/finetune/lora; deadline_hours from the job's start; value_per_million_tokens
USD per million generated tokens served; value_usd USD for a finished training job.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, StrictBool, ValidationError,
                      ValidationInfo, field_validator, model_validator)
from pydantic_core import PydanticCustomError, PydanticUndefined

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import MAX_QUANTITY, dotted
from gpuopt.kernel.records import PLANNED_PRICING
from gpuopt.kernel.size_limits import MAX_DEMAND_BLOCKS, MAX_REPLICAS, MAX_WORKLOADS  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # pragma: no cover
    from optimizer.planning.demand import DemandProfile


def _opt(default: Any = PydanticUndefined, *, doc: str, group: str, cli: str | None = None, **kw: Any) -> Any:
    """A request field: its description (with its unit), its part of the request and its ``recommend`` flag."""
    extra: dict[str, Any] = {"group": group}
    if cli:
        extra["cli"] = cli
    return Field(default, description=doc, json_schema_extra=extra, **kw)


def show_value(v: Any) -> str:
    """A value as an error message shows it (floats as %g, long ones cut)."""
    text = f"{v:g}" if isinstance(v, float) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


TASKS = ("serve", "train", "finetune", "lora")
TRAINING_TASKS = ("train", "finetune", "lora")
PRECISIONS = ("fp32", "bf16", "fp16", "int8", "int4")
OBJECTIVES = ("cost", "roi")
SOLVERS = ("cbc", "highs")
MAX_DEADLINE_HOURS = 87_600.0  # ten years
DEFAULT_SPOT_CAPACITY = 16
DEMAND_KEYS = ("tokens_per_second", "request_rate", "demand_profile", "demand")
EXAMPLE_WORKLOAD = Path(__file__).parent / "data" / "example_workload.yaml"
LOCAL_WORKLOAD_NAME = "gpuopt.yaml"


def replicas_message(n: int) -> str:
    """Why ``n`` replicas (min_replicas) is refused: the limit, its measured cost and the way out."""
    return (f"{n:,} replicas is above the limit of {MAX_REPLICAS:,} per workload (the exact search grows with the "
            f"square of the floor: 20 replicas took 40 s, 100 over 120 s); split the service into several "
            f"workloads (one per region or team)")


def blocks_message(n: int, what: str) -> str:
    """Why ``n`` demand blocks (``blocks``, or a ``demand:`` list's values when no ``blocks`` bins them) are
    refused, and the way out: for a list, the ``blocks`` values that bin it (optimizer.planning.demand rebins
    ``n`` consecutive blocks into a number that divides ``n``)."""
    head = (f"{n:,} {what} is above the limit of {MAX_DEMAND_BLOCKS:,} demand blocks (a month in 5-minute bins; "
            f"every block adds a column of variables per candidate); ")
    if what == "blocks":
        return head + "bin the demand with blocks: 730 (hours of the month), 168 (hours of the week) or 24"
    fits = [d for d in (730, 168, 24) if n % d == 0] or [max(d for d in range(1, 731) if n % d == 0)]
    if fits[0] < 24:  # no useful number of blocks divides it: a profile CSV with timestamps bins any length
        return head + (f"no number of blocks from 24 to 730 divides its {n:,} values: give the series as a "
                       f"demand_profile CSV of timestamp,demand (binned by blocks: 730, 168 or 24)")
    return head + f"bin the list with blocks: {fits[0]} (a number that divides its {n:,} values)"


# ------------------------------------------------------------------------------------------- field types
def plan_error(message: str, accepted: str | None = None, loc: tuple = ()) -> PydanticCustomError:
    """A validation error with our own one-line message; ``loc`` is appended to the error's location."""
    return PydanticCustomError("plan", "{message}", {"message": message, "accepted": accepted, "loc": loc})


def _not_bool(v: Any) -> Any:
    """Numbers only (YAML true/false are not 1/0), and finite ones (a NaN is not "greater than 0", it is no number)."""
    if isinstance(v, bool):
        raise plan_error(f"must be a number, got {show_value(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise plan_error(f"must be a finite number, got {show_value(v)}")
    return v


def _file_next_to_plan(v: str | None, info: ValidationInfo) -> str | None:
    """A path key of the plan (demand_profile, catalog) must name a file; a relative path is relative to the plan."""
    base = (info.context or {}).get("base_dir")
    if v is not None and base is not None:
        p = Path(v) if Path(v).is_absolute() else Path(base) / v
        if not p.is_file():
            raise plan_error(f"file not found: {p}" + ("" if Path(v).is_absolute()
                                                  else " (a relative path is relative to the plan file's folder)"))
    return v


def _lower(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


def _name(v: Any) -> Any:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v.strip() if isinstance(v, str) else v


def _names(v: Any) -> Any:
    """A list of names given as one name, a list, or nothing."""
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return v


def _lower_names(v: Any) -> Any:
    v = _names(v)
    return [_lower(x) for x in v] if isinstance(v, list) else v


# every quantity at most gpuopt.kernel.inputs.MAX_QUANTITY (1e15): beyond any real one, and products of two stay finite
PosFloat = Annotated[float, Field(gt=0, le=MAX_QUANTITY, allow_inf_nan=False), BeforeValidator(_not_bool)]
NonNegFloat = Annotated[float, Field(ge=0, le=MAX_QUANTITY, allow_inf_nan=False), BeforeValidator(_not_bool)]
PosInt = Annotated[int, Field(ge=1, le=int(MAX_QUANTITY)), BeforeValidator(_not_bool)]
NonNegInt = Annotated[int, Field(ge=0, le=int(MAX_QUANTITY)), BeforeValidator(_not_bool)]
ZeroStage = Annotated[int, Field(ge=0, le=3), BeforeValidator(_not_bool)]
Deadline = Annotated[float, Field(ge=1, le=MAX_DEADLINE_HOURS, allow_inf_nan=False), BeforeValidator(_not_bool)]
Name = Annotated[str, BeforeValidator(_name), Field(min_length=1)]
NameList = Annotated[list[Name], BeforeValidator(_names)]


def _gpu_caps(v: Any) -> Any:
    """Spot caps per GPU model: a mapping ``{H100-80GB: 4}`` (plan file) or ``GPU=N`` items (``--spot-capacity-gpu
    H100-80GB=4``); GPU models by their canonical names (gpuopt.kernel.records.CANONICAL_GPUS)."""
    from gpuopt.kernel.records import CANONICAL_GPUS

    if v is None:
        return {}
    if isinstance(v, Mapping):
        items = list(v.items())
    elif isinstance(v, (list, tuple)):
        items = []
        for x in v:
            if not isinstance(x, str) or "=" not in x:
                raise plan_error(f"{show_value(x)} is not GPU=N", accepted="e.g. H100-80GB=4")
            k, n = x.split("=", 1)
            items.append((k.strip(), n.strip()))
    else:
        raise plan_error("a mapping of GPU model to instances, or GPU=N items", accepted="e.g. H100-80GB=4")
    out = {}
    for k, n in items:
        if str(k) not in CANONICAL_GPUS:
            close = difflib.get_close_matches(str(k), list(CANONICAL_GPUS), n=1)
            raise plan_error(f"unknown GPU model {show_value(k)}" + (f" (did you mean {close[0]}?)" if close else ""),
                             accepted=", ".join(sorted(CANONICAL_GPUS)))
        try:
            cap = int(str(n))
        except ValueError:
            raise plan_error(f"{show_value(n)} is not a whole number of instances for {k}") from None
        if cap < 0:
            raise plan_error(f"{cap} instances for {k}: must be 0 or more")
        out[str(k)] = cap
    return out


SpotCapsByGpu = Annotated[dict[str, int], BeforeValidator(_gpu_caps)]
Task = Annotated[Literal["serve", "train", "finetune", "lora"], BeforeValidator(_lower)]
ALL_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


#: What ``precision: auto`` lets a serving plan choose from, per GPU (issue 26, "precision as a decision"): bf16, and
#: fp8 (W8A8) on GPUs with FP8 tensor cores -- vLLM quantizes any BF16/FP16 checkpoint to FP8 on load "without any
#: calibration data" (vLLM docs, "FP8 W8A8", online dynamic quantization), and FP8 W8A8 recovers 99 % or more of the
#: BF16 model's accuracy across model sizes and tasks (Kurtic et al. 2024, "Give Me BF16 or Give Me Death?",
#: arXiv 2411.02355) -- and fp16 where bf16 does not run (Volta, Turing). Weight-only int8/int4 (GPTQ/AWQ) are added
#: only for a model with a published checkpoint whose card reports at least 99 % of the unquantized score
#: (optimizer.sizing.checkpoints: their accuracy depends on the model and its calibration, same paper).
AUTO_PRECISIONS = "bf16,fp8,fp16"


def _published_quantized(model: str | None) -> list[str]:
    """The weight-only precisions ``precision: auto`` adds for ``model``: those of a published checkpoint whose card
    reports at least 99 % of the unquantized model's score (optimizer.sizing.checkpoints.auto_quantized); none for a
    model not in the table."""
    if not model:
        return []
    from optimizer.sizing.checkpoints import auto_quantized
    from optimizer.sizing.specs import load_model

    try:
        return auto_quantized(load_model(model).name, named=model)
    except Exception:  # noqa: BLE001 - an unknown model or config: the sizing reports it; auto adds nothing
        return []


def _precisions(v: Any) -> Any:
    """One precision, or several the planner may choose from ("bf16,fp8" or a list: serving only), as
    "p1,p2" lower case; each must be one of :data:`ALL_PRECISIONS` (the task's own rules are checked by sizing)."""
    if isinstance(v, (list, tuple)):
        items = [str(x) for x in v]
    elif isinstance(v, str):
        items = v.split(",")
    else:
        raise plan_error(f"must be a precision or a list of them, got {show_value(v)}", accepted=", ".join(ALL_PRECISIONS))
    items = [x.strip().lower() for x in items if x.strip()]
    if items == ["auto"]:
        return "auto"  # resolved by the task in WorkloadItem._cross_checks (AUTO_PRECISIONS)
    bad = [x for x in items if x not in ALL_PRECISIONS]
    if not items or bad:
        raise plan_error(f"unknown precision {bad[0] if bad else v!r}", accepted=", ".join(ALL_PRECISIONS))
    return ",".join(dict.fromkeys(items))


Precision = Annotated[str, BeforeValidator(_precisions)]
def _engine(v: Any) -> Any:
    """An engine name, canonical (``trt-llm``, ``trtllm`` -> ``tensorrt-llm``; optimizer.sizing.serving)."""
    from optimizer.sizing.serving import engine_aliases

    return engine_aliases(v) if isinstance(v, str) else v


Engine = Annotated[Literal["vllm", "vllm-v0", "sglang", "tensorrt-llm"], BeforeValidator(_engine)]


def _on_off(v: Any) -> Any:
    """YAML 1.1 reads an unquoted ``on``/``off`` as true/false: take them back as the words; text folded to lower
    case."""
    if v is True:
        return "on"
    if v is False:
        return "off"
    return v.strip().lower() if isinstance(v, str) else v
def _region(v: Any) -> Any:
    """A workload's region, ``provider/region`` in lower case (as the catalog's names are)."""
    if not isinstance(v, str):
        return v
    parts = [p.strip().lower() for p in v.split("/")]
    if len(parts) != 2 or not all(parts) or any(" " in p for p in parts):
        raise plan_error(f"must be provider/region, got {show_value(v)}", "provider/region, e.g. aws/us-east-1")
    return "/".join(parts)


def _optimizer(v: Any) -> Any:
    """An optimizer name, canonical (``AdamW`` -> ``adam``, ``adamw8bit`` -> ``adam8bit``; optimizer.training)."""
    from optimizer.sizing.training import OPTIMIZER_ALIASES

    if isinstance(v, str):
        v = v.strip().lower()
        return OPTIMIZER_ALIASES.get(v, v)
    return v


Optimizer = Annotated[Literal["adam", "adam8bit", "adafactor", "sgd"], BeforeValidator(_optimizer)]
Framework = Annotated[Literal["megatron", "fsdp", "deepspeed"], BeforeValidator(_lower)]
Offload = Annotated[Literal["none", "optimizer", "params"], BeforeValidator(_lower)]
Scenario = Annotated[Literal["chat", "offline", "server", "interactive"], BeforeValidator(_lower)]
Objective = Annotated[Literal["cost", "roi"], BeforeValidator(_lower)]
Solver = Annotated[Literal["cbc", "highs"], BeforeValidator(_lower)]
PricingList = Annotated[list[Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block", "flex_start",
                                     "savings_plan_1y", "savings_plan_3y"]], BeforeValidator(_lower_names)]
Placement = Annotated[Literal["region", "provider", "any"], BeforeValidator(_lower)]
Spread = Annotated[Literal["zones"], BeforeValidator(_lower)]
RegionGroupList = Annotated[list[Literal["us", "eu", "europe", "na", "apac", "latam", "mea"]], BeforeValidator(_lower_names)]
Fraction01 = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), BeforeValidator(_not_bool)]


def _redundancy(v: Any) -> Any:
    """``n+1`` -> 1.0 (the default: the fleet carries the peak after losing one instance), ``none`` -> 0.0, or a
    share 0..1 of the demand carried after that loss."""
    if isinstance(v, str):
        t = v.strip().lower().replace(" ", "")
        if t in ("n+1", "n1"):
            return 1.0
        if t in ("none", "n", "n+0", "0"):
            return 0.0
        try:
            return float(t)
        except ValueError:
            raise plan_error(f"must be n+1, none or a share of the demand 0..1, got {show_value(v)}",
                             accepted="n+1, none, 0..1") from None
    return v


Redundancy = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), BeforeValidator(_not_bool),
                       BeforeValidator(_redundancy)]
Horizon = Annotated[int, Field(ge=1, le=120), BeforeValidator(_not_bool)]
Month = Annotated[int, Field(ge=1, le=120), BeforeValidator(_not_bool)]

#: Accepted values of the keys with a closed set (the ``accepted`` of their errors).
ACCEPTED = {
    "task": ", ".join(TASKS), "precision": ", ".join(PRECISIONS), "objective": ", ".join(OBJECTIVES),
    "solver": ", ".join(SOLVERS), "pricing": ", ".join(PLANNED_PRICING), "zero_stage": "0, 1, 2, 3",
    "allow_spot": "true, false", "spot_only_ok": "true, false", "include_local_zones": "true, false",
    "allow_marketplace": "true, false", "allow_spot_training": "true, false", "mixed_replicas": "true, false", "redundancy": "n+1, none, 0..1",
    "placement": "region, provider, any", "spread": "zones", "region_group": "us, eu, europe, na, apac, latam, mea",
    "blocks": "24 (hours of the day), 168 (hours of the week) or another positive whole number",
}


# ------------------------------------------------------------------------------------------- the models
#: Replicas a serving workload keeps running by default (issue 26: two, spread over zones where the provider has
#: zones, so one instance or zone lost leaves the endpoint up).
DEFAULT_SERVE_REPLICAS = 2


class _Parts(BaseModel):
    """A model whose fields are grouped into parts (field metadata ``group``).

    Built directly (``PlanRequest(...)``, ``WorkloadItem(...)``), a bad field raises :class:`InputError` with one
    line naming the field and the accepted values — an unknown key names the closest known one — as a plan file
    and ``gpuopt.recommend(**keywords)`` do (``model_validate`` raises pydantic's ValidationError)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            errs = exc.errors(include_url=False)
            # an unknown key first: a misspelt key is why a required one looks missing
            err = next((e for e in errs if e["type"] == "extra_forbidden"), errs[0])
            loc, msg, accepted = validation_message(err, item=isinstance(self, WorkloadItem))
            raise InputError(dotted(loc, type(self).__name__), msg, accepted) from None

    # pydantic must not call this __init__ while it validates a nested model (it would lose the validation context:
    # the plan file's folder, by which measured/trace/demand_profile paths are checked): marked as its own (the flag
    # pydantic 2 reads to tell its BaseModel.__init__; tests/test_request.py fails if a pydantic release drops it)
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def part(self, group: str) -> dict[str, Any]:
        """The keys of one part (workload, demand, serving, training, purchase, placement, budget, solver;
        :data:`GROUPS`) and their values, e.g. ``request.part("budget")``."""
        if group not in set(GROUPS.values()):
            raise InputError("group", f"unknown part {group!r}", accepted=", ".join(sorted(set(GROUPS.values()))))
        return {k: getattr(self, k) for k in type(self).model_fields if GROUPS[k] == group}


class WorkloadItem(_Parts):
    """One workload of a plan (see the module docstring for units).

    Cross-field rules: ``model`` xor ``params``; a serve workload has exactly one demand (``tokens_per_second``
    flat, ``demand_profile`` a CSV, ``demand`` an inline list one per block) and may have
    ``value_per_million_tokens``; a train/finetune/lora workload needs ``tokens`` and may have ``value_usd`` and a
    ``deadline_hours``. ``min_replicas`` defaults to 2 for serve (issue 26: a production endpoint survives the
    loss of one instance; a serving fleet never drops to zero), 0 otherwise; ``redundancy`` to N+1 (1.0) for serve.
    Keys that do not apply to the task but that a ``recommend`` option may set over a file (``tokens``,
    ``deadline_hours``, ``zero_stage`` on serve; ``tokens_per_second``, ``concurrency`` on training; ``lora_rank``
    off lora) are kept and reported by ``ignored_fields``; keys only a file sets (demand profiles, values) are errors.
    """

    model_config = ConfigDict(extra="forbid")

    name: Name = _opt(group="workload", cli="--name", doc="unique label for reports")
    task: Task = _opt("serve", group="workload", cli="--task", doc="serve | train | finetune | lora")
    model: str | None = _opt(None, group="workload", cli="--model",
         doc="a known model, a Hugging Face repo, or a path to a config.json")
    params: PosFloat | None = _opt(None, group="workload", cli="--params", doc="parameter count (instead of model)")
    active_params: PosFloat | None = _opt(
        None, group="workload", doc="with params: a mixture of experts' parameters used per token (needs experts; "
                                    "optimizer.sizing.specs.moe_from_params)")
    experts: PosInt | None = _opt(None, group="workload",
                                  doc="with params: routed experts per layer of a mixture of experts (needs active_params)")
    precision: Precision | None = _opt(None, group="workload", cli="--precision",
         doc="serve: bf16 | fp16 | fp8 | int8 | int4 | fp4, a list the planner chooses from per GPU, or auto (bf16, "
             "fp8 where the GPU has FP8 tensor cores, fp16 where bf16 does not run); training: bf16 | fp16 | fp8 "
             "(Hopper, Ada, Blackwell)")
    context_tokens: PosInt | None = _opt(None, group="workload", cli="--context",
         doc="serve: the context window the engine runs with (vLLM max_model_len: one sequence of it must fit the "
             "KV cache; requests are input_tokens/output_tokens); training: sequence length")
    concurrency: PosInt | None = _opt(None, group="serving", cli="--concurrency",
         doc="serve: sequences decoded together per replica (default: the largest batch meeting the targets)")
    zero_stage: ZeroStage | None = _opt(None, group="training", cli="--zero-stage",
         doc="training: ZeRO stage 0..3 over the data-parallel GPUs (default: the framework's)")
    lora_rank: PosInt | None = _opt(None, group="training", cli="--lora-rank", doc="lora: rank of the adapters")
    tokens_per_second: PosFloat | None = _opt(None, group="demand", cli="--tokens-per-second",
         doc="serve: generated tokens/s, the same all month")
    request_rate: PosFloat | None = _opt(None, group="demand", cli="--request-rate",
         doc="serve: requests/s, the same all month (instead of tokens_per_second)")
    engine: Engine | None = _opt(None, group="serving", cli="--engine",
         doc="serve: vllm (V1, 0.8 and later; default) | vllm-v0 (before 0.8) | sglang | tensorrt-llm")
    input_tokens: PosInt | None = _opt(None, group="serving", cli="--input-tokens",
         doc="serve: mean prompt tokens per request (default 1024)")
    output_tokens: PosInt | None = _opt(None, group="serving", cli="--output-tokens",
         doc="serve: mean generated tokens per request (default 128)")
    scenario: Scenario | None = _opt(None, group="serving", cli="--scenario",
         doc="serve: chat (p99 TTFT <= 2 s, TPOT <= 50 ms; default) | interactive (450 / 40 ms) | server (MLPerf's "
             "2 s / 200 ms) | offline (batch: no latency target)")
    ttft_ms: PosFloat | None = _opt(None, group="serving", cli="--ttft-ms",
         doc="serve: p99 time-to-first-token target, ms (overrides the scenario's)")
    tpot_ms: PosFloat | None = _opt(None, group="serving", cli="--tpot-ms",
         doc="serve: p99 time-per-output-token target, ms (overrides the scenario's)")
    measured: str | None = _opt(None, group="serving", cli="--measured",
         doc="serve: CSV/JSON of your own benchmark results that corrects the model (in a plan file: relative to its folder)")
    prefix_cache_hit_rate: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False), BeforeValidator(_not_bool)] | None = \
        _opt(None, group="serving", cli="--prefix-cache-hit-rate",
             doc="serve: share 0..1 of input tokens served from the engine's prefix cache (vLLM automatic prefix "
                 "caching, SGLang RadixAttention): less prefill work (default 0)")
    speculative_tokens: Annotated[int, Field(ge=0, le=16), BeforeValidator(_not_bool)] | None = \
        _opt(None, group="serving", cli="--speculative-tokens",
             doc="serve: speculative decoding, draft tokens proposed per step (0..16; default 0: none); needs "
                 "acceptance_rate")
    acceptance_rate: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False), BeforeValidator(_not_bool)] | None = \
        _opt(None, group="serving", cli="--acceptance-rate",
             doc="serve: probability a draft token is accepted (your measurement or assumption), with "
                 "speculative_tokens")
    disaggregate: Annotated[Literal["off", "auto", "on"], BeforeValidator(_on_off)] | None = _opt(
        None, group="serving", cli="--disaggregate",
         doc="serve: prefill and decode on separate replicas (NVIDIA Dynamo, SGLang, vLLM): off (default), on, or "
             "auto (where it gives an offer more tokens/s); auto and on also plan the two pools as workloads of "
             "their own, possibly on different GPU types in one region, kept where cheaper (gpuopt/phase_mix.py)")
    serve_phase: Annotated[Literal["prefill", "decode"], BeforeValidator(_lower)] | None = _opt(
        None, group="serving",
        doc="serve: plan only this pool of a disaggregated deployment (prefill | decode; optimizer.sizing."
            "disaggregated.pool_sizing) -- e.g. the decode pool beside prefill capacity you run; the planner sets it "
            "when --disaggregate auto|on splits a workload into pools on different GPU types (gpuopt/phase_mix.py)")
    region: Annotated[str, BeforeValidator(_region)] | None = _opt(
        None, group="placement",
        doc="run this workload only in one provider's region, provider/region (e.g. aws/us-east-1); the planner "
            "sets it for the two pools of a disaggregated deployment, which exchange KV caches")
    mix_by_size: Annotated[Literal["off", "auto", "on"], BeforeValidator(_on_off)] | None = _opt(
        None, group="serving", cli="--mix-by-size",
        doc="serve with a trace: also plan one pool per prompt-length range (Mélange's idea, gpuopt/size_mix.py) and "
            "keep it where cheaper: auto (default with a trace), on (keep the split), off")
    trace: str | None = _opt(None, group="serving", cli="--trace",
         doc="serve: CSV of requests (input_tokens, output_tokens): their means are the lengths (in a plan file: "
             "relative to its folder)")
    demand_profile: str | None = _opt(None, group="demand", cli="--demand-profile",
         doc="serve: CSV of demand by hour/timestamp (in a plan file: relative to its folder)")
    demand: Annotated[list[NonNegFloat], Field(min_length=1)] | None = _opt(None, group="demand",
         doc="serve: tokens/s per block (24: hours of the day, 168: hours of the week)")
    tokens: PosFloat | None = _opt(None, group="demand", cli="--tokens", doc="training: tokens to process")
    deadline_hours: Deadline | None = _opt(None, group="demand", cli="--deadline-hours",
         doc="training: finish within this many hours of its start")
    framework: Framework | None = _opt(None, group="training", cli="--framework",
         doc="train/finetune: megatron (default for train) | fsdp (default for finetune) | deepspeed")
    optimizer: Optimizer | None = _opt(None, group="training", cli="--optimizer",
         doc="train/finetune: adam (default) | adam8bit | adafactor | sgd")
    offload: Offload | None = _opt(None, group="training", cli="--offload",
         doc="train/finetune: none (default) | optimizer (ZeRO-Offload to CPU) | params (ZeRO-3 only)")
    global_batch_tokens: PosFloat | None = _opt(None, group="training", cli="--global-batch-tokens",
         doc="train/finetune: tokens per optimizer step (default 4M, Llama 2's)")
    allow_spot: StrictBool = _opt(False, group="purchase", cli="--allow-spot/--no-spot",
         doc="may it run on interruptible spot capacity?")
    allow_marketplace: StrictBool = _opt(False, group="purchase", cli="--allow-marketplace",
         doc="serve: may it run on marketplace capacity (third-party hosts without a data-centre SLA, e.g. RunPod "
             "Community Cloud)? Training and batch jobs always may")
    allow_spot_training: StrictBool = _opt(False, group="purchase", cli="--allow-spot-training",
         doc="train/finetune: may a synchronous job whose window is longer than 72 h run on spot (with allow_spot)?")
    min_replicas: NonNegInt | None = _opt(None, group="serving", cli="--min-replicas",
         doc="replicas always running, on at least as many instances (serve default 2, in distinct zones where the "
             "provider has zones)")
    redundancy: Redundancy | None = _opt(None, group="serving", cli="--redundancy",
         doc="serve: n+1 (default: the peak is still carried after losing any one instance), none, or the share "
             "0..1 of the demand carried after that loss")
    mixed_replicas: StrictBool = _opt(False, group="serving", cli="--mixed-replicas",
         doc="serve: may replicas of different shapes (GPU, layout, precision) run side by side in one region? "
             "Default false: one replica shape per region, every replica at one speed behind the endpoint. With it, "
             "route requests in proportion to each replica's tokens/s (weighted round robin)")
    min_replica_share: Fraction01 = _opt(0.10, group="serving", cli="--min-replica-share",
         doc="serve with mixed_replicas: each replica shape used carries at least this share 0..1 of the "
             "demand in every block it runs in (default 0.10: no top-up replica for a sliver of the load)")
    spot_only_ok: StrictBool = _opt(False, group="purchase", cli="--spot-only-ok",
         doc="may spot be the only capacity behind min_replicas?")
    value_per_million_tokens: NonNegFloat | None = _opt(None, group="demand", cli="--value-per-million-tokens",
         doc="serve: USD per million generated tokens served (roi)")
    value_usd: NonNegFloat | None = _opt(None, group="demand", cli="--value-usd",
         doc="training: USD the finished job is worth (roi)")
    start: Month | None = _opt(None, group="workload", cli="--start-month",
         doc="month the workload starts (1 = the first month of the horizon)")
    end: Month | None = _opt(None, group="workload", cli="--end-month",
         doc="serve: last month it runs (inclusive; default the horizon's end)")
    months: Month | None = _opt(None, group="workload", cli="--months",
         doc="serve: number of months it runs from start")

    @field_validator("model", mode="before")
    @classmethod
    def _model_is_text(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise plan_error(f"must be a model name, a Hugging Face repo or a path to a config.json, got {show_value(v)} "
                        "(for a parameter count use params)")
        return v.strip() if isinstance(v, str) else v

    @field_validator("demand_profile", "measured", "trace")
    @classmethod
    def _profile_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return _file_next_to_plan(v, info)

    @field_validator("min_replicas")
    @classmethod
    def _replicas_bounded(cls, v: int | None) -> int | None:
        if v is not None and v > MAX_REPLICAS:  # after pydantic's checks: 1e5 in YAML is 100000 here
            raise plan_error(replicas_message(v))
        return v

    def output_length(self) -> int:
        """Mean output tokens per request (optimizer.sizing.serve_lengths' rule), to turn a request rate into
        tokens/s."""
        from optimizer.sizing import output_length

        return output_length(self.output_tokens, self.input_tokens, self.context_tokens)

    @model_validator(mode="after")
    def _cross_checks(self) -> "WorkloadItem":
        if self.model and self.params is not None:
            raise plan_error("give either model or params, not both", loc=("params",))
        if not self.model and self.params is None:
            raise plan_error("a workload needs a model (a known name, a Hugging Face repo or a path to a config.json) "
                        "or params (a parameter count)", loc=("model",))
        given = [k for k in DEMAND_KEYS if getattr(self, k) is not None]
        if self.task == "serve":
            if not given:
                raise plan_error("a serve workload needs a demand: tokens_per_second or request_rate (flat), "
                            "demand_profile (a CSV) or demand (a list, one value per block)", loc=("tokens_per_second",))
            if len(given) > 1:
                raise plan_error(f"give one demand, not both {given[0]} and {given[1]}",
                            accepted=", ".join(DEMAND_KEYS), loc=(given[1],))
            if self.value_usd is not None:
                raise plan_error("value_usd is the value of a finished training job; a serve workload's value is "
                            "value_per_million_tokens", loc=("value_usd",))
        else:
            if self.tokens is None:
                raise plan_error(f"a {self.task} workload needs tokens (the tokens to process, e.g. 2.0e+10)",
                            loc=("tokens",))
            for k in ("demand_profile", "demand"):
                if getattr(self, k) is not None:
                    raise plan_error(f"{k} is a serving demand; a {self.task} workload has tokens (and deadline_hours)",
                                loc=(k,))
            if self.value_per_million_tokens is not None:
                raise plan_error(f"value_per_million_tokens is for serve workloads; a {self.task} workload's value is "
                            "value_usd (the finished job)", loc=("value_per_million_tokens",))
        if self.trace is not None and (self.input_tokens is not None or self.output_tokens is not None):
            raise plan_error("give the request lengths as trace or as input_tokens/output_tokens, not both",
                        loc=("trace",))
        if self.end is not None and self.months is not None:
            raise plan_error("give either end or months, not both", loc=("months",))
        if self.task != "serve":
            for k in ("end", "months"):
                if getattr(self, k) is not None:
                    raise plan_error(f"{k} is for serving workloads; a {self.task} job runs from start until it is done "
                                "(deadline_hours)", loc=(k,))
        # (a document echoing the request carries the default 0.10 back: only another value is an error)
        if "min_replica_share" in self.model_fields_set and not self.mixed_replicas and \
                self.min_replica_share != type(self).model_fields["min_replica_share"].default:
            raise plan_error("min_replica_share is the least share of each replica shape of a mixed fleet: give it "
                             "with mixed_replicas: true (--mixed-replicas); one replica shape per region is the default",
                             loc=("min_replica_share",))
        if self.end is not None and self.end < (self.start or 1):
            raise plan_error(f"end (month {self.end}) is before start (month {self.start or 1})", loc=("end",))
        if self.precision == "auto":
            self.precision = AUTO_PRECISIONS + "".join(f",{p}" for p in _published_quantized(self.model)) \
                if self.task == "serve" else "bf16"
        if self.min_replicas is None:
            self.min_replicas = DEFAULT_SERVE_REPLICAS if self.task == "serve" else 0
        if self.redundancy is None:
            self.redundancy = 1.0 if self.task == "serve" else 0.0
        return self

    def region_key(self) -> tuple[str, str] | None:
        """``region`` as (provider, region), or None."""
        return tuple(self.region.split("/", 1)) if self.region else None  # type: ignore[return-value]

    def month_window(self) -> tuple[int, int | None]:
        """(start, end) as 0-based months, end exclusive (None: the horizon's end)."""
        start = (self.start or 1) - 1
        if self.months is not None:
            return start, start + self.months
        if self.end is not None:
            return start, self.end
        return start, None

    @property
    def training(self) -> bool:
        return self.task in TRAINING_TASKS

    def ignored_fields(self) -> list[str]:
        """Keys given that do not apply to the task (for the plan's notes)."""
        if self.task == "serve":
            unused = ("tokens", "deadline_hours", "zero_stage", "lora_rank", "framework", "optimizer", "offload",
                      "global_batch_tokens")
        else:
            unused = ("tokens_per_second", "request_rate", "concurrency", "engine", "input_tokens", "output_tokens",
                      "scenario", "ttft_ms", "tpot_ms", "measured", "trace", "prefix_cache_hit_rate",
                      "speculative_tokens", "acceptance_rate", "disaggregate", "mix_by_size", "serve_phase") \
                + (("lora_rank",) if self.task != "lora" else ())
            if self.task == "lora":
                unused += ("framework", "optimizer", "offload", "global_batch_tokens")
        return [k for k in unused if getattr(self, k) is not None]


class PlanRequest(_Parts):
    """A plan: workloads under one budget and one set of limits (see the module docstring).

    ``budget`` None means no budget limit; ``pricing`` empty means every pricing model but spot unless some workload
    allows spot; ``gpus`` empty means every GPU model but ``exclude_gpus``; ``blocks`` None bins each demand profile
    as it comes (see optimizer.planning.demand.load_profile); ``spot_capacity_per_offer``: instances of one spot offer the plan
    may count on; ``max_instances``: at most this many instances of any one offer (a quota).
    """

    model_config = ConfigDict(extra="forbid")

    budget: PosFloat | None = _opt(None, group="budget", cli="--budget",
         doc="USD: the most the plan may spend in any one month (hourly + recurring + upfronts paid that month)")
    budget_total: PosFloat | None = _opt(None, group="budget", cli="--budget-total",
         doc="USD: the most the plan may cost over the whole horizon")
    max_upfront: NonNegFloat | None = _opt(None, group="budget", cli="--max-upfront",
         doc="USD: the most paid upfront for commitments")
    max_commitment: NonNegFloat | None = _opt(None, group="budget", cli="--max-commitment",
         doc="USD: the most owed over the terms of the commitments bought")
    horizon_months: Horizon | None = _opt(None, group="purchase", cli="--horizon",
         doc="months the capacity is needed (default 12 with serving; a job's span for training only)")
    schedule_margin: Fraction01 = _opt(0.15, group="purchase", cli="--schedule-margin",
         doc="0..1: capacity blocks bought for a training job hold this share more hours than the estimate (default "
             "0.15: an estimate 10 percent optimistic still finishes inside the prepaid window)")
    leftover_value: Fraction01 = _opt(0.0, group="purchase", cli="--leftover-value",
         doc="0..1: value of commitment months that outlive the horizon (default 0)")
    placement: Placement = _opt("region", group="placement", cli="--placement",
         doc="region (each service in one region) | provider | any")
    region_group: RegionGroupList = _opt(default_factory=list, group="placement", cli="--region-group",
         doc="data residency: us, eu, europe, na, apac, latam, mea")
    spread: Spread | None = _opt(None, group="placement", cli="--spread",
         doc="zones: min_replicas on instances in distinct zones where the data has zones")
    include_local_zones: StrictBool = _opt(False, group="placement", cli="--include-local-zones",
         doc="also plan on AWS Local Zones and Wavelength Zones")
    objective: Objective = _opt("cost", group="solver", cli="--objective",
         doc="cost (cheapest plan that meets every demand) | roi ((value - cost) / cost)")
    providers: NameList = _opt(default_factory=list, group="placement", cli="--provider",
         doc="aws, azure, gcp, lambda ... (empty: all)")
    regions: NameList = _opt(default_factory=list, group="placement", cli="--region",
         doc="provider region codes, e.g. us-east-1, eastus (empty: all)")
    gpus: NameList = _opt(default_factory=list, group="placement", cli="--gpu",
         doc="GPU models allowed, e.g. A100-80GB, H100-80GB, L4 (empty: all)")
    exclude_gpus: NameList = _opt(default_factory=list, group="placement", cli="--exclude-gpu",
         doc="GPU models never used")
    pricing: PricingList = _opt(default_factory=list, group="purchase", cli="--pricing",
         doc="on_demand, spot, reserved_1y, reserved_3y, capacity_block, flex_start, savings_plan_1y, "
             "savings_plan_3y (empty: all; spot only for workloads that allow it; capacity blocks for services "
             "only when named)")
    solver: Solver = _opt("cbc", group="solver", cli="--solver", doc="cbc (bundled) | highs")
    time_limit_s: PosFloat = _opt(60.0, group="solver", cli="--time-limit", doc="solver time limit, seconds")
    spot_capacity_per_offer: NonNegInt = _opt(DEFAULT_SPOT_CAPACITY, group="purchase", cli="--spot-capacity",
         doc="instances of one spot offer the plan may count on")
    spot_capacity_by_gpu: SpotCapsByGpu = _opt(default_factory=dict, group="purchase", cli="--spot-capacity-gpu",
         doc="spot caps per GPU class, GPU=N (repeat; plan file: a mapping), e.g. H100-80GB=4: instances of one spot "
             "instance type of that GPU per region (unset: --spot-capacity); no public source gives spot capacity "
             "per GPU class, so none is assumed")
    owned: str | None = _opt(None, group="purchase", cli="--owned",
         doc="CSV/YAML of the commitments you already own (provider, region, instance_type, pricing, count, end, "
             "commitment_discount_id; `gpuopt review --owned-out` writes it from a billing export): counted as paid, "
             "the plan buys only what is missing (in a plan file: relative to its folder)")
    quota: str | None = _opt(None, group="purchase", cli="--quota",
         doc="CSV/YAML of your quotas (provider, region, family, limit, unit vcpus|gpus, used), as AWS Service "
             "Quotas, Azure usages or GCP quotas list them: the plan never exceeds them (in a plan file: relative "
             "to its folder)")
    max_instances: PosInt | None = _opt(None, group="purchase", cli="--max-instances",
         doc="at most this many instances of any one offer (a quota)")
    blocks: PosInt | None = _opt(None, group="solver", cli="--blocks",
         doc="bin demand profiles into 24 (hour of day), 168 (hour of week) or N blocks; unset: as the profile "
             "comes")
    prices_on: str | None = _opt(None, group="purchase", cli="--prices-on",
         doc="plan with the prices in effect on this date (YYYY-MM-DD)")
    catalog: str | None = _opt(None, group="purchase", cli="--catalog",
         doc="your own offers CSV instead of the shipped prices (in a plan file: relative to its folder)")
    workloads: list[WorkloadItem] = _opt(min_length=1, group="workloads", doc="one entry per workload")

    _base_dir: Path | None = PrivateAttr(default=None)
    _origin: str = PrivateAttr(default="command-line options")
    _single: bool = PrivateAttr(default=False)
    _profiles: dict | None = PrivateAttr(default=None)
    _lines: dict | None = PrivateAttr(default=None)

    @field_validator("prices_on", mode="before")
    @classmethod
    def _iso_date(cls, v: Any) -> Any:
        if isinstance(v, _dt.datetime):  # YAML reads 2026-10-15T00:00:00 as a time: named here, key and line
            raise plan_error(f"not a date (YYYY-MM-DD): {v.isoformat()!r} is a time")
        if isinstance(v, _dt.date):
            return v.isoformat()
        if v is not None:  # a quoted date ('2026-02-30') reaches here as text: named as PyYAML's dates are
            from gpuopt.kernel.inputs import date_error

            why = date_error(str(v), future=True)
            if why:
                raise plan_error(why)
            return str(v)
        return v

    @field_validator("workloads", mode="before")
    @classmethod
    def _a_list(cls, v: Any) -> Any:
        if isinstance(v, (Mapping, BaseModel, str)):  # pydantic would iterate a model's fields or a dict's keys
            raise plan_error(f"must be a list of workloads, got {type(v).__name__}")
        if isinstance(v, (list, tuple)) and len(v) > MAX_WORKLOADS:
            raise plan_error(f"has {len(v):,} workloads, above the limit of {MAX_WORKLOADS} per plan (measured: 200 "
                             f"plan in ~1 minute and 0.5 GB, 500 in ~3 minutes and 1 GB; split the file by team or "
                             f"region)")
        return v

    @field_validator("blocks")
    @classmethod
    def _blocks_bounded(cls, v: int | None) -> int | None:
        if v is not None and v > MAX_DEMAND_BLOCKS:
            raise plan_error(blocks_message(v, "blocks"))
        return v

    @field_validator("catalog", "quota", "owned")
    @classmethod
    def _catalog_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return _file_next_to_plan(v, info)

    @model_validator(mode="after")
    def _plan_checks(self) -> "PlanRequest":
        seen: dict[str, int] = {}
        for i, w in enumerate(self.workloads):
            if w.name in seen:
                raise plan_error(f"duplicate workload name {w.name!r} (also workloads[{seen[w.name]}].name): "
                            "names must be unique", loc=("workloads", i, "name"))
            seen[w.name] = i
        both = sorted(set(self.gpus) & set(self.exclude_gpus))
        if both:
            raise plan_error(f"{both[0]} is both allowed (gpus) and excluded (exclude_gpus)", loc=("exclude_gpus",))
        if "spot" in self.pricing and not any(w.allow_spot for w in self.workloads):
            raise plan_error("spot is allowed but no workload has allow_spot: true (it must tolerate interruptions)",
                        accepted="on_demand, reserved_1y, reserved_3y; or set allow_spot on a workload",
                        loc=("pricing",))
        for i, w in enumerate(self.workloads):  # a long list is planned only binned (blocks), never as it is
            if w.demand is not None and len(w.demand) > MAX_DEMAND_BLOCKS and self.blocks is None:
                raise plan_error(blocks_message(len(w.demand), "values"), loc=("workloads", i, "demand"))
        if self.objective == "roi" and not any(
                w.value_per_million_tokens is not None or w.value_usd is not None for w in self.workloads):
            raise plan_error("roi needs a value: value_per_million_tokens (serve) or value_usd "
                        "(train/finetune/lora) on at least one workload", accepted=", ".join(OBJECTIVES),
                        loc=("objective",))
        return self

    # --------------------------------------------------------------------- what the planner reads
    @property
    def origin(self) -> str:
        """Where the plan came from: the file's path, or "command-line options"."""
        return self._origin

    @property
    def base_dir(self) -> Path | None:
        """The folder relative paths of the file are relative to (None for a plan from options: the current one)."""
        return self._base_dir

    def resolve_path(self, value: str) -> Path:
        """A path of the file (demand_profile, catalog) as a Path: relative ones against the plan's folder."""
        p = Path(value).expanduser()
        if p.is_absolute() or self._base_dir is None:
            return p
        return self._base_dir / p

    def model_ref(self, item: WorkloadItem) -> str | None:
        """The model of ``item`` as ``optimizer.specs.load_model`` takes it: a relative path to a local config.json
        (or a folder holding one) that exists next to the plan file becomes that path; anything else as written."""
        if item.model is None or self._base_dir is None or Path(item.model).is_absolute():
            return item.model
        local = self._base_dir / item.model
        return str(local) if local.exists() else item.model

    def workload(self, name: str) -> WorkloadItem:
        for w in self.workloads:
            if w.name == name:
                return w
        raise InputError("workload", f"no workload named {name!r}", accepted=", ".join(w.name for w in self.workloads))

    @property
    def serving(self) -> list[WorkloadItem]:
        return [w for w in self.workloads if w.task == "serve"]

    @property
    def training(self) -> list[WorkloadItem]:
        return [w for w in self.workloads if w.task in TRAINING_TASKS]

    def where(self, key: str) -> str:
        """`` (file, line N)`` of a top-level key of a plan file (`` (file)`` without its line; "" for a plan
        made from options), to append to a message about that key; `` (the gpus= argument)`` for a key given as an
        argument (gpuopt.plan_spec.mark_given), not read from the file."""
        line = (self._lines or {}).get((key,))
        if isinstance(line, str):
            return f" ({line})"
        if not self._origin or self._origin == "command-line options":
            return ""
        return f" ({self._origin}, line {line})" if line is not None else f" ({self._origin})"

    def field_path(self, index: int, key: str) -> str:
        """The dotted path of a workload's key as errors name it (``workloads[1].demand``; ``demand`` for a
        single-workload file)."""
        return key if self._single else f"workloads[{index}].{key}"

    def demand_profiles(self) -> dict[str, "DemandProfile"]:
        """Serving workload name -> its DemandProfile (flat, inline or CSV, binned by ``blocks``), read once.

        Raises InputError naming the workload's key (``workloads[0].demand_profile``) for a bad profile."""
        if self._profiles is None:
            from optimizer.planning.demand import flat_profile, inline_profile, load_profile

            out = {}
            for i, w in enumerate(self.workloads):
                if w.task != "serve":
                    continue
                try:
                    if w.demand_profile is not None:
                        out[w.name] = load_profile(self.resolve_path(w.demand_profile), blocks=self.blocks)
                    elif w.demand is not None:
                        out[w.name] = inline_profile(w.demand, blocks=self.blocks)
                    elif w.request_rate is not None:
                        if w.trace is not None:
                            from optimizer.sizing.serving import load_trace

                            per = load_trace(str(self.resolve_path(w.trace))).mean_output
                        else:
                            per = w.output_length()
                        out[w.name] = flat_profile(w.request_rate * per)
                    else:
                        out[w.name] = flat_profile(w.tokens_per_second)
                except InputError as exc:
                    key = exc.field if exc.field in ("demand_profile", "demand", "trace") else \
                        ("demand_profile" if w.demand_profile is not None else "demand")
                    if exc.field == "blocks":
                        raise InputError("blocks", f"{_strip_field(exc)} (for workload {w.name!r})",
                                         exc.accepted) from None
                    raise InputError(self.field_path(i, key), _strip_field(exc), exc.accepted) from None
            self._profiles = out
        return dict(self._profiles)


def _strip_field(exc: InputError) -> str:
    text = str(exc)
    if text.startswith(f"{exc.field}: "):
        text = text[len(exc.field) + 2:]
    if exc.accepted and text.endswith(f" (accepted: {exc.accepted})"):
        text = text[: -len(f" (accepted: {exc.accepted})")]
    return text


PLAN_KEYS = tuple(k for k in PlanRequest.model_fields if k != "workloads")
ITEM_KEYS = tuple(WorkloadItem.model_fields)
#: Every field of the request (plan keys, then workload keys) -> its pydantic FieldInfo.
FIELDS = {**PlanRequest.model_fields, **WorkloadItem.model_fields}


def _meta(key: str) -> dict[str, Any]:
    extra = FIELDS[key].json_schema_extra
    return extra if isinstance(extra, dict) else {}


#: The `gpuopt recommend` flag of every key that has one (from the fields' metadata).
CLI_OPTIONS = {k: _meta(k)["cli"] for k in PLAN_KEYS + ITEM_KEYS if "cli" in _meta(k)}
#: Keys set only in a plan file (or a PlanRequest), with no `gpuopt recommend` flag, and why.
FILE_ONLY = {
    "workloads": "several workloads need a file: --workload plan.yaml",
    "demand": "a list of tokens/s, one per block: too long for a flag (--demand-profile reads a CSV)",
    "serve_phase": "one pool of a disaggregated deployment, beside the workloads of the others: a plan file's key "
                   "(--disaggregate auto|on plans both pools)",
    "region": "one workload's region among several: a plan file's key (one workload: --provider and --region)",
    "active_params": "a mixture of experts given by its counts: a plan file's key (gpuopt estimate --active-params)",
    "experts": "a mixture of experts given by its counts: a plan file's key (gpuopt estimate --experts)",
}
#: One line of documentation per key (the field's description), written by plan_to_yaml after the key.
KEY_DOCS = {k: FIELDS[k].description or "" for k in ("workloads",) + PLAN_KEYS + ITEM_KEYS}
#: The part of the request each key belongs to (workload, demand, serving, training, purchase, placement, budget,
#: solver; workloads for the list itself).
GROUPS = {k: _meta(k)["group"] for k in FIELDS}
#: Old keywords of ``gpuopt.api.recommend`` -> the key they now are (deprecated: a DeprecationWarning names it).
DEPRECATED_KEYWORDS = {
    "horizon": "horizon_months", "ttft_slo_ms": "ttft_ms", "tpot_slo_ms": "tpot_ms", "start_month": "start",
    "end_month": "end", "spot_capacity": "spot_capacity_per_offer", "max_instances_per_offer": "max_instances",
    "workload_file": "workload",
}
#: Keywords of ``gpuopt.recommend`` that are not plan keys: the plan file the keywords are laid over (as
#: ``--workload``), the folder relative paths are relative to, and whether to explain the plan.
CALL_KEYWORDS = ("workload", "cwd", "explain")
#: Keys holding a path (a pathlib.Path is accepted and kept as text).
PATH_KEYS = ("catalog", "demand_profile", "measured", "trace")


def cli_help(key: str) -> str:
    """The help of a key's `gpuopt recommend` option: its description, then its default (from the field)."""
    f = FIELDS[key]
    text = (f.description or "").strip()
    text = text[:1].upper() + text[1:]
    default = f.get_default(call_default_factory=True)
    if default not in (None, [], False, PydanticUndefined) and "default" not in text:
        text += f" (default {default:g})" if isinstance(default, float) else f" (default {default})"
    text = text if text.endswith(".") else text + "."
    return text + " Repeat the option for several." if "list[" in str(f.annotation) else text


def _likeness(a: str, b: str) -> float:
    """difflib's similarity of two keys, 0..1."""
    return difflib.SequenceMatcher(None, a, b).ratio() if b else 0.0


def closest_key(name: str, known: tuple[str, ...] | None = None) -> str | None:
    """The known key nearest to ``name`` (difflib), or None."""
    known = known if known is not None else PLAN_KEYS + ITEM_KEYS + CALL_KEYWORDS + tuple(DEPRECATED_KEYWORDS)
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if not found:
        found = [k for k in known if name and (name in k or k in name)][:1]
    if found:
        return DEPRECATED_KEYWORDS.get(found[0], found[0])
    return None


def request_keywords(keywords: Mapping[str, Any], *, stacklevel: int = 3) -> dict[str, Any]:
    """Keywords of ``gpuopt.recommend`` under their canonical names (the request's keys and :data:`CALL_KEYWORDS`).

    A deprecated name (:data:`DEPRECATED_KEYWORDS`) is renamed with a DeprecationWarning naming the new one; a
    name given twice (old and new) and an unknown name raise InputError, the latter naming the closest known key.
    Paths become text and any iterable of names a list; the values are validated later, by the model."""
    out: dict[str, Any] = {}
    for k, v in keywords.items():
        key = k
        if k in DEPRECATED_KEYWORDS:
            key = DEPRECATED_KEYWORDS[k]
            warnings.warn(f"gpuopt.recommend({k}=...) is deprecated: use {key}=..."
                          + (" (as --workload)" if key == "workload" else " (the plan-file key)"),
                          DeprecationWarning, stacklevel=stacklevel)
            if key in keywords:
                raise InputError(key, f"given twice, as {key} and as {k} (its deprecated name)")
        elif k not in FIELDS or k == "workloads":
            if k in CALL_KEYWORDS:
                out[k] = v
                continue
            if k == "workloads":  # a list of workloads is a request, not a keyword (``workload`` is a file)
                raise InputError(k, "not a keyword: give several workloads as gpuopt.recommend(PlanRequest("
                                    "workloads=[WorkloadItem(...), ...])) or in a plan file (workload=PATH)")
            near = closest_key(k)
            raise InputError(k, "unknown option" + (f"; did you mean {near}?" if near else ""),
                             accepted=", ".join(PLAN_KEYS + ITEM_KEYS + CALL_KEYWORDS))
        if isinstance(v, Path) or (key in PATH_KEYS + ("workload", "cwd") and v is not None
                                   and hasattr(v, "__fspath__")):
            v = str(v)
        elif key in FIELDS and isinstance(v, (tuple, set, frozenset)) or (
                key in FIELDS and v is not None and not isinstance(v, (str, bytes, list, dict, int, float, bool))
                and hasattr(v, "__iter__")):
            v = list(v)
        out[key] = v
    return out


def validation_message(err: dict, single: bool = False, item: bool = False) -> tuple[tuple, str, str | None]:
    """(location, one-line message, accepted values) of one pydantic error (``ValidationError.errors()`` item) on a
    plan or workload; ``single``: the plan is a single-workload file (its workload and plan keys side by side);
    ``item``: the error is on a WorkloadItem built alone (its keys are the workload keys)."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))  # drop union/function tags
    typ, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    key = next((p for p in reversed(loc) if isinstance(p, str)), "")
    accepted = ACCEPTED.get(key)
    if typ == "plan":
        return loc + tuple(ctx.get("loc") or ()), ctx["message"], ctx.get("accepted") or (
            ACCEPTED.get(ctx["loc"][-1]) if ctx.get("loc") and isinstance(ctx["loc"][-1], str) else accepted)
    if typ == "extra_forbidden":
        in_item = item or (len(loc) >= 3 and loc[0] == "workloads")
        if single:  # a single-workload file holds workload and plan keys side by side
            keys = ITEM_KEYS + PLAN_KEYS
        else:
            keys = ITEM_KEYS if in_item else PLAN_KEYS + ("workloads",)
        msg = "unknown key"
        near_item = None if in_item or single or key in ITEM_KEYS else closest_key(key, ITEM_KEYS)
        if not in_item and not single and key in ITEM_KEYS:
            msg += " at the top of a multi-workload plan: workload keys go under workloads:"
        elif near_item and _likeness(key, near_item) > _likeness(key, closest_key(key, keys) or ""):
            msg += f"; did you mean the workload key {near_item} (under workloads:)?"
        else:  # the nearest key of the place it is in, an old name mapped to its key (horizon -> horizon_months)
            near = DEPRECATED_KEYWORDS.get(key) or closest_key(key, keys)
            if near and near in keys and near != key:
                msg += f"; did you mean {near}?"
        return loc, msg, ", ".join(keys)
    if typ == "missing":
        if key == "name":
            return loc, "every workload needs a name (unique in the plan)", None
        return loc, "is required", None
    if typ == "literal_error":
        return loc, f"unknown value {show_value(value)}", accepted or ctx.get("expected")
    texts = {
        "greater_than": lambda: f"must be greater than {ctx.get('gt'):g}, got {show_value(value)}",
        "greater_than_equal": lambda: f"must be at least {ctx.get('ge'):g}, got {show_value(value)}",
        "less_than_equal": lambda: f"must be at most {ctx.get('le'):g}, got {show_value(value)}",
        "finite_number": lambda: f"must be a finite number, got {show_value(value)}",
        "float_parsing": lambda: f"must be a number, got {show_value(value)}",
        "float_type": lambda: f"must be a number, got {show_value(value)}",
        "int_parsing": lambda: f"must be a whole number, got {show_value(value)}",
        "int_type": lambda: f"must be a whole number, got {show_value(value)}",
        "int_from_float": lambda: f"must be a whole number, got {show_value(value)}",
        "bool_type": lambda: f"must be true or false, got {show_value(value)}",
        "bool_parsing": lambda: f"must be true or false, got {show_value(value)}",
        "string_type": lambda: f"must be text, got {show_value(value)}",
        "string_too_short": lambda: "must not be empty",
        "list_type": lambda: f"must be a list, got {show_value(value)}",
        "too_short": lambda: ("needs at least one workload" if key == "workloads" else "must not be empty"
                              if isinstance(value, str) else f"needs at least {ctx.get('min_length')} value(s)"),
        "model_type": lambda: f"must be a mapping of keys to values, got {type(value).__name__}",
        "dict_type": lambda: f"must be a mapping of keys to values, got {type(value).__name__}",
    }
    make = texts.get(typ)
    return loc, (make() if make else err["msg"]), accepted
