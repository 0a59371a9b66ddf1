"""The JSON documents gpuopt writes, as pydantic models: the one source of the published JSON Schemas.

Every JSON document gpuopt prints (``--format json``) or returns as ``.to_dict()`` starts with two keys:

- ``schema_version`` (integer): the version of that document's interface, :data:`VERSIONS`;
- ``kind`` (string): which document it is -- ``recommend``, ``estimate``, ``review``, ``prices-list``,
  ``prices-status``, ``prices-diff``, ``prices-refresh``, ``prices-import``, ``plan-diff``, ``models``,
  ``quotas``, ``spot-refresh``, ``spot-scores``, ``report-data`` (the JSON beside a plan report) or ``error``.

The models below describe each kind. ``docs/schemas/<kind>.schema.json`` are generated from them
(``python -m gpuopt.schemas --write docs/schemas``; the test suite fails when the files and the models part) and are
the contract a pipeline can validate against. Versioning (docs/json-schema.md "Versioning"): a kind's
``schema_version`` is raised by a change that can break a consumer (a key removed or renamed, a type or unit changed);
new keys are not a break, so every object allows keys it does not list (``additionalProperties`` true) and
consumers must ignore keys they do not know. The test suite checks the other way too: every key gpuopt writes is
declared here (:func:`undeclared_keys`).

Errors: with ``--format json`` a failing command writes one ``error`` document on standard error
(:class:`ErrorDoc`) and exits with :data:`EXIT_CODES` ``1`` (bad input, no plan), ``2`` (usage), ``3`` (a price
source or the network failed), ``4`` (``gpuopt diff --fail-above``: the cost gate) or ``5`` (``recommend`` not
solved within the time limit: no plan found, none proven impossible).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from gpuopt.kernel.documents import EXIT_CODES, VERSIONS, DictResult, envelope, frame  # noqa: F401 (re-exported)
from gpuopt.request import PlanRequest
from optimizer import review as review_rows
from optimizer.planning.answer import FleetLine
from pricing_cache.history import PriceDiff
from pricing_cache.refresh import ProviderOutcome

#: Version of each document's interface. recommend was versioned first (2 since the planning model of issue 5);
#: the other kinds got their first version with issue 12.
SCHEMA_BASE_URL = "https://github.com/gpuopt/gpuopt/blob/main/docs/schemas/"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class _Open(BaseModel):
    """An object that may gain keys (consumers ignore keys they do not know)."""

    model_config = ConfigDict(extra="allow")


Usd = Annotated[float, Field(ge=0.0, description="US dollars, rounded to the cent.")]
Pricing = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block", "flex_start",
                  "savings_plan_1y", "savings_plan_3y"]
Payment = Literal["", "no_upfront", "partial_upfront", "all_upfront"]
Status = Literal["optimal", "time_limit", "infeasible", "not_solved"]
Date = Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")]


def from_result(cls: type, refined: type[BaseModel], *, envelope: bool = False) -> type[BaseModel]:
    """The published model of a result dataclass ``cls`` (whose ``asdict`` a document writes), built from its fields:
    every field of the dataclass is in the schema, so a field added to it is published without restating it here
    (typed by its annotation, with the dataclass's default), and a field it loses cannot stay (TypeError).
    ``refined`` gives some of them narrower published types, bounds, descriptions and their order (its fields
    first, the others after them in the dataclass's order); ``envelope``: the document's ``schema_version`` and
    ``kind`` (gpuopt.kernel.documents.envelope) are its only keys the dataclass does not have. The model is named
    as ``refined`` without its leading underscore."""
    import dataclasses
    import typing

    fields = {f.name: f for f in dataclasses.fields(cls)}
    stray = [k for k in refined.model_fields if k not in fields and not (envelope and k in ("schema_version", "kind"))]
    if stray:
        raise TypeError(f"{refined.__name__} declares {', '.join(stray)}: not fields of {cls.__qualname__}")
    hints = typing.get_type_hints(cls)
    more: dict[str, Any] = {}
    for name, f in fields.items():
        if name in refined.model_fields:
            continue
        if f.default is not dataclasses.MISSING:
            more[name] = (hints[name], f.default)
        elif f.default_factory is not dataclasses.MISSING:  # a value, so the schema shows it (pydantic copies it)
            more[name] = (hints[name], f.default_factory())
        else:
            more[name] = (hints[name], ...)
    return create_model(refined.__name__.lstrip("_"), __base__=refined, __doc__=refined.__doc__,
                        __module__=__name__, **more)


# =========================================================================================== recommend
class GpusThatFit(_Open):
    gpu_model: str
    gpus_per_replica: float


class Reason(_Open):
    """null when feasible; why there is no plan otherwise."""

    kind: str = Field(description="budget, deadline, capacity, pricing, solver, time_limit, no_offers, no_gpu_fits "
                                  "(new kinds may be added)")
    message: str
    workload: Optional[str] = None
    budget_needed_usd: Optional[float] = None
    monthly_needed_usd: Optional[float] = None
    total_needed_usd: Optional[float] = None
    upfront_needed_usd: Optional[float] = None
    commitment_needed_usd: Optional[float] = None
    deadline_needed_hours: Optional[int] = None
    memory_gib_per_replica: Optional[float] = None
    gpus_that_fit: Optional[list[GpusThatFit]] = None
    honouring_plan: Optional[dict] = Field(default=None, description=(
        "with --spread zones or --region-group and a provider, region or GPU filter: the cheapest plan that honours "
        "the spread and residency without those filters (total_usd, status, dropped, where, lines)"))


class _Line(_Open):
    """One purchase of the plan: ``count`` instances of one offer over months ``start_month``..``end_month``."""

    provider: Annotated[str, Field(min_length=1)]
    region: Annotated[str, Field(min_length=1)]
    zone: str
    instance_type: Annotated[str, Field(min_length=1)]
    pricing: Pricing
    payment: Payment
    count: Annotated[int, Field(ge=1)]
    hours: Annotated[float, Field(ge=0.0, le=4368.0, description="Hours a month each instance runs.")]
    usd_per_hour: Annotated[float, Field(ge=0.0)]
    monthly_usd: Usd
    total_usd: Usd
    upfront_usd: Usd
    commitment_usd: Usd
    term_end: Annotated[str, Field(pattern=r"^([0-9]{4}-[0-9]{2}|month [0-9]+)?$")]
    start_month: Annotated[int, Field(ge=1)]
    end_month: Annotated[int, Field(ge=1)]
    gpu_model: str
    gpu_count: Annotated[float, Field(ge=0.0)]
    gpu_memory_gib: Annotated[float, Field(ge=0.0)]
    replicas: Annotated[int, Field(ge=0)]
    gpus_per_replica: Annotated[float, Field(ge=0.0)]
    tensor_parallel: Annotated[int, Field(ge=1)]
    pipeline_parallel: Annotated[int, Field(ge=1)]
    precision: Optional[Literal["", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]] = Field(
        None, description="Serving lines: the replica's precision; empty otherwise.")
    batch: Optional[Annotated[int, Field(ge=0)]] = Field(None, description="Serving lines: sequences per replica.")
    ttft_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    tpot_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    training_layout: Optional[str] = Field(None, description="Training lines: the job's parallel layout.")
    mfu: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    workloads: list[str]
    utilization: Optional[Annotated[float, Field(ge=0.0, le=1.0001)]]
    break_even_utilization: Optional[Annotated[float, Field(ge=0.0)]]
    on_demand_usd_per_hour: Optional[Annotated[float, Field(ge=0.0)]] = None
    source: str
    as_of: str
    estimated: bool
    fabric: str
    offering_class: Optional[Literal["", "standard", "convertible", "compute", "ec2_instance"]] = None
    days: Optional[Annotated[int, Field(ge=0, le=182)]] = None
    covered_by: Optional[str] = None
    scope: Optional[str] = None
    tier: Optional[Literal["hyperscaler", "neocloud", "marketplace", ""]] = Field(
        None, description="The offer's tier (issue 26): hyperscaler, neocloud, marketplace; empty when unknown.")
    reused: Optional[str] = Field(None, description="An owned commitment reused: its CommitmentDiscountId (--owned).")


#: optimizer.planning.answer.FleetLine, as ``lines`` of the recommend document publish it
Line = from_result(FleetLine, _Line)


class ProviderPrices(_Open):
    rows: Annotated[int, Field(ge=0)]
    origin: str
    as_of: Optional[str]
    oldest_as_of: Optional[str]
    age_days: Optional[float]
    oldest_age_days: Optional[float] = None
    stale: bool
    estimated_rows: Annotated[int, Field(ge=0)]
    undated_rows: Optional[Annotated[int, Field(ge=0)]] = Field(None, description="Rows whose source has no date.")
    rows_by_pricing: Optional[dict[str, int]] = Field(None, description="prices status: rows per pricing model.")
    rows_by_age: Optional[dict[str, int]] = Field(
        None, description="prices status: rows by the age of their price (as_of to today): under_30_days, "
                          "30_to_89_days, 90_to_364_days, 365_days_or_more, undated (gpuopt.price_age).")


class Prices(_Open):
    """Where the prices came from, how old they are, and warnings about them."""

    catalog: str
    snapshot: Optional[str]
    built_at: Optional[str]
    max_age_days: float
    providers: dict[str, ProviderPrices]
    warnings: list[str]


class DinkelbachStep(_Open):
    lambda_: float = Field(alias="lambda")
    value: float
    cost: float
    F: float


class SizingItem(_Open):
    gpu_shape: str
    gpus_per_replica: float
    tensor_parallel: Annotated[int, Field(ge=1)]
    pipeline_parallel: Annotated[int, Field(ge=1)]
    memory_gib_per_replica: float
    tokens_per_second_per_replica: float
    replicas_per_instance: float
    precision: Optional[Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]] = None
    engine: Optional[Literal["vllm", "vllm-v0", "sglang", "tensorrt-llm"]] = None
    batch: Optional[Annotated[int, Field(ge=1)]] = None
    ttft_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    tpot_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    ttft_target_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    tpot_target_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    input_tokens: Optional[Annotated[int, Field(ge=1)]] = None
    output_tokens: Optional[Annotated[int, Field(ge=1)]] = None
    estimate_source: Optional[str] = None
    request_rate_per_replica: Optional[Annotated[float, Field(ge=0.0)]] = Field(
        None, description="serve with latency targets: requests/s a replica is sized for -- the highest rate whose "
                          "p99 TTFT (with queueing) and TPOT meet the targets (optimizer.sizing.operating)")
    utilization: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        None, description="that rate's share of the rate the replica saturates at")
    disaggregated: Optional[dict[str, Any]] = Field(
        None, description="a unit of prefill and decode replicas (optimizer.sizing.disaggregated): "
                          "prefill_replicas, decode_replicas, gpus_per_replica, instances, request_rate, "
                          "tokens_per_second, ttft_ms, tpot_ms, kv_transfer_ms, link, prefill_rate, decode_rate, "
                          "prefill_utilization, decode_batch")
    layout: Optional[dict[str, Any]] = Field(None, description="train/finetune: tensor_parallel, pipeline_parallel, "
                                             "data_parallel, context_parallel, expert_parallel, virtual_stages, "
                                             "zero_stage, micro_batch_size, activation_recompute, offload, "
                                             "recompute_layers (layers a stage recomputed when not all: "
                                             "Megatron-Core block recompute)")
    layout_text: Optional[str] = None
    framework: Optional[Literal["megatron", "fsdp", "deepspeed"]] = None
    mfu: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    job_gpus: Optional[Annotated[int, Field(ge=1)]] = None
    step_time_s: Optional[Annotated[float, Field(ge=0.0)]] = None
    tokens_per_second_per_gpu: Optional[Annotated[float, Field(ge=0.0)]] = None
    goodput: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    goodput_spot: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    wall_hours_at_job_gpus: Optional[Annotated[float, Field(ge=0.0)]] = None
    global_batch_tokens: Optional[Annotated[float, Field(ge=0.0)]] = None


class AtPeak(_Open):
    """A serving workload's replicas at its peak block's demand (optimizer.planning.answer.at_peak_load)."""
    block: str
    replicas: Annotated[float, Field(ge=0.0)]
    rate_per_replica: Annotated[float, Field(ge=0.0)]
    utilization: Annotated[float, Field(ge=0.0)]
    saturated: bool
    ttft_p99_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    tpot_p99_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    gpu: str
    ttft_target_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    tpot_target_ms: Optional[Annotated[float, Field(ge=0.0)]] = None
    method: Literal["simulation", "mean-field", "disaggregated pools (mean field)", "prefill pool (M/D/1)",
                    "decode pool (batch at the TPOT target)"]


class WorkloadSummary(_Open):
    name: str
    task: Literal["serve", "train", "finetune", "lora"]
    model: str
    shapes: list[str]
    start_month: Annotated[int, Field(ge=1)]
    sizing: list[SizingItem]
    gpus_peak: Optional[Annotated[int, Field(ge=0)]] = None
    peak_demand: Optional[Annotated[float, Field(ge=0.0)]] = None
    min_replicas: Optional[Annotated[int, Field(ge=0)]] = None
    end_month: Optional[Annotated[int, Field(ge=1)]] = None
    replicas_min_max: Optional[Annotated[list[float], Field(min_length=2, max_length=2)]] = None
    capacity_peak: Optional[Annotated[float, Field(ge=0.0)]] = None
    blocks_short: Optional[Annotated[int, Field(ge=0)]] = None
    regions: Optional[list[str]] = None
    #: serving: the replicas' operating point at the peak block's demand (optimizer.planning.answer.at_peak_load)
    at_peak: Optional[AtPeak] = None
    work_flops_needed: Optional[float] = None
    work_flops_planned: Optional[float] = None
    deadline_hours: Optional[float] = None
    finish_by_hour: Optional[float] = None
    completed: Optional[bool] = None


class Block(_Open):
    label: str
    period: Annotated[int, Field(ge=0)]
    months: Annotated[int, Field(ge=1)]
    start_hour: Annotated[float, Field(ge=0.0)]
    hours: Annotated[float, Field(ge=0.0, le=4368.0)]
    demand: dict[str, float]
    capacity: dict[str, float]
    #: serving workloads under the N+1 rule: capacity less the largest failure loss (one instance) of their offers
    capacity_after_loss: Optional[dict[str, float]] = None
    training_flops_per_s: dict[str, float]
    end_hour: Optional[float] = Field(None, description="Hour of the horizon the block ends (exclusive).")
    slots: Optional[list[int]] = Field(None, description="The demand-grid slots (hours of the day or week) merged "
                                                         "into this block, in time order.")
    slot_labels: Optional[list[str]] = None
    grid_hours: Optional[int] = Field(None, description="Hours of the demand grid the slots index (24 or 168).")


class Strategy(_Open):
    status: Literal["plan", "optimal", "time_limit", "infeasible", "not_solved", "no_offers", "not_computed"]
    total_usd: Optional[float]
    monthly_usd: Optional[float]
    upfront_usd: Optional[float] = None
    commitment_usd: Optional[float] = None
    max_month_usd: Optional[float] = None
    savings_usd: Optional[float] = None
    savings_pct: Optional[float] = None
    note: Optional[str] = None
    gap: Optional[float] = Field(None, description="The re-solve's relative gap when stopped by its time limit.")


class NextBest(_Open):
    provider: str
    total_usd: Optional[float]
    monthly_usd: Optional[float]
    upfront_usd: Optional[float] = None
    commitment_usd: Optional[float] = None
    max_month_usd: Optional[float] = None
    delta_usd: Optional[float] = None
    flip: Optional[str] = None
    note: Optional[str] = None
    status: Optional[str] = None
    gap: Optional[float] = None


class _Alternative(_Open):
    status: str
    total_usd: Optional[float] = None
    max_month_usd: Optional[float] = None
    gap: Optional[float] = None
    reason: Optional[str] = None


class TargetAlternative(_Alternative):
    scenario: str = Field(description="'this plan', or the scenario priced: interactive, chat, offline.")
    targets: Optional[list[str]] = None
    ttft_ms: Optional[float] = None
    tpot_ms: Optional[float] = None


class MarketplaceAlternative(_Alternative):
    offers_kept_out: Annotated[int, Field(ge=0)]


class PrecisionAlternative(_Alternative):
    precision: str
    workloads: list[str]
    rule: str
    label: Optional[str] = Field(None, description=(
        "The alternative in words when it is not fp8 allowed: 'with fp8 added to bf16/fp16', 'in 16-bit only, "
        "without the fp8/int8/int4 the plan chose'; null: fp8 allowed."))


class DemandSensitivity(_Open):
    demand_factor: Annotated[float, Field(gt=0.0)]
    total_usd: Optional[float] = Field(description="null: not priced (the note says why)")
    monthly_usd: Optional[float]
    uses: list[str]
    flips: bool
    status: Optional[str] = None
    gap: Optional[float] = None
    note: str


class MarginalDemand(_Open):
    workload: str
    block: str | int
    months: str
    usd_per_month_per_token_per_s: float


class Marginal(_Open):
    note: Optional[str] = Field(None, description="present when the shadow prices were not computed, saying why")
    lp_relaxation_cost_usd: Optional[float] = None
    demand: Optional[list[MarginalDemand]] = None


class Solver(_Open):
    name: Literal["cbc", "highs"]
    blocks: Annotated[int, Field(ge=0)]
    periods: Annotated[int, Field(ge=0)]
    merge: str
    pruned: Annotated[int, Field(ge=0)]
    candidates: dict[str, Annotated[int, Field(ge=0)]]
    status: Optional[Status] = None
    gap: Optional[Annotated[float, Field(ge=0.0)]] = None
    seconds: Optional[Annotated[float, Field(ge=0.0)]] = None
    message: Optional[str] = None
    method: Optional[Literal["enumeration", "milp"]] = None
    total_seconds: Optional[Annotated[float, Field(ge=0.0)]] = None
    rejected: Optional[dict[str, dict[str, Any]]] = Field(
        None, description="Per workload, the candidate shapes left out and why (diagnostic).")


class CommitmentTotals(_Open):
    total_over_term_usd: Optional[Usd] = None
    upfront_usd: Optional[Usd] = None


_FEASIBLE_RULE = {"allOf": [{
    "if": {"properties": {"feasible": {"const": True}}, "required": ["feasible"]},
    "then": {"properties": {"status": {"enum": ["optimal", "time_limit"]}, "reason": {"type": "null"}}},
    "else": {"properties": {"status": {"enum": ["infeasible", "not_solved"]}, "reason": {"type": "object"},
                            "lines": {"maxItems": 0}}},
}]}


class RecommendDoc(_Open):
    """The JSON printed by `gpuopt recommend --format json`, equal to gpuopt.api.RecommendResult.to_dict().
    Described key by key in docs/json-schema.md."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_FEASIBLE_RULE)

    schema_version: Literal[2]
    kind: Literal["recommend"]
    status: Status
    gap: Optional[Annotated[float, Field(ge=0.0)]] = Field(
        description="Relative MIP gap of the plan's own solve (0.001 = 0.1 %); null when there is no plan.")
    proven_optimal: Optional[bool] = Field(None, description=(
        "true: the plan is proven optimal (status optimal); false: a feasible plan the solver stopped at its time "
        "limit (status time_limit): its totals may be up to `gap` above the best plan's, `caveat` says so; null: "
        "no plan."))
    caveat: Optional[str] = Field(None, description=(
        "When the plan is not proven optimal: its status and gap, how much less the best plan may cost, and the "
        "--time-limit to rerun with (the text every output shows first); null otherwise."))
    feasible: bool
    horizon_months: Annotated[int, Field(ge=1, le=120)]
    horizon_note: str
    start_month: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}$")]
    total_usd: Usd
    monthly_usd: Usd
    commitment_usd: Usd
    upfront_usd: Usd
    headline: str
    workload_origin: str
    workload: PlanRequest = Field(description="The plan the plan was made from, every key, defaults filled in "
                                              "(the plan-file format, gpuopt.request.PlanRequest).")
    prices: Prices
    objective: Literal["cost", "roi"]
    recurring: bool
    lines: list[Line]
    cash_by_month_usd: list[Usd]
    after_horizon_usd: Usd
    leftover_value: Annotated[float, Field(ge=0.0, le=1.0)]
    leftover_credit_usd: Usd
    max_month_usd: Usd
    value_usd: Optional[float]
    net_value_usd: Optional[float]
    roi: Optional[float]
    dinkelbach: list[DinkelbachStep]
    workloads: list[WorkloadSummary]
    blocks: list[Block]
    strategies: dict[str, Strategy]
    savings_vs_on_demand_usd: Optional[float]
    savings_vs_on_demand_pct: Optional[float]
    commitment: CommitmentTotals
    marginal: Marginal
    next_best: list[NextBest]
    demand_sensitivity: list[DemandSensitivity]
    binding: list[str]
    targets: list[TargetAlternative] = Field(default_factory=list, description=(
        "The plan priced at the other serving targets (interactive, chat, offline), beside this plan (issue 26)."))
    marketplace: Optional[MarketplaceAlternative] = Field(None, description=(
        "The plan with marketplace offers allowed for its services, when some were kept out."))
    precision: Optional[PrecisionAlternative] = Field(None, description=(
        "The plan with fp8 allowed for its serving workloads, when they do not allow it."))
    size_mix: Optional[dict[str, Any]] = Field(None, description=(
        "Serving workloads with a trace (gpuopt/size_mix.py): `kept` (`split` or `one pool`), `one_pool_usd`, "
        "`split_usd` (null when not feasible) and `pools`: per workload, a list of its prompt-length pools -- "
        "`pool` (the workload name of the pool in this plan when split), `prompt_tokens_min`, `prompt_tokens_max` "
        "(null: no bound), `share_of_requests`, `share_of_output_tokens`, `mean_input_tokens`, "
        "`mean_output_tokens` and, when split, `instances` (count x instance type (pricing))."))
    disaggregated_pools: Optional[dict[str, Any]] = Field(None, description=(
        "Serving workloads with `disaggregate` auto or on (gpuopt/phase_mix.py): `kept` (`pools` or `one pool`), "
        "`one_pool_usd`, `pools_usd` (null when no plan keeps both pools of a workload in one region) and "
        "`workloads`: per workload (when the pools plan is feasible) its `region` (provider/region) and per pool "
        "(`prefill`, `decode`) its `replicas` (at the peak), `gpus_per_replica` (one per replica shape) and `on`: "
        "its lines, count x instance type (pricing), naming the pools or workloads sharing a line's instances."))
    rules: list[str]
    notes: list[str]
    reason: Optional[Reason] = Field(description="null when feasible; why there is no plan otherwise.")
    solver: Solver


# ============================================================================================ estimate
class EstimateDoc(_Open):
    """`gpuopt estimate --format json`: one replica (serving) or one job (training) of a workload on one GPU model.

    Units: GiB (memory), tokens/s, ms (latency), hours, FLOPs. Keys that do not apply to the task are absent."""

    schema_version: Literal[1]
    kind: Literal["estimate"]
    model: str
    task: Literal["serve", "train", "finetune", "lora"]
    gpu: str
    assumptions: list[str] = Field(description="Sentences for people: defaults used, sources of the numbers.")
    memory_gib_per_replica: float
    memory_gib_per_gpu: float
    gpus_per_replica: float
    breakdown_gib: dict[str, float] = Field(description="Memory per replica by part (weights, KV cache, ...), GiB.")
    tokens_per_second_per_replica: float
    tensor_parallel: Optional[int] = None
    pipeline_parallel: Optional[int] = None
    replicas_needed: Optional[int] = Field(None, description="With a demand (serve) or a deadline (lora).")
    gpus_needed: Optional[float] = None
    # serving
    precision: Optional[str] = None
    engine: Optional[str] = None
    scenario: Optional[str] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    concurrency: Optional[int] = None
    ttft_ms: Optional[float] = Field(None, description="Serving: p99 time to first token at this batch, ms.")
    tpot_ms: Optional[float] = Field(None, description="Serving: time per output token at this batch, ms.")
    time_per_output_token_ms: Optional[float] = None
    ttft_target_ms: Optional[float] = None
    tpot_target_ms: Optional[float] = None
    kv_capacity_sequences: Optional[int] = None
    meets_targets: Optional[bool] = None
    estimate_source: Optional[str] = None
    tokens_per_second_per_gpu: Optional[float] = None
    operating_point: Optional[dict[str, Any]] = Field(None, description=(
        "Serving with a demand (issue 27): the replica at its share of the request rate (Poisson arrivals, "
        "simulated): rate and max_rate (requests/s), utilization, batch (mean running sequences), "
        "ttft_ms/tpot_ms (means) and their p50/p90/p99, saturated, method, replicas, request_rate_total; the "
        "top-level concurrency, ttft_ms and tpot_ms are then its figures."))
    at_capacity: Optional[dict[str, Any]] = Field(None, description=(
        "Serving with a demand: the replica at its sized batch (concurrency, ttft_ms, tpot_ms, "
        "tokens_per_second_per_replica)."))
    sized_request_rate_per_replica: Optional[float] = Field(None, description=(
        "Serving with latency targets: requests/s one replica is sized for -- the highest Poisson rate whose p99 "
        "TTFT (with queueing) and p99 TPOT meet the targets (optimizer.sizing.operating.max_rate_within); "
        "operating_point gives the replica at the load asked for."))
    sized_utilization: Optional[float] = Field(None, description=(
        "That sized rate's share of the replica's saturation rate (operating_point.utilization is the load's)."))
    disaggregated: Optional[dict[str, Any]] = Field(None, description=(
        "`--disaggregate auto|on`: the best unit of prefill and decode replicas on 8-GPU nodes "
        "(optimizer.sizing.disaggregated.DisaggregatedUnit fields, plus gpus and tokens_per_second_per_gpu)."))
    curve: Optional[list[dict[str, Any]]] = Field(None, description=(
        "`--sweep`: operating points per precision and tensor_parallel: rate, utilization, "
        "tokens_per_second_per_gpu, tokens_per_second_per_user, ttft/tpot p50 and p99 (ms), meets_targets, pareto."))
    curve_notes: Optional[list[str]] = None
    # training
    gpus: Optional[int] = Field(None, description="Training: GPUs of the job.")
    mfu: Optional[float] = None
    step_time_s: Optional[float] = None
    usable_gib_per_gpu: Optional[float] = None
    fits: Optional[bool] = None
    layout: Optional[dict[str, Any]] = None
    goodput: Optional[float] = None
    goodput_spot: Optional[float] = None
    train_flops: Optional[float] = None
    compute_hours: Optional[float] = None
    wall_hours: Optional[float] = None
    gpu_hours: Optional[float] = None
    wall_hours_one_replica: Optional[float] = None
    meets_deadline: Optional[bool] = Field(None, description="Training with --deadline-hours: the job finishes "
                                                             "in time on ``gpus``.")
    scale: Optional[Literal["default", "fewest", "deadline", "given"]] = Field(
        None, description="Training: the rule that chose ``gpus`` -- default (the fewest that finish within 30 days, "
                          "at most 4,096), fewest (--gpus fewest), deadline (--deadline-hours) or given (--gpus N).")


# ============================================================================================== prices
class OfferRow(_Open):
    """One offer (the offer record of docs/architecture.md) plus its price per GPU-hour."""

    provider: str
    region: str
    zone: str
    instance_type: str
    gpu_model: str
    gpu_count: float
    gpu_memory_gib: Optional[float]
    vcpus: Optional[float] = None
    memory_gib: Optional[float] = None
    interconnect: Optional[str] = None
    fabric: Optional[str] = None
    zone_kind: Optional[str] = None
    tier: Optional[Literal["hyperscaler", "neocloud", "marketplace", ""]] = Field(
        None, description="Who runs the machine, in the provider's own words (providers/facts.py): hyperscaler "
                          "(AWS, Azure, GCP), neocloud (Lambda, CoreWeave, Nebius, RunPod Secure Cloud), marketplace "
                          "(RunPod Community Cloud, Vast.ai); \"\" unknown, which is not marketplace.")
    pricing: Pricing
    payment: Payment
    offering_class: Optional[str] = None
    usd_per_hour: Annotated[float, Field(ge=0.0)]
    usd_per_gpu_hour: Annotated[float, Field(ge=0.0)]
    upfront_usd: Optional[float] = None
    recurring_usd_per_hour: Optional[float] = None
    term_hours: Optional[float] = None
    currency: str
    source: str
    as_of: Optional[str]


class PricesListDoc(_Open):
    """`gpuopt prices list --format json`: offers, cheapest first."""

    schema_version: Literal[1]
    kind: Literal["prices-list"]
    rows: list[OfferRow]
    prices: Prices
    total_matching: Annotated[int, Field(ge=0, description="Offers matching the filters before --limit.")]
    pricing: list[str] = Field(description="The pricing filter asked for (empty: every option).")


class SourceDate(_Open):
    provider: str
    source: str
    as_of: str
    age_days: Optional[float]
    rows: int


class PricesStatusDoc(_Open):
    """`gpuopt prices status --format json`: the snapshot in use, its sources and their dates, the user cache."""

    schema_version: Literal[1]
    kind: Literal["prices-status"]
    prices: Prices
    source_dates: list[SourceDate]
    cache: dict[str, Any] = Field(description="dir, retention_days, snapshots (one object per cached snapshot).")
    ok: Optional[bool] = None
    path: Optional[str] = None
    snapshot_schema_version: Optional[int] = Field(None, description="Schema version of the price snapshot file.")
    built_at: Optional[str] = None
    rows: Optional[int] = None
    catalog: Optional[str] = Field(None, description="With --catalog: the offers CSV planned over.")
    estimated_rows: Optional[int] = Field(None, description="Rows whose price is derived by a documented rule.")
    offers_sha256: Optional[str] = None
    as_of_note: Optional[str] = None
    reserved_rules: Optional[dict[str, Any]] = Field(
        None, description="The discount rules that derive estimated reserved prices: quotes fitted and ratio.")
    providers: Optional[dict[str, dict[str, Any]]] = Field(None, description="The snapshot's own record per provider.")


class PriceChange(_Open):
    provider: str
    region: str
    zone: Optional[str]
    instance_type: str
    pricing: str
    payment: Optional[str]
    usd_per_hour_then: float
    usd_per_hour_now: float
    change_pct: Optional[float]
    offering_class: Optional[str] = None


class _PricesDiffDoc(_Open):
    """`gpuopt prices diff --format json`: prices in effect on ``since`` against today's."""

    schema_version: Literal[1]
    kind: Literal["prices-diff"]
    since: str
    origins_then: dict[str, str]
    origins_now: dict[str, str]
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[PriceChange]
    unchanged: Annotated[int, Field(ge=0)]
    warnings: list[str]


PricesDiffDoc = from_result(PriceDiff, _PricesDiffDoc, envelope=True)


class _RefreshProvider(_Open):
    """One provider's refresh (pricing_cache.refresh.ProviderOutcome)."""

    provider: str
    status: str = Field(description="refreshed, partial, failed, skipped ...")
    rows: Optional[int] = None
    regions_done: list[str] = []
    regions_failed: dict[str, str] = Field({}, description="region -> why it failed.")
    regions_skipped: dict[str, str] = {}
    kept_previous: list[str] = Field([], description="Regions whose previous prices stay in use.")
    snapshot: Optional[str] = Field(None, description="The snapshot file written, if any.")
    # the other fields (seconds, error, notes, rows_by_region, rows_skipped, skipped_by_reason, offers_added,
    # offers_changed, offers_removed) as the dataclass has them


RefreshProvider = from_result(ProviderOutcome, _RefreshProvider)


class PricesRefreshDoc(_Open):
    """`gpuopt prices refresh --format json`: per provider, what was fetched; ``ok`` false (exit 3) when any
    provider or region was not refreshed."""

    schema_version: Literal[1]
    kind: Literal["prices-refresh"]
    ok: bool
    seconds: float
    providers: list[RefreshProvider]


class ImportedSnapshot(_Open):
    """One provider's snapshot written by the import (pricing_cache.importing.import_file)."""

    provider: str
    file: Optional[str] = None
    rows: Optional[int] = None
    as_of: Optional[str] = None
    as_of_from: Optional[str] = None
    regions: Optional[list[str]] = None
    mode: Optional[str] = Field(None, description="offers (only the offers in the file replaced) or region.")
    current: Optional[bool] = Field(None, description="True: now the current prices; False: history only.")
    current_as_of: Optional[str] = None
    next_as_of: Optional[str] = None
    added: Optional[int] = None
    changed: Optional[int] = None
    unchanged: Optional[int] = None
    kept: Optional[int] = None
    removed: Optional[int] = None
    kept_quoted: Optional[int] = None
    kept_estimated: Optional[int] = None
    estimated: Optional[int] = None
    kept_previous: Optional[list[str]] = None
    offers_added: Optional[int] = None
    offers_removed: Optional[int] = None
    skipped: Optional[int] = None
    skipped_by_reason: Optional[dict[str, int]] = None
    skipped_file: Optional[str] = None
    written: Optional[bool] = None


class PricesImportDoc(_Open):
    """`gpuopt prices import --json`: per provider, the offers added, changed, kept and removed, and messages."""

    schema_version: Literal[1]
    kind: Literal["prices-import"]
    snapshots: list[ImportedSnapshot]
    skipped: int = Field(description="Rows of the file not imported.")
    skipped_by_reason: dict[str, int]
    notes: list[str]
    messages: list[str] = Field(description="The lines `gpuopt prices import` prints, for people.")


# ============================================================================================== review
class _TypeUsage(_Open):
    """What one instance type in one region did over the covered hours of the window (instance-hours, USD), pooled
    over every account."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str
    gpu_count: float
    hours_used: Annotated[float, Field(ge=0.0, description="Instance-hours.")]
    hours_by_pricing: dict[str, float] = Field(description="Instance-hours by FOCUS PricingCategory "
                                                            "(Standard, Committed, Dynamic; '' unknown).")
    peak_instances: float
    average_instances: float
    utilization: float = Field(description="average / peak running instances over the covered hours.")
    billed_cost_usd: float
    effective_cost_usd: float
    on_demand_equivalent_usd: Optional[float] = Field(description="The same hours at the on-demand baseline "
                                                                  "(on_demand_usd_per_hour).")
    accounts: list[str] = Field(description="Accounts that ran it ('' = not named by the export).")
    on_demand_usd_per_hour: Optional[float] = Field(description="The on-demand baseline, USD per instance-hour: the "
                                                                "bill's own list price where the export carries one, "
                                                                "else the catalog's; null: neither.")
    on_demand_baseline: str = Field(description="Where on_demand_usd_per_hour comes from: 'bill list price' (FOCUS "
                                                "ListCost / ListUnitPrice, CUR pricing_public_on_demand_cost / _rate, "
                                                "Azure PayGPrice) or 'catalog, <as_of>'; '' when neither.")
    bill_list_usd_per_hour: Optional[float] = Field(description="The export's own list price per instance-hour "
                                                                "(null: the export carries none).")
    catalog_on_demand_usd_per_hour: Optional[float] = Field(description="The catalog's on-demand rate (null: none).")
    catalog_on_demand_as_of: Optional[str] = Field(description="Its as_of date ('unknown': a row of no known date).")


TypeUsage = from_result(review_rows.TypeUsage, _TypeUsage)


class _CommitmentRecommendation(_Open):
    """A reservation to buy, with the fields of AWS Cost Explorer's reservation recommendations (and Azure
    Advisor's): monthly figures in USD."""

    provider: str
    region: str
    instance_type: str
    gpu_model: str
    term: Literal["1y", "3y"]
    payment: Literal["no_upfront", "partial_upfront", "all_upfront"]
    recommended_quantity: Annotated[int, Field(ge=0, description="Instances to reserve.")]
    upfront_cost_usd: float
    recurring_monthly_cost_usd: float
    estimated_monthly_on_demand_cost_usd: float
    estimated_monthly_cost_with_commitment_usd: float
    estimated_monthly_savings_usd: float
    estimated_monthly_savings_pct: float
    average_utilization: Optional[float]
    break_even_months: Optional[float]
    on_demand_usd_per_hour: float = Field(description="The on-demand baseline the savings are figured against "
                                                      "(on_demand_baseline says which).")
    reserved_effective_usd_per_hour: float
    price_source: str
    estimated_price: bool
    lookback_days: float
    solver_status: str
    account_scope: Literal["shared", "account"] = Field(description="CE AccountScope: shared (PAYER, pooled) or "
                                                                     "account (LINKED, one account's usage).")
    account_id: Optional[str]
    minimum_instances_per_hour: float = Field(description="CE MinimumNumberOfInstancesUsedPerHour.")
    average_instances_per_hour: float = Field(description="CE AverageNumberOfInstancesUsedPerHour.")
    maximum_instances_per_hour: float = Field(description="CE MaximumNumberOfInstancesUsedPerHour.")
    normalization_factor: Optional[float] = Field(description="AWS instance size flexibility factor; null for "
                                                              "other providers.")
    normalized_units_to_purchase: Optional[float]
    minimum_normalized_units_per_hour: Optional[float]
    average_normalized_units_per_hour: Optional[float]
    maximum_normalized_units_per_hour: Optional[float]
    recommendation_id: str = Field(description="Stable id: the same review of the same window gives the same id.")
    generation_time: str = Field(description="UTC ISO 8601.")
    on_demand_baseline: str = Field(description="'bill list price' (the export's own) or 'catalog, <as_of>' "
                                                "(the export carries none).")
    bill_list_usd_per_hour: Optional[float] = Field(description="The export's list price per instance-hour (null: "
                                                                "none).")
    catalog_on_demand_usd_per_hour: Optional[float] = Field(description="The catalog's on-demand rate (null: none).")
    catalog_on_demand_as_of: Optional[str]
    list_price_gap_pct: Optional[float] = Field(description="bill_list / catalog - 1, in % (null: one is missing).")
    estimated_monthly_savings_at_catalog_usd: Optional[float] = Field(
        description="The savings the catalog's on-demand rate would claim, when it and the bill's list price differ "
                    "by more than the tolerance (optimizer.review.LIST_PRICE_TOLERANCE, 2 %); else null.")
    offering_class: Literal["", "standard", "convertible"] = Field(description="AWS offering class of the "
                                                                             "reservation; '' for other providers.")
    commitment: str = Field(description="What is bought in words: provider, offering class, term and payment.")
    flexibility: str = Field(description="What it can be exchanged, modified or sold for during its term.")


CommitmentRecommendation = from_result(review_rows.CommitmentRecommendation, _CommitmentRecommendation)


class ReviewDoc(_Open):
    """`gpuopt review --format json`: the reviewed GPU spend, its use over the window, and the commitments
    recommended (optimizer.review.ReviewResult.to_dict())."""

    schema_version: Literal[1]
    kind: Literal["review"]
    period_start: str = Field(description="= window_start.")
    period_end: str = Field(description="= window_end.")
    window_start: str = Field(description="The window reviewed (ISO 8601, UTC): the export's coverage or --lookback.")
    window_end: str
    window_hours: float
    coverage_hours: float = Field(description="Hours of the window the data covers (the usage profile).")
    covered_fraction: Annotated[float, Field(ge=0.0, le=1.0)]
    gap_days: list[str] = Field(description="Whole UTC days of the window with no row at all.")
    lookback_days: float = Field(description="coverage_hours / 24: the days the figures rest on.")
    source_format: str
    rows: dict[str, int] = Field(description="read, gpu, not_gpu, bad.")
    bad_rows: list[dict[str, Any]]
    usage: list[TypeUsage]
    recommendations: list[CommitmentRecommendation]
    totals: dict[str, Optional[float]]
    purchases: dict[str, float] = Field(description="Commitment purchases, fees and refunds in the export by charge category, "
                                         "USD billed; a refund or credit of a commitment is netted into the "
                                         "Purchase total of that commitment.")
    prices: Prices
    notes: list[str]
    warnings: list[str] = Field(description="What makes the figures less sure (also on stderr).")
    unpriced: list[dict[str, str]]
    account_scope: Literal["shared", "account"]
    generation_time: str


# ============================================================================================ plan diff
class MoneyChange(_Open):
    old: float
    new: float
    change: float
    change_pct: Optional[float] = Field(description="Change as % of the old value; null when the old is 0.")


class LineChange(_Open):
    """One purchase (matched by what is bought) added, removed, or changed in count or total."""

    provider: str
    region: str
    zone: str
    instance_type: str
    pricing: str
    payment: str
    start_month: str
    end_month: str
    change: Literal["added", "removed", "changed"]
    count_old: int
    count_new: int
    total_usd_old: float
    total_usd_new: float
    total_usd_change: float


class PlanDiffDoc(_Open):
    """`gpuopt diff OLD NEW --format json`: NEW − OLD of two plans, and the cost gate's verdict."""

    schema_version: Literal[1]
    kind: Literal["plan-diff"]
    old: str
    new: str
    status: dict[str, str]
    money: dict[str, MoneyChange] = Field(description="total_usd, max_month_usd, commitment_usd, upfront_usd.")
    lines: list[LineChange]
    notes: list[str] = Field(default_factory=list, description="What an older plan document lacks (a schema_version "
                                                               "1 plan: one month, no horizon amounts).")
    gate: Optional[str] = Field(None, description="CLI with --fail-above: the cost gate's verdict in words.")


# ======================================================================================== report data
class ReportCashMonth(_Open):
    month: Annotated[int, Field(ge=1)]
    label: str = Field(description="YYYY-MM, or 'month N' when the start is unknown.")
    hourly_usd: float
    recurring_usd: float
    upfront_usd: float
    total_usd: float


class ReportCommitment(_Open):
    total_over_term_usd: float
    upfront_usd: float
    monthly_usd: float = Field(description="Paid each month while the termed commitments run.")
    estimated: bool = Field(description="Some commitment rests on an estimated (rule-derived) price.")
    reserved_lines: Annotated[int, Field(ge=0)]
    reserved_instances: Annotated[int, Field(ge=0)]
    term_ends: list[str]
    after_horizon_usd: float
    leftover_value: float
    leftover_credit_usd: float


class ReportStrategy(_Open):
    name: str = Field(description="all_on_demand, all_reserved_1y, all_reserved_3y, spot_where_allowed, this_plan.")
    label: str
    status: Optional[str] = Field(description="As `strategies.*.status` of the recommend document.")
    note: Optional[str] = Field(description="Why a strategy has no total (not computed, no plan) and how to get it.")
    total_usd: Optional[float]
    monthly_usd: Optional[float]
    upfront_usd: Optional[float]
    commitment_usd: Optional[float]
    max_month_usd: Optional[float]
    savings_usd: Optional[float]
    savings_pct: Optional[float]
    gap: Optional[float] = Field(None, description="Its solve's relative gap when stopped at its time limit.")


class ReportPrices(_Open):
    catalog: Optional[str]
    snapshot_built_at: Optional[str]
    max_age_days: Optional[float]
    providers: dict[str, ProviderPrices]
    warnings: list[str]


class ReportDataDoc(_Open):
    """``<stem>.json`` beside a plan report (`gpuopt recommend --format markdown|html --output <stem>.md|.html`,
    gpuopt.report.report_data): everything the report shows, numbers unformatted."""

    schema_version: Literal[1]
    kind: Literal["report-data"]
    title: str
    headline: str
    workload_origin: Optional[str]
    status: Status
    proven_optimal: Optional[bool] = Field(description="As in the recommend document.")
    gap: Optional[Annotated[float, Field(ge=0.0)]] = Field(description="As in the recommend document.")
    caveat: Optional[str] = Field(description="As in the recommend document: shown first in the report.")
    feasible: bool
    reason: Optional[Reason]
    horizon_months: Annotated[int, Field(ge=1)]
    horizon_note: str
    start_month: str
    end_month: str
    rules: list[str]
    total_usd: float
    monthly_usd: float
    upfront_usd: float
    commitment_usd: float
    max_month_usd: float
    cash_by_month: list[ReportCashMonth]
    on_demand_total_usd: Optional[float]
    savings_vs_on_demand_usd: Optional[float]
    savings_vs_on_demand_pct: Optional[float]
    commitment: ReportCommitment
    objective: Literal["cost", "roi"]
    value_usd: Optional[float]
    net_value_usd: Optional[float]
    roi: Optional[float]
    estimated_lines: Annotated[int, Field(ge=0)]
    lines: list[Line]
    strategies: list[ReportStrategy]
    spend_by_provider: dict[str, float]
    spend_by_gpu_model: dict[str, float]
    workloads: list[WorkloadSummary]
    blocks: list[dict[str, Any]] = Field(description="The recommend document's blocks: label, period, months, "
                                                     "start_hour, end_hour, hours, slots, slot_labels, grid_hours, "
                                                     "demand, capacity.")
    binding: list[str]
    notes: list[str]
    prices: ReportPrices
    demand_capacity: Optional[dict[str, Any]] = Field(description="Chart data: serving demand and capacity by block.")
    demand_timeline: Optional[dict[str, Any]] = Field(description="Chart data: the same in time order, by panel.")


# ====================================================================== quotas and spot data (issue 32)
class QuotaRow(_Open):
    provider: str
    region: str
    family: str = Field(description="The quota's code: AWS L-..., Azure usage name, GCP metric.")
    limit: Annotated[float, Field(ge=0.0)]
    unit: Literal["vcpus", "gpus"]
    used: Annotated[float, Field(ge=0.0)]
    note: str = Field(description="The quota's name and source.")


class QuotasDoc(_Open):
    """`gpuopt quotas --format json`: the quotas read and the quota CSV written (what `recommend --quota` reads)."""

    schema_version: Literal[1]
    kind: Literal["quotas"]
    path: str
    quotas: list[QuotaRow]


class SpotRefreshDoc(_Open):
    """`gpuopt prices refresh-spot --format json`: what the refresh of spot interruption data did."""

    schema_version: Literal[1]
    kind: Literal["spot-refresh"]
    provider: Literal["aws", "azure"]
    status: Literal["refreshed", "failed"]
    path: Optional[str] = Field(description="The file written; null when the refresh failed.")
    as_of: Optional[str]
    entries: Annotated[int, Field(ge=0)]
    error: Optional[str] = Field(description="Why the refresh failed; null when it did not.")
    kept: Optional[str] = Field(description="What stays in use after a failure.")
    notes: list[str]


class SpotScore(_Open):
    region: str
    zone_id: str = Field(description="The zone ID with --single-az; empty for a region's score.")
    score: Annotated[int, Field(ge=1, le=10)]


class SpotScoresDoc(_Open):
    """`gpuopt prices spot-scores --format json`: EC2 Spot placement scores, best first."""

    schema_version: Literal[1]
    kind: Literal["spot-scores"]
    instance_types: list[str]
    capacity: Annotated[int, Field(ge=1)]
    single_az: bool
    scores: list[SpotScore]


# =============================================================================================== error
class ErrorInfo(_Open):
    type: str = Field(description="input, usage, provider, snapshot, solver, no_plan, not_solved, cost_gate")
    message: str = Field(description="The one-line message also printed without --format json.")
    field: Optional[str] = Field(None, description="The option, file or key at fault, when known.")
    accepted: Optional[str] = Field(None, description="The values accepted there, when known.")


class ErrorDoc(_Open):
    """What a command writes on standard error with ``--format json`` when it fails (nothing on standard output)."""

    schema_version: Literal[1]
    kind: Literal["error"]
    exit_code: Literal[1, 2, 3, 4, 5]
    error: ErrorInfo


class ModelsDoc(_Open):
    """`gpuopt estimate --list-models --format json`: the models and GPUs gpuopt knows by name."""

    schema_version: Literal[1]
    kind: Literal["models"]
    models: list[str]
    gpus: list[str]


MODELS: dict[str, type[BaseModel]] = {
    "models": ModelsDoc,
    "recommend": RecommendDoc, "estimate": EstimateDoc, "review": ReviewDoc, "prices-list": PricesListDoc,
    "prices-status": PricesStatusDoc, "prices-diff": PricesDiffDoc, "prices-refresh": PricesRefreshDoc,
    "prices-import": PricesImportDoc, "plan-diff": PlanDiffDoc, "error": ErrorDoc, "report-data": ReportDataDoc,
    "quotas": QuotasDoc, "spot-refresh": SpotRefreshDoc, "spot-scores": SpotScoresDoc,
}


#: What gpuopt reads, with a published schema too: the plan request (a plan file's keys, ``gpuopt.recommend``'s
#: keywords; gpuopt.request). Not documents: no ``schema_version`` or ``kind``.
INPUTS: dict[str, type[BaseModel]] = {"plan-request": PlanRequest}


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one kind of document (or of an input, :data:`INPUTS`), generated from its
    model. KeyError: unknown kind."""
    if kind in INPUTS:  # what is read: validation mode (defaults are what is filled in, not required)
        s = INPUTS[kind].model_json_schema(by_alias=True, mode="validation")
    else:
        s = MODELS[kind].model_json_schema(by_alias=True, mode="serialization")
    return {"$schema": DRAFT, "$id": f"{SCHEMA_BASE_URL}{kind}.schema.json", **s}


def validate(doc: dict[str, Any]) -> BaseModel:
    """Parse a document by its ``kind`` (pydantic.ValidationError when it breaks its schema)."""
    return MODELS[doc["kind"]].model_validate(doc)


def undeclared_keys(obj: Any, path: str = "$") -> list[str]:
    """Paths of keys a parsed document carries that its model does not declare (the test suite keeps this empty,
    so that the published schemas describe every key gpuopt writes)."""
    out: list[str] = []
    if isinstance(obj, BaseModel):
        for k in (obj.__pydantic_extra__ or {}):
            out.append(f"{path}.{k}")
        for name in type(obj).model_fields:
            out += undeclared_keys(getattr(obj, name), f"{path}.{name}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out += undeclared_keys(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += undeclared_keys(v, f"{path}[{i}]")
    return out


def write_schemas(folder: str | Path) -> list[Path]:
    """Write ``<kind>.schema.json`` for every kind and input into ``folder``; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in (*MODELS, *INPUTS):
        p = folder / f"{kind}.schema.json"
        p.write_text(json.dumps(json_schema(kind), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


if __name__ == "__main__":  # pragma: no cover
    import argparse

    ap = argparse.ArgumentParser(description="Write the JSON Schemas of gpuopt's documents.")
    ap.add_argument("--write", metavar="FOLDER", default="docs/schemas")
    for p in write_schemas(ap.parse_args().write):
        print(p)
