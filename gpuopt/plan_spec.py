"""The plan file: several workloads under one budget (``gpuopt recommend --workload plan.yaml``).

Two shapes are read (``load_plan_file``):

* the **multi-workload** file — plan keys at the top (budget, objective, providers, regions, gpus, exclude_gpus,
  pricing, solver, time_limit_s, spot_capacity_per_offer, max_instances, blocks, prices_on, catalog) and a list
  ``workloads:`` of workload entries (``WorkloadItem``); see the documented ``gpuopt/data/example_plan.yaml``;
* the **single-workload** file of ``gpuopt.workload`` (``gpuopt/data/example_workload.yaml``): no ``workloads:`` key,
  workload keys at the top. It is one workload, named after ``name`` (or "workload"); its plan keys (providers,
  regions, gpus, pricing, budget) stay plan keys. Error messages then name its keys without ``workloads[0].``.

Every problem raises one ``InputError(field, message, accepted)``: ``field`` is the dotted path of the key
(``workloads[1].tokens_per_second``), ``message`` says what is wrong, the file and its line, ``accepted`` lists the
accepted values of a closed set. Relative paths in the file (``demand_profile``, ``catalog``) are relative to the
folder of the plan file.

Every ``gpuopt recommend`` option maps to one key (``CLI_OPTIONS``); ``apply_options`` lays options over a file's
keys (options win), ``plan_from_options`` builds a plan from options alone and ``plan_to_yaml`` writes a plan back as
a documented file that ``load_plan_file`` reads to the same plan (``--print-workload``).

Units: budget USD, the most spent in any one month of the horizon (hourly, recurring and upfront payments of that
month), all workloads together; budget_total USD over the horizon; horizon_months months; start/end month numbers
(1 = the horizon's first month); tokens_per_second and demand in generated tokens/s for the whole fleet of a serving
workload; tokens to process for train/finetune/lora; deadline_hours from the job's start; value_per_million_tokens
USD per million generated tokens served; value_usd USD for a finished training job.

``EXAMPLE_WORKLOAD`` is the bundled single-workload example planned when no file and no model is given.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, StrictBool, ValidationError,
                      ValidationInfo, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import MAX_QUANTITY
from gpuopt.kernel.records import PLANNED_PRICING

if TYPE_CHECKING:  # pragma: no cover
    from optimizer.planning.demand import DemandProfile

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


# ------------------------------------------------------------------------------------------- field types
def _fail(message: str, accepted: str | None = None, loc: tuple = ()) -> PydanticCustomError:
    """A validation error with our own one-line message; ``loc`` is appended to the error's location."""
    return PydanticCustomError("plan", "{message}", {"message": message, "accepted": accepted, "loc": loc})


def _not_bool(v: Any) -> Any:
    """Numbers only (YAML true/false are not 1/0), and finite ones (a NaN is not "greater than 0", it is no number)."""
    if isinstance(v, bool):
        raise _fail(f"must be a number, got {_show(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise _fail(f"must be a finite number, got {_show(v)}")
    return v


def _file_next_to_plan(v: str | None, info: ValidationInfo) -> str | None:
    """A path key of the plan (demand_profile, catalog) must name a file; a relative path is relative to the plan."""
    base = (info.context or {}).get("base_dir")
    if v is not None and base is not None:
        p = Path(v) if Path(v).is_absolute() else Path(base) / v
        if not p.is_file():
            raise _fail(f"file not found: {p}" + ("" if Path(v).is_absolute()
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
PosFloat = Annotated[float, BeforeValidator(_not_bool), Field(gt=0, le=MAX_QUANTITY, allow_inf_nan=False)]
NonNegFloat = Annotated[float, BeforeValidator(_not_bool), Field(ge=0, le=MAX_QUANTITY, allow_inf_nan=False)]
PosInt = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=int(MAX_QUANTITY))]
NonNegInt = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=int(MAX_QUANTITY))]
ZeroStage = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=3)]
Deadline = Annotated[float, BeforeValidator(_not_bool), Field(ge=1, le=MAX_DEADLINE_HOURS, allow_inf_nan=False)]
Name = Annotated[str, BeforeValidator(_name), Field(min_length=1)]
NameList = Annotated[list[Name], BeforeValidator(_names)]
Task = Annotated[Literal["serve", "train", "finetune", "lora"], BeforeValidator(_lower)]
ALL_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


def _precisions(v: Any) -> Any:
    """One precision, or several the planner may choose from ("bf16,fp8" or a list: serving only), as
    "p1,p2" lower case; each must be one of :data:`ALL_PRECISIONS` (the task's own rules are checked by sizing)."""
    if isinstance(v, (list, tuple)):
        items = [str(x) for x in v]
    elif isinstance(v, str):
        items = v.split(",")
    else:
        raise _fail(f"must be a precision or a list of them, got {_show(v)}", accepted=", ".join(ALL_PRECISIONS))
    items = [x.strip().lower() for x in items if x.strip()]
    bad = [x for x in items if x not in ALL_PRECISIONS]
    if not items or bad:
        raise _fail(f"unknown precision {bad[0] if bad else v!r}", accepted=", ".join(ALL_PRECISIONS))
    return ",".join(dict.fromkeys(items))


Precision = Annotated[str, BeforeValidator(_precisions)]
def _engine(v: Any) -> Any:
    """An engine name, canonical (``trt-llm``, ``trtllm`` -> ``tensorrt-llm``; optimizer.sizing.serving)."""
    from optimizer.sizing.serving import engine_aliases

    return engine_aliases(v) if isinstance(v, str) else v


Engine = Annotated[Literal["vllm", "sglang", "tensorrt-llm"], BeforeValidator(_engine)]
def _optimizer(v: Any) -> Any:
    """An optimizer name, canonical (``AdamW`` -> ``adam``, ``adamw8bit`` -> ``adam8bit``;
    optimizer.sizing.training)."""
    from optimizer.sizing.training import OPTIMIZER_ALIASES

    if isinstance(v, str):
        v = v.strip().lower()
        return OPTIMIZER_ALIASES.get(v, v)
    return v


Optimizer = Annotated[Literal["adam", "adam8bit", "adafactor", "sgd"], BeforeValidator(_optimizer)]
Framework = Annotated[Literal["megatron", "fsdp", "deepspeed"], BeforeValidator(_lower)]
Offload = Annotated[Literal["none", "optimizer", "params"], BeforeValidator(_lower)]
Scenario = Annotated[Literal["offline", "server", "interactive"], BeforeValidator(_lower)]
Objective = Annotated[Literal["cost", "roi"], BeforeValidator(_lower)]
Solver = Annotated[Literal["cbc", "highs"], BeforeValidator(_lower)]
PricingList = Annotated[list[Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block", "flex_start",
                                     "savings_plan_1y", "savings_plan_3y"]], BeforeValidator(_lower_names)]
Placement = Annotated[Literal["region", "provider", "any"], BeforeValidator(_lower)]
Spread = Annotated[Literal["zones"], BeforeValidator(_lower)]
RegionGroupList = Annotated[list[Literal["us", "eu", "europe", "na", "apac", "latam", "mea"]], BeforeValidator(_lower_names)]
Fraction01 = Annotated[float, BeforeValidator(_not_bool), Field(ge=0, le=1, allow_inf_nan=False)]
Horizon = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=120)]
Month = Annotated[int, BeforeValidator(_not_bool), Field(ge=1, le=120)]

#: Accepted values of the keys with a closed set (the ``accepted`` of their errors).
ACCEPTED = {
    "task": ", ".join(TASKS), "precision": ", ".join(PRECISIONS), "objective": ", ".join(OBJECTIVES),
    "solver": ", ".join(SOLVERS), "pricing": ", ".join(PLANNED_PRICING), "zero_stage": "0, 1, 2, 3",
    "allow_spot": "true, false", "spot_only_ok": "true, false", "include_local_zones": "true, false",
    "placement": "region, provider, any", "spread": "zones", "region_group": "us, eu, europe, na, apac, latam, mea",
    "blocks": "24 (hours of the day), 168 (hours of the week) or another positive whole number",
}


# ------------------------------------------------------------------------------------------- the models
class WorkloadItem(BaseModel):
    """One workload of a plan (see the module docstring for units).

    Cross-field rules: ``model`` xor ``params``; a serve workload has exactly one demand (``tokens_per_second``
    flat, ``demand_profile`` a CSV, ``demand`` an inline list one per block) and may have
    ``value_per_million_tokens``; a train/finetune/lora workload needs ``tokens`` and may have ``value_usd`` and a
    ``deadline_hours``. ``min_replicas`` defaults to 1 for serve (a serving fleet never drops to zero), 0 otherwise.
    Keys that do not apply to the task but that a ``recommend`` option may set over a file (``tokens``,
    ``deadline_hours``, ``zero_stage`` on serve; ``tokens_per_second``, ``concurrency`` on training; ``lora_rank``
    off lora) are kept and reported by ``ignored_fields``; keys only a file sets (demand profiles, values) are errors.
    """

    model_config = ConfigDict(extra="forbid")

    name: Name
    task: Task = "serve"
    model: str | None = None
    params: PosFloat | None = None
    precision: Precision | None = None
    context_tokens: PosInt | None = None
    concurrency: PosInt | None = None
    zero_stage: ZeroStage | None = None
    lora_rank: PosInt | None = None
    tokens_per_second: PosFloat | None = None
    request_rate: PosFloat | None = None
    engine: Engine | None = None
    input_tokens: PosInt | None = None
    output_tokens: PosInt | None = None
    scenario: Scenario | None = None
    ttft_ms: PosFloat | None = None
    tpot_ms: PosFloat | None = None
    measured: str | None = None
    trace: str | None = None
    demand_profile: str | None = None
    demand: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    tokens: PosFloat | None = None
    deadline_hours: Deadline | None = None
    framework: Framework | None = None
    optimizer: Optimizer | None = None
    offload: Offload | None = None
    global_batch_tokens: PosFloat | None = None
    allow_spot: StrictBool = False
    min_replicas: NonNegInt | None = None
    spot_only_ok: StrictBool = False
    value_per_million_tokens: NonNegFloat | None = None
    value_usd: NonNegFloat | None = None
    start: Month | None = None
    end: Month | None = None
    months: Month | None = None

    @field_validator("model", mode="before")
    @classmethod
    def _model_is_text(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise _fail(f"must be a model name, a Hugging Face repo or a path to a config.json, got {_show(v)} "
                        "(for a parameter count use params)")
        return v.strip() if isinstance(v, str) else v

    @field_validator("demand_profile", "measured", "trace")
    @classmethod
    def _profile_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return _file_next_to_plan(v, info)

    def output_length(self) -> int:
        """Mean output tokens per request (optimizer.sizing.serve_lengths' rule), to turn a request rate into
        tokens/s."""
        from optimizer.sizing import output_length

        return output_length(self.output_tokens, self.input_tokens, self.context_tokens)

    @model_validator(mode="after")
    def _cross_checks(self) -> "WorkloadItem":
        if self.model and self.params is not None:
            raise _fail("give either model or params, not both", loc=("params",))
        if not self.model and self.params is None:
            raise _fail("a workload needs a model (a known name, a Hugging Face repo or a path to a config.json) "
                        "or params (a parameter count)", loc=("model",))
        given = [k for k in DEMAND_KEYS if getattr(self, k) is not None]
        if self.task == "serve":
            if not given:
                raise _fail("a serve workload needs a demand: tokens_per_second or request_rate (flat), "
                            "demand_profile (a CSV) or demand (a list, one value per block)", loc=("tokens_per_second",))
            if len(given) > 1:
                raise _fail(f"give one demand, not both {given[0]} and {given[1]}",
                            accepted=", ".join(DEMAND_KEYS), loc=(given[1],))
            if self.value_usd is not None:
                raise _fail("value_usd is the value of a finished training job; a serve workload's value is "
                            "value_per_million_tokens", loc=("value_usd",))
        else:
            if self.tokens is None:
                raise _fail(f"a {self.task} workload needs tokens (the tokens to process, e.g. 2.0e+10)",
                            loc=("tokens",))
            for k in ("demand_profile", "demand"):
                if getattr(self, k) is not None:
                    raise _fail(f"{k} is a serving demand; a {self.task} workload has tokens (and deadline_hours)",
                                loc=(k,))
            if self.value_per_million_tokens is not None:
                raise _fail(f"value_per_million_tokens is for serve workloads; a {self.task} workload's value is "
                            "value_usd (the finished job)", loc=("value_per_million_tokens",))
        if self.trace is not None and (self.input_tokens is not None or self.output_tokens is not None):
            raise _fail("give the request lengths as trace or as input_tokens/output_tokens, not both",
                        loc=("trace",))
        if self.end is not None and self.months is not None:
            raise _fail("give either end or months, not both", loc=("months",))
        if self.task != "serve":
            for k in ("end", "months"):
                if getattr(self, k) is not None:
                    raise _fail(f"{k} is for serving workloads; a {self.task} job runs from start until it is done "
                                "(deadline_hours)", loc=(k,))
        if self.end is not None and self.end < (self.start or 1):
            raise _fail(f"end (month {self.end}) is before start (month {self.start or 1})", loc=("end",))
        if self.min_replicas is None:
            self.min_replicas = 1 if self.task == "serve" else 0
        return self

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
                      "scenario", "ttft_ms", "tpot_ms", "measured", "trace") + (("lora_rank",) if self.task != "lora" else ())
            if self.task == "lora":
                unused += ("framework", "optimizer", "offload", "global_batch_tokens")
        return [k for k in unused if getattr(self, k) is not None]


class PlanFile(BaseModel):
    """A plan: workloads under one budget and one set of limits (see the module docstring).

    ``budget`` None means no budget limit; ``pricing`` empty means every pricing model but spot unless some workload
    allows spot; ``gpus`` empty means every GPU model but ``exclude_gpus``; ``blocks`` None bins each demand profile
    as it comes (see optimizer.demand.load_profile); ``spot_capacity_per_offer``: instances of one spot offer the plan
    may count on; ``max_instances``: at most this many instances of any one offer (a quota).
    """

    model_config = ConfigDict(extra="forbid")

    budget: PosFloat | None = None
    budget_total: PosFloat | None = None
    max_upfront: NonNegFloat | None = None
    max_commitment: NonNegFloat | None = None
    horizon_months: Horizon | None = None
    leftover_value: Fraction01 = 0.0
    placement: Placement = "region"
    region_group: RegionGroupList = Field(default_factory=list)
    spread: Spread | None = None
    include_local_zones: StrictBool = False
    objective: Objective = "cost"
    providers: NameList = Field(default_factory=list)
    regions: NameList = Field(default_factory=list)
    gpus: NameList = Field(default_factory=list)
    exclude_gpus: NameList = Field(default_factory=list)
    pricing: PricingList = Field(default_factory=list)
    solver: Solver = "cbc"
    time_limit_s: PosFloat = 60.0
    spot_capacity_per_offer: NonNegInt = DEFAULT_SPOT_CAPACITY
    max_instances: PosInt | None = None
    blocks: PosInt | None = None
    prices_on: str | None = None
    catalog: str | None = None
    workloads: Annotated[list[WorkloadItem], Field(min_length=1)]

    _base_dir: Path | None = PrivateAttr(default=None)
    _origin: str = PrivateAttr(default="command-line options")
    _single: bool = PrivateAttr(default=False)
    _profiles: dict | None = PrivateAttr(default=None)
    _lines: dict | None = PrivateAttr(default=None)

    @field_validator("prices_on", mode="before")
    @classmethod
    def _iso_date(cls, v: Any) -> Any:
        if isinstance(v, _dt.date):
            return v.isoformat()
        if v is not None:
            try:
                _dt.date.fromisoformat(str(v))
            except ValueError:
                raise _fail(f"must be a date YYYY-MM-DD, got {_show(v)}") from None
            return str(v)
        return v

    @field_validator("catalog")
    @classmethod
    def _catalog_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return _file_next_to_plan(v, info)

    @model_validator(mode="after")
    def _plan_checks(self) -> "PlanFile":
        seen: dict[str, int] = {}
        for i, w in enumerate(self.workloads):
            if w.name in seen:
                raise _fail(f"duplicate workload name {w.name!r} (also workloads[{seen[w.name]}].name): "
                            "names must be unique", loc=("workloads", i, "name"))
            seen[w.name] = i
        both = sorted(set(self.gpus) & set(self.exclude_gpus))
        if both:
            raise _fail(f"{both[0]} is both allowed (gpus) and excluded (exclude_gpus)", loc=("exclude_gpus",))
        if "spot" in self.pricing and not any(w.allow_spot for w in self.workloads):
            raise _fail("spot is allowed but no workload has allow_spot: true (it must tolerate interruptions)",
                        accepted="on_demand, reserved_1y, reserved_3y; or set allow_spot on a workload",
                        loc=("pricing",))
        if self.objective == "roi" and not any(
                w.value_per_million_tokens is not None or w.value_usd is not None for w in self.workloads):
            raise _fail("roi needs a value: value_per_million_tokens (serve) or value_usd "
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
        """The model of ``item`` as ``optimizer.sizing.specs.load_model`` takes it: a relative path to a local
        config.json (or a folder holding one) that exists next to the plan file becomes that path; anything else as
        written."""
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
        made from options), to append to a message about that key."""
        if not self._origin or self._origin == "command-line options":
            return ""
        line = (self._lines or {}).get((key,))
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


PLAN_KEYS = tuple(k for k in PlanFile.model_fields if k != "workloads")
ITEM_KEYS = tuple(WorkloadItem.model_fields)

#: The `gpuopt recommend` option of every key (some are added with the multi-workload planner).
CLI_OPTIONS = {
    "budget": "--budget", "objective": "--objective", "providers": "--provider", "regions": "--region",
    "gpus": "--gpu", "exclude_gpus": "--exclude-gpu", "pricing": "--pricing", "solver": "--solver",
    "time_limit_s": "--time-limit", "spot_capacity_per_offer": "--spot-capacity", "max_instances": "--max-instances",
    "blocks": "--blocks", "prices_on": "--prices-on", "catalog": "--catalog",
    "budget_total": "--budget-total", "max_upfront": "--max-upfront", "max_commitment": "--max-commitment",
    "horizon_months": "--horizon", "leftover_value": "--leftover-value", "placement": "--placement",
    "region_group": "--region-group", "spread": "--spread", "include_local_zones": "--include-local-zones",
    "start": "--start-month", "end": "--end-month", "months": "--months",
    "name": "--name", "task": "--task", "model": "--model", "params": "--params", "precision": "--precision",
    "context_tokens": "--context", "concurrency": "--concurrency", "zero_stage": "--zero-stage",
    "lora_rank": "--lora-rank", "tokens_per_second": "--tokens-per-second", "demand_profile": "--demand-profile",
    "demand": "--demand", "tokens": "--tokens", "deadline_hours": "--deadline-hours",
    "allow_spot": "--allow-spot/--no-spot", "min_replicas": "--min-replicas",
    "spot_only_ok": "--spot-only-ok", "value_per_million_tokens": "--value-per-million-tokens",
    "value_usd": "--value-usd", "request_rate": "--request-rate", "engine": "--engine",
    "input_tokens": "--input-tokens", "output_tokens": "--output-tokens", "scenario": "--scenario",
    "ttft_ms": "--ttft-ms", "tpot_ms": "--tpot-ms", "measured": "--measured", "trace": "--trace",
    "framework": "--framework", "optimizer": "--optimizer", "offload": "--offload",
    "global_batch_tokens": "--global-batch-tokens",
}

#: One line of documentation per key, written by plan_to_yaml after the key.
KEY_DOCS = {
    "budget": "USD: the most the plan may spend in any one month (hourly + recurring + upfronts paid that month)",
    "budget_total": "USD: the most the plan may cost over the whole horizon",
    "max_upfront": "USD: the most paid upfront for commitments",
    "max_commitment": "USD: the most owed over the terms of the commitments bought",
    "horizon_months": "months the capacity is needed (default 12 with serving; a job's span for training only)",
    "leftover_value": "0..1: value of commitment months that outlive the horizon (default 0)",
    "placement": "region (each service in one region) | provider | any",
    "region_group": "data residency: us, eu, europe, na, apac, latam, mea",
    "spread": "zones: min_replicas on instances in distinct zones where the data has zones",
    "include_local_zones": "also plan on AWS Local Zones and Wavelength Zones",
    "start": "month the workload starts (1 = the first month of the horizon)",
    "end": "serve: last month it runs (inclusive; default the horizon's end)",
    "months": "serve: number of months it runs from start",
    "objective": "cost (cheapest plan that meets every demand) | roi ((value - cost) / cost)",
    "providers": "aws, azure, gcp, lambda ... (empty: all)",
    "regions": "provider region codes, e.g. us-east-1, eastus (empty: all)",
    "gpus": "GPU models allowed, e.g. A100-80GB, H100-80GB, L4 (empty: all)",
    "exclude_gpus": "GPU models never used",
    "pricing": "on_demand, spot, reserved_1y, reserved_3y, capacity_block, flex_start, savings_plan_1y, "
               "savings_plan_3y (empty: all; spot only for workloads that allow it; capacity blocks for services "
               "only when named)",
    "solver": "cbc (bundled) | highs",
    "time_limit_s": "solver time limit, seconds",
    "spot_capacity_per_offer": "instances of one spot offer the plan may count on",
    "max_instances": "at most this many instances of any one offer (a quota)",
    "blocks": "bin demand profiles into 24 (hour of day), 168 (hour of week) or N blocks; unset: as the profile comes",
    "prices_on": "plan with the prices in effect on this date (YYYY-MM-DD)",
    "catalog": "your own offers CSV instead of the shipped prices (relative to this file)",
    "workloads": "one entry per workload",
    "name": "unique label for reports",
    "task": "serve | train | finetune | lora",
    "model": "a known model, a Hugging Face repo, or a path to a config.json",
    "params": "parameter count (instead of model)",
    "precision": "serve: bf16 | fp16 | fp8 | int8 | int4 | fp4, or a list the planner chooses from per GPU; "
                 "training: bf16 | fp16 | fp8 (Hopper, Ada, Blackwell)",
    "context_tokens": "tokens per sequence (serve: input + output when input_tokens is not given; training: "
                      "sequence length)",
    "concurrency": "serve: sequences decoded together per replica (default: the largest batch meeting the targets)",
    "request_rate": "serve: requests/s, the same all month (instead of tokens_per_second)",
    "engine": "serve: vllm | sglang | tensorrt-llm (default vllm)",
    "input_tokens": "serve: mean prompt tokens per request (default 1024)",
    "output_tokens": "serve: mean generated tokens per request (default 128)",
    "scenario": "serve: server (p99 TTFT <= 2 s, TPOT <= 200 ms; default) | interactive (450 / 40 ms) | offline",
    "ttft_ms": "serve: p99 time-to-first-token target, ms (overrides the scenario's)",
    "tpot_ms": "serve: p99 time-per-output-token target, ms (overrides the scenario's)",
    "measured": "serve: CSV/JSON of your own benchmark results that corrects the model (relative to this file)",
    "trace": "serve: CSV of requests (input_tokens, output_tokens): their means are the lengths (relative to this file)",
    "zero_stage": "training: ZeRO stage 0..3 over the data-parallel GPUs (default: the framework's)",
    "framework": "train/finetune: megatron (default for train) | fsdp (default for finetune) | deepspeed",
    "optimizer": "train/finetune: adam (default) | adam8bit | adafactor | sgd",
    "offload": "train/finetune: none (default) | optimizer (ZeRO-Offload to CPU) | params (ZeRO-3 only)",
    "global_batch_tokens": "train/finetune: tokens per optimizer step (default 4M, Llama 2's)",
    "lora_rank": "lora: rank of the adapters",
    "tokens_per_second": "serve: generated tokens/s, the same all month",
    "demand_profile": "serve: CSV of demand by hour/timestamp (relative to this file)",
    "demand": "serve: tokens/s per block (24: hours of the day, 168: hours of the week)",
    "tokens": "training: tokens to process",
    "deadline_hours": "training: finish within this many hours of its start",
    "allow_spot": "may it run on interruptible spot capacity?",
    "min_replicas": "replicas always running, on at least as many instances (redundancy)",
    "spot_only_ok": "may spot be the only capacity behind min_replicas?",
    "value_per_million_tokens": "serve: USD per million generated tokens served (roi)",
    "value_usd": "training: USD the finished job is worth (roi)",
}


# ------------------------------------------------------------------------------------------- reading
def _compose(text: str, origin: str) -> tuple[Any, dict[tuple, int]]:
    """Parse YAML within gpuopt.kernel.inputs' limits (aliases, nesting, duplicate keys refused); return (data, path ->
    1-based line)."""
    from gpuopt.kernel.inputs import load_yaml, yaml_lines

    data, node = load_yaml(text, origin, "workload")
    return data, yaml_lines(node)


def _dotted(loc: tuple) -> str:
    from gpuopt.kernel.inputs import dotted

    return dotted(loc)


def _normalize(data: Any, origin: str, lines: dict[tuple, int]) -> tuple[dict, dict[tuple, int], bool]:
    """The file's mapping in the multi-workload shape: (data, lines, single) — a file without ``workloads:`` is
    one workload (the single-workload format), its plan keys kept at the top."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("workload", f"{origin} must be a mapping of keys to values, got {type(data).__name__}",
                         accepted=", ".join(PLAN_KEYS + ("workloads",)))
    if "workloads" in data:
        return data, lines, False
    plan = {k: v for k, v in data.items() if k in PLAN_KEYS}
    item = {k: v for k, v in data.items() if k not in PLAN_KEYS}
    if item.get("name") is None:
        item["name"] = "workload"
    plan["workloads"] = [item]
    moved: dict[tuple, int] = {("workloads",): 1, ("workloads", 0): 1}
    for path, line in lines.items():
        if path and path[0] not in PLAN_KEYS:
            moved[("workloads", 0) + path] = line
        else:
            moved[path] = line
    return plan, moved, True


def _show(v: Any) -> str:
    text = f"{v:g}" if isinstance(v, float) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(err: dict, single: bool) -> tuple[tuple, str, str | None]:
    """(location, one-line message, accepted values) of one pydantic error."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))  # drop union/function tags
    typ, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    key = next((p for p in reversed(loc) if isinstance(p, str)), "")
    accepted = ACCEPTED.get(key)
    if typ == "plan":
        return loc + tuple(ctx.get("loc") or ()), ctx["message"], ctx.get("accepted") or (
            ACCEPTED.get(ctx["loc"][-1]) if ctx.get("loc") and isinstance(ctx["loc"][-1], str) else accepted)
    if typ == "extra_forbidden":
        in_item = len(loc) >= 3 and loc[0] == "workloads"
        if single:  # a single-workload file holds workload and plan keys side by side
            keys = ITEM_KEYS + PLAN_KEYS
        else:
            keys = ITEM_KEYS if in_item else PLAN_KEYS + ("workloads",)
        msg = "unknown key"
        if not in_item and not single and key in ITEM_KEYS:
            msg += " at the top of a multi-workload plan: workload keys go under workloads:"
        return loc, msg, ", ".join(keys)
    if typ == "missing":
        if key == "name":
            return loc, "every workload needs a name (unique in the plan)", None
        return loc, "is required", None
    if typ == "literal_error":
        return loc, f"unknown value {_show(value)}", accepted or ctx.get("expected")
    texts = {
        "greater_than": lambda: f"must be greater than {ctx.get('gt')}, got {_show(value)}",
        "greater_than_equal": lambda: f"must be at least {ctx.get('ge')}, got {_show(value)}",
        "less_than_equal": lambda: f"must be at most {ctx.get('le'):g}, got {_show(value)}",
        "finite_number": lambda: f"must be a finite number, got {_show(value)}",
        "float_parsing": lambda: f"must be a number, got {_show(value)}",
        "float_type": lambda: f"must be a number, got {_show(value)}",
        "int_parsing": lambda: f"must be a whole number, got {_show(value)}",
        "int_type": lambda: f"must be a whole number, got {_show(value)}",
        "int_from_float": lambda: f"must be a whole number, got {_show(value)}",
        "bool_type": lambda: f"must be true or false, got {_show(value)}",
        "bool_parsing": lambda: f"must be true or false, got {_show(value)}",
        "string_type": lambda: f"must be text, got {_show(value)}",
        "string_too_short": lambda: "must not be empty",
        "list_type": lambda: f"must be a list, got {_show(value)}",
        "too_short": lambda: ("needs at least one workload" if key == "workloads"
                              else f"needs at least {ctx.get('min_length')} value(s)"),
        "model_type": lambda: f"must be a mapping of keys to values, got {type(value).__name__}",
        "dict_type": lambda: f"must be a mapping of keys to values, got {type(value).__name__}",
    }
    make = texts.get(typ)
    return loc, (make() if make else err["msg"]), accepted


def _raise_validation(exc: ValidationError, origin: str, lines: dict[tuple, int], single: bool) -> None:
    err = exc.errors(include_url=False)[0]
    loc, msg, accepted = _message(err, single)
    line = None
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            line = lines[loc[:n]]
            break
    shown = loc[2:] if single and loc[:2] == ("workloads", 0) else loc
    where = f" ({origin}, line {line})" if line is not None and origin else (f" ({origin})" if origin else "")
    raise InputError(_dotted(shown), msg + where, accepted) from None


def _validate(data: dict, origin: str, base_dir: Path | None, lines: dict[tuple, int], single: bool,
              check_profiles: bool = True) -> PlanFile:
    try:
        plan = PlanFile.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        _raise_validation(exc, origin, lines, single)
    plan._base_dir, plan._origin, plan._single, plan._lines = base_dir, origin, single, dict(lines)
    if check_profiles:  # read every demand profile now, so a bad CSV is reported with the plan
        profiles = plan.demand_profiles()
        if len(profiles) > 1:
            from optimizer.planning.demand import merge_blocks

            merge_blocks(profiles)  # raises InputError when the profiles cannot share one grid
    return plan


def apply_options(data: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    """A copy of a plan's keys (multi-workload shape) with ``options`` laid over it; options win.

    ``options`` are keys of the plan file (``CLI_OPTIONS``); None and empty lists are "not given". Workload keys
    go to the plan's only workload (an error when it has several: edit the file); a model replaces the file's
    params and params its model; a demand key replaces the file's other demand keys; end replaces months and months
    end."""
    out = copy.deepcopy(dict(data))
    workloads = out.get("workloads")
    if workloads is None:
        workloads = out["workloads"] = [{}]
    demands = [k for k in DEMAND_KEYS if options.get(k) not in (None, [], ())]
    if len(demands) > 1:  # two demands given at once: which one is meant? (a file's demand is replaced by one)
        raise InputError(demands[1], f"give one demand, not both {demands[0]} and {demands[1]}",
                         accepted=", ".join(DEMAND_KEYS))
    for k, v in options.items():
        if v is None or (isinstance(v, (list, tuple)) and not v):
            continue
        if k in PLAN_KEYS:
            out[k] = list(v) if isinstance(v, tuple) else v
            continue
        if k not in ITEM_KEYS:
            raise InputError(k, "is not a plan option", accepted=", ".join(PLAN_KEYS + ITEM_KEYS))
        if not isinstance(workloads, list) or len(workloads) != 1 or not isinstance(workloads[0], dict):
            n = len(workloads) if isinstance(workloads, list) else 0
            raise InputError(k, f"is a key of one workload, and the plan has {n} workloads: set it in the file, "
                             "under the workload it belongs to")
        item = workloads[0]
        if k == "model":
            item.pop("params", None)
        elif k == "params":
            item.pop("model", None)
        elif k in DEMAND_KEYS:
            for other in DEMAND_KEYS:
                item.pop(other, None)
        elif k in ("end", "months"):  # one of the two says when a workload stops: the option replaces the file's
            item.pop("months" if k == "end" else "end", None)
        item[k] = list(v) if isinstance(v, tuple) else v
    if len(workloads) == 1 and isinstance(workloads[0], dict) and workloads[0].get("name") is None:
        workloads[0]["name"] = "workload"
    return out


def load_plan_file(path: str | Path, options: Mapping[str, Any] | None = None) -> PlanFile:
    """Read and validate a plan file (either shape, module docstring), with ``options`` laid over its keys.

    Also reads every demand profile it names (``PlanFile.demand_profiles``) and checks they share one grid.
    Raises InputError: field ``workload`` for a missing file, a folder or bad YAML; else the dotted path of the
    first bad key, the message naming the file and line."""
    from gpuopt.kernel.inputs import read_text

    p = Path(path)
    text = read_text(p, "workload", "YAML file")
    data, lines = _compose(text, str(p))
    data, lines, single = _normalize(data, str(p), lines)
    if options:
        data = apply_options(data, options)
    return _validate(data, str(p), p.parent, lines, single)


#: Fields of errors raised outside the plan schema (offer filters, the CLI) -> the plan key they stand for.
ERROR_FIELD_KEYS = {"gpu": "gpus", "provider": "providers", "region": "regions", "exclude_gpu": "exclude_gpus"}


@contextlib.contextmanager
def named_as_options(options: Mapping[str, Any], *, every: bool = False, extra: Mapping[str, str] | None = None):
    """For the command line: an InputError on a plan key names the ``gpuopt recommend`` option (``--horizon``), not
    the plan-file key (``horizon_months``) — for the keys given as options, or for every key when ``every`` (a plan
    made from options alone). ``extra``: more field -> option names (``format`` -> ``--format``). The message loses
    the plan file's line, which is not where the option was set."""
    given = {k for k, v in options.items() if v is not None and not (isinstance(v, (list, tuple)) and not v)}
    try:
        yield
    except InputError as exc:
        root = re.sub(r"\[\d+\]$", "", re.sub(r"^workloads\[\d+\]\.", "", exc.field))
        key = ERROR_FIELD_KEYS.get(root, root)
        option = (extra or {}).get(root) or (CLI_OPTIONS.get(key) if key in CLI_OPTIONS and (every or key in given)
                                             else None)
        if option is None:
            raise
        msg = re.sub(r" \([^()]*, line \d+\)$", "", exc.message)
        raise InputError(option.split("/")[0], msg, exc.accepted) from None


def plan_from_options(options: Mapping[str, Any], base_dir: str | Path | None = None) -> PlanFile:
    """A one-workload plan from ``recommend`` options alone (keys of ``CLI_OPTIONS``); paths relative to
    ``base_dir`` (default: the current folder)."""
    data = apply_options({}, options)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    plan = _validate(data, "", base, {}, single=True)
    plan._origin = "command-line options"
    return plan


# ------------------------------------------------------------------------------------------- writing
def _float(v: float) -> str:
    """A float as YAML 1.1 (PyYAML) reads back to the same float: 50000, 0.25, 2.0e+10."""
    if v.is_integer() and abs(v) < 1e7:
        return str(int(v))
    if 1e-4 <= abs(v) < 1e7:
        return repr(v)
    for digits in range(17):
        s = f"{v:.{digits}e}"
        if float(s) == v:
            break
    mantissa, exp = s.split("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exp}"


def _scalar(v: Any) -> str:
    import json

    import yaml

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    s = str(v)
    plain = bool(s) and "#" not in s and s == s.strip()
    if plain:
        try:
            plain = yaml.safe_load(f"k: {s}") == {"k": s}
        except yaml.YAMLError:
            plain = False
    return s if plain else json.dumps(s)


def _flow(values: list, indent: int) -> str:
    items = [_scalar(x) for x in values]
    one = "[" + ", ".join(items) + "]"
    if len(one) <= 80:
        return one
    pad = " " * (indent + 2)
    rows = [", ".join(items[i:i + 12]) for i in range(0, len(items), 12)]
    return "[\n" + ",\n".join(pad + r for r in rows) + "]"


def _line(key: str, value: Any, indent: int, prefix: str = "", documented: bool = True) -> str:
    text = f"{' ' * indent}{prefix}{key}: {_flow(value, indent) if isinstance(value, list) else _scalar(value)}"
    if not documented:
        return text
    doc = f"# {CLI_OPTIONS[key]}: {KEY_DOCS[key]}" if key in CLI_OPTIONS else f"# {KEY_DOCS.get(key, '')}"
    last = text.rsplit("\n", 1)[-1]
    return text + " " * max(1, 44 - len(last)) + doc


def plan_to_yaml(plan: PlanFile) -> str:
    """The plan as a documented multi-workload YAML file (stable key order, a comment per key naming its
    `recommend` option) that ``load_plan_file`` reads back to an equal plan. Unset plan keys are written commented
    out; unset workload keys are left out."""
    n = len(plan.workloads)
    out = [f"# gpuopt plan: {n} workload{'s' if n != 1 else ''} under one budget, over a horizon of months.",
           "# Plan it with `gpuopt recommend --workload THIS_FILE`; every key maps to a `gpuopt recommend` option",
           "# (after the key); options given with --workload override the file. Documented example:",
           "# gpuopt/data/example_plan.yaml."]
    for key in PLAN_KEYS:
        value = getattr(plan, key)
        if value is None:
            doc = f"# {CLI_OPTIONS[key]}: {KEY_DOCS[key]}"
            out.append(f"# {key}:" + " " * max(1, 44 - len(key) - 3) + doc)
        else:
            out.append(_line(key, value, 0))
    out.append("workloads:" + " " * 34 + f"# {KEY_DOCS['workloads']}")
    documented: set[str] = set()  # a workload key is documented where it first appears
    for w in plan.workloads:
        first = True
        for key in ITEM_KEYS:
            value = getattr(w, key)
            if value is None:
                continue
            out.append(_line(key, value, 2 if first else 4, "- " if first else "", key not in documented))
            documented.add(key)
            first = False
    return "\n".join(out) + "\n"
