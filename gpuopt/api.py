"""The public Python API: ``recommend``, ``estimate``, ``prices_list``, ``prices_status``.

The CLI is a thin layer over these functions: it parses options, calls one of them and renders the
result object it gets back, so notebooks and FinOps pipelines get exactly what the CLI shows
(``result.to_dict()`` is the ``--format json`` output).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
import logging
from typing import TYPE_CHECKING, Any, Iterable

from gpuopt.kernel.documents import VERSIONS, DictResult, envelope, frame
from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import PRICING_MODELS
from gpuopt.price_age import old_quote_notes as _old_quotes, oldest_price_note
from gpuopt.price_age import price_age_days as _price_age_days, price_provenance as _price_provenance, rows_by_age
from gpuopt.plan_inputs import (check_regions, checkpoint_notes, expert_layout_notes, mixed_replica_notes,
                                owned_commitments, trace_lengths, trace_mix)
from optimizer.review import ReviewResult as _PlannedReview

if TYPE_CHECKING:  # pragma: no cover
    from gpuopt.request import PlanRequest

#: ``gpuopt -v`` (info) / ``-vv`` (debug) shows these on stderr
log = logging.getLogger("gpuopt")


# ----------------------------------------------------------------------------------------------- prices
def _spot_caps(plan):
    """The plan's spot cap: one for every type (``spot_capacity_per_offer``) and one per GPU model the user set
    (``spot_capacity_by_gpu``, optimizer.planning.problem.SpotCaps)."""
    from optimizer.planning.problem import SpotCaps

    return SpotCaps(plan.spot_capacity_per_offer, plan.spot_capacity_by_gpu)


def _quota_region_notes(quotas, offers) -> list[str]:
    """A note for each quota row whose provider and region match no offer of the price data (a typo such as
    us-east1 would otherwise limit nothing, silently: a breaker's finding)."""
    if not quotas:
        return []
    regions = {(str(p_), str(r_)) for p_, r_ in offers[["provider", "region"]].drop_duplicates().itertuples(index=False)}
    providers = {p_ for p_, _ in regions}
    out = []
    for lim in quotas:
        k = lim.key
        if k.provider not in providers:
            out.append(f"quota file: provider '{k.provider}' has no offer in the price data: its limit "
                       f"({k.quota}) applies to nothing (accepted: {', '.join(sorted(providers))})")
        elif k.region != "*" and (k.provider, k.region) not in regions:
            out.append(f"quota file: {k.provider} region '{k.region}' has no offer in the price data: its limit "
                       f"({k.quota}) applies to nothing (a typo?)")
    return out


def _quotas(plan):
    """The quota table of ``plan.quota`` (providers.quotas.load_quota_file), or None."""
    if not plan.quota:
        return None
    from providers.quotas import load_quota_file

    return load_quota_file(plan.resolve_path(plan.quota))


def _load(catalog: str | Path | None, on_date=None, categories: bool = False):
    from pricing_cache.store import load_offers

    if catalog is not None and on_date is not None:
        raise InputError("prices_on", "--prices-on picks prices from the cache's history; it cannot be used with "
                                      "--catalog (your file has its own prices)")
    offers, info = load_offers(catalog, on_date=on_date, categories=categories)
    log.info("prices: %d offers from %s %s%s", len(offers), info.kind, info.path,
             f" in effect on {on_date}" if on_date else "")
    return offers, info


def _check_names(field_name: str, given: Iterable[str], known: Iterable[str], case_insensitive=True,
                 everywhere: Iterable[str] = ()) -> list[str]:
    known = sorted(set(str(k) for k in known))
    everywhere_l = {str(k).lower() for k in everywhere}
    lut = {k.lower(): k for k in known} if case_insensitive else {k: k for k in known}
    out = []
    for g in given:
        key = g.lower() if case_insensitive else g
        if key not in lut:
            shown = ", ".join(known[:40]) + (f" ... ({len(known)} in all)" if len(known) > 40 else "")
            what = ("is not offered by the providers selected" if g.lower() in everywhere_l
                    else "unknown value")
            raise InputError(field_name, f"'{g}' {what}" if what != "unknown value" else f"unknown value '{g}'", accepted=shown)
        out.append(lut[key])
    return out


def _canonical_gpu_filter(gpus: Iterable[str], offers, all_offers=None) -> list[str]:
    """Map user GPU names ("H100", "a100-80gb") to canonical gpu_model values present in the offers.

    A bare family name (H100, A100, V100) selects every canonical model of that family."""
    known = sorted(set(offers["gpu_model"].dropna().astype(str)))
    out: list[str] = []
    for g in gpus:
        gl = g.strip().lower().replace(" ", "-")
        exact = [k for k in known if k.lower() == gl]
        family = [k for k in known if k.lower().split("-")[0] == gl]
        match = exact or family
        if not match:
            from gpuopt.kernel.records import CANONICAL_GPUS

            every = [] if all_offers is None else sorted(set(all_offers["gpu_model"].dropna().astype(str)))
            if any(k.lower() == gl or k.lower().split("-")[0] == gl for k in CANONICAL_GPUS) and not any(
                    k.lower() == gl or k.lower().split("-")[0] == gl for k in every):
                raise InputError("gpu", f"'{g}' is a known GPU but no provider in the prices offers it", accepted=", ".join(known))
            if any(k.lower() == gl or k.lower().split("-")[0] == gl for k in every):
                raise InputError("gpu", f"'{g}' is not offered by the providers/regions selected", accepted=", ".join(known))
            raise InputError("gpu", f"unknown GPU '{g}'", accepted=", ".join(known))
        out.extend(match)
    return sorted(set(out))


def filter_offers(offers, *, providers=(), regions=(), gpus=(), pricing=()):
    """Filter offers by provider, region, GPU model and pricing model; names are validated against the data.

    Raises InputError naming the field and listing the accepted values."""
    df = offers
    if providers:
        ps = _check_names("provider", providers, df["provider"].unique())
        df = df[df["provider"].isin(ps)]
    if regions:
        rs = _check_names("region", regions, df["region"].unique(), everywhere=offers["region"].unique())
        df = df[df["region"].isin(rs)]
    if gpus:
        gs = _canonical_gpu_filter(gpus, df, offers)
        df = df[df["gpu_model"].isin(gs)]
    if pricing:
        bad = [p for p in pricing if p not in PRICING_MODELS]
        if bad:
            raise InputError("pricing", f"unknown pricing model '{bad[0]}'", accepted=", ".join(PRICING_MODELS))
        df = df[df["pricing"].isin(list(pricing))]
    return df


@dataclass
class PricesResult:
    """Rows of `gpuopt prices list` (offer columns) plus price provenance."""

    rows: list[dict[str, Any]]
    prices: dict[str, Any]
    total_matching: int
    pricing: list[str] = field(default_factory=list)  # the pricing filter asked for (empty: every option)

    def to_dict(self) -> dict[str, Any]:
        """The ``prices-list`` document (gpuopt.schemas.PricesListDoc)."""
        return envelope("prices-list", asdict(self))

    def to_dataframe(self):
        """The offers as a pandas DataFrame, one row per offer, cheapest first."""
        from gpuopt.schemas import OfferRow

        return frame(self.rows, OfferRow)


class StatusResult(DictResult):
    """``prices_status()``: a dict (keys of gpuopt.schemas.PricesStatusDoc); ``to_dataframe()``: each price source
    and the date its prices held (provider, source, as_of, age_days, rows)."""

    kind = "prices-status"
    frame_key = "source_dates"

    @property
    def row_model(self):
        from gpuopt.schemas import SourceDate

        return SourceDate


class ImportResult(DictResult):
    """``prices_import()``: a dict of counts and ``messages``; ``to_dataframe()``: one row per provider's snapshot
    written (provider, file, rows, as_of, added, changed, kept, removed, ...)."""

    kind = "prices-import"
    frame_key = "snapshots"

    @property
    def row_model(self):
        from gpuopt.schemas import ImportedSnapshot

        return ImportedSnapshot


def prices_list(*, gpu: Iterable[str] = (), provider: Iterable[str] = (), region: Iterable[str] = (),
                pricing: Iterable[str] = (), catalog: str | Path | None = None, limit: int | None = None,
                prices_on: str | None = None) -> PricesResult:
    """Offers matching the filters, cheapest effective USD/h first.

    Args: gpu (canonical names or families, e.g. "H100"), provider, region, pricing: filters (validated);
        catalog: a user offers CSV instead of the shipped snapshot; limit: at most this many rows (None: all).
    Raises: InputError for unknown filter values; SnapshotError for a corrupt snapshot.
    """
    offers, info = _load(catalog, _date_or_none(prices_on))
    df = filter_offers(offers, providers=_names(provider), regions=_names(region), gpus=_names(gpu), pricing=_names(pricing))
    df = df.assign(usd_per_gpu_hour=df["usd_per_hour"] / df["gpu_count"])
    df = df.sort_values(["usd_per_hour", "provider", "region", "instance_type", "pricing", "payment"])
    total = len(df)
    if limit is not None:
        df = df.head(limit)
    rows = [{k: (None if (isinstance(v, float) and math.isnan(v)) else v) for k, v in r.items()}
            for r in df.astype(object).where(df.notna(), None).to_dict("records")]
    return PricesResult(rows=rows, prices=_price_provenance(offers, info, catalog, prices_on), total_matching=total,
                        pricing=list(_names(pricing)))


def prices_status(catalog: str | Path | None = None) -> dict[str, Any]:
    """Where the prices come from, how old they are and row counts per provider and pricing model."""
    from pricing_cache.store import snapshot_status

    offers, info = _load(catalog)
    status = snapshot_status() if catalog is None else {"catalog": str(catalog)}
    if "schema_version" in status:  # the snapshot file's version; the document's own is schema_version
        status["snapshot_schema_version"] = status.pop("schema_version")
    prov = _price_provenance(offers, info, catalog)
    counts = offers.groupby(["provider", "pricing"]).size()
    for (p, pr), n in counts.items():
        if n:
            prov["providers"].setdefault(str(p), {}).setdefault("rows_by_pricing", {})[str(pr)] = int(n)
    for p_, ages in rows_by_age(offers).items():  # issue 29: the share of rows by age bucket
        prov["providers"].setdefault(p_, {})["rows_by_age"] = ages
    status["prices"] = prov
    # each source and the date its prices held (issue 9: "prices status shows each source's date and age")
    src = offers["source"].astype(str).str.split(";").str[0].str.split(" ").str[0].str.split("@").str[0]
    src = src.where(~src.str.startswith("rule:"), "rule (estimated)")
    by = offers.assign(_src=src.to_numpy(), _asof=offers["as_of"].astype(str).to_numpy())\
        .groupby(["provider", "_src", "_asof"], observed=True).size()
    status["source_dates"] = [{"provider": str(p), "source": str(s_), "as_of": str(a), "age_days": _price_age_days(a),
                               "rows": int(n)} for (p, s_, a), n in by.items() if n]
    from pricing_cache import cache

    status["cache"] = {
        "dir": str(cache.cache_dir()),
        "retention_days": cache.retention_days(),
        "snapshots": [{"provider": s.provider, "created_at": s.created_at, "as_of": s.as_of, "rows": s.meta.get("rows"),
                       "file": str(s.csv_path), "ok": s.ok, "error": s.error,
                       "regions": s.meta.get("regions"), "skipped": s.meta.get("skipped"),
                       "skipped_total": s.meta.get("skipped_total"), "skipped_file": s.meta.get("skipped_file")}
                      for s in map(cache.verified, cache.list_snapshots())],  # values read too (issue 13)
    }
    return StatusResult(status)


# ---------------------------------------------------------------------------------- refresh / import / diff
def prices_refresh(*, providers: Iterable[str] = (), regions: Iterable[str] = (), profile: str | None = None,
                   gcp_api_key: str | None = None, workers: int = 4, timeout_s: float = 30.0, max_attempts: int = 5,
                   on_event=None, adapters: dict[str, Any] | None = None, endpoints: dict[str, str] | None = None,
                   savings_plans: bool = False, deadline_s: float | None = 1800.0, aws_source: str = "auto"):
    """Fetch current prices from the clouds' APIs into the user cache (pricing_cache.refresh.refresh).

    ``aws_source``: ``api`` (the Pricing, EC2 and Savings Plans APIs: credentials needed), ``bulk`` (the public
    Price List files, no credentials: on-demand, every RI and every Savings Plans rate, no spot -- providers.aws_bulk)
    or ``auto`` (default: ``bulk`` when no AWS credentials are found, and the summary says so).

    ``deadline_s``: the whole refresh's deadline, seconds (default 1800, providers.base.DEFAULT_DEADLINE_S; None:
    none): no API call starts after it and every call's timeouts and retry waits are capped at the time left; the
    regions not done by then are reported as failed "deadline reached after N s" and keep their previous prices (a
    partial refresh: what was fetched is kept).

    Returns a RefreshSummary (``.to_dict()``: per provider status, rows, regions done/failed/skipped, kept
    previous, time). Raises InputError for bad options; SnapshotError if another refresh holds the lock.
    """
    from pricing_cache.refresh import refresh
    from providers.base import FetchOptions

    if workers < 1:
        raise InputError("workers", f"must be at least 1, got {workers}")
    _positive("timeout", timeout_s, "seconds")
    deadline_s = _positive("deadline", deadline_s, "seconds")
    if max_attempts < 1:
        raise InputError("max_attempts", f"must be at least 1, got {max_attempts}")
    import os

    # Endpoint overrides (a private mirror or proxy, and the test doubles): GPUOPT_AZURE_PRICES_URL,
    # GPUOPT_GCP_BILLING_URL; for AWS, botocore's own AWS_ENDPOINT_URL_PRICING / AWS_ENDPOINT_URL_EC2.
    env_endpoints = {k: os.environ[v] for k, v in (("azure", "GPUOPT_AZURE_PRICES_URL"), ("gcp", "GPUOPT_GCP_BILLING_URL"))
                     if os.environ.get(v)}
    from gpuopt.kernel.redact import register

    register(gcp_api_key)  # scrubbed from every message and log line from now on, in every encoding
    opts = FetchOptions(regions=_names(regions) or None, profile=profile, gcp_api_key=gcp_api_key,
                        timeout_s=float(timeout_s), max_attempts=int(max_attempts),
                        endpoints={**env_endpoints, **dict(endpoints or {})}, savings_plans=bool(savings_plans),
                        deadline_s=deadline_s)
    from providers.aws_bulk import choose_adapters

    adapters, why = choose_adapters(aws_source, profile, _names(providers), adapters)
    summary = refresh(_names(providers) or None, opts, max_workers=workers, adapters=adapters, on_event=on_event)
    for p_ in summary.providers:
        if p_.provider == "aws" and why:
            p_.notes.insert(0, why)
    return summary


def prices_import(*, file: str | Path, fmt: str, provider: str | None = None, as_of: str | None = None,
                  replace_region: bool = False) -> dict[str, Any]:
    """Import a price file into the user cache (pricing_cache.importing.import_file): only the offers the file
    carries are replaced unless ``replace_region``; returns the counts added/changed/kept and the messages."""
    from pricing_cache.importing import import_file

    return ImportResult(import_file(file, fmt, provider=provider, as_of=as_of, replace_region=replace_region))


def prices_diff(*, since: str, providers: Iterable[str] = ()):
    """What changed in the prices since a date (pricing_cache.history.diff_since)."""
    from pricing_cache.history import diff_since

    return diff_since(since, _names(providers) or None)


# ------------------------------------------------------------------------------------------- estimate
def _model_spec(model: str | None, params: float | None, active_params: float | None = None,
                experts: int | None = None):
    from optimizer.sizing.specs import model_spec

    return model_spec(model, params, active_params=active_params, experts=experts)


#: Name parts of quantized checkpoints and the serving precision they imply (Hugging Face naming: ``-FP8``,
#: ``-NVFP4``, ``-AWQ-INT4``, ``-GPTQ-Int4``, ``-W8A16``...).
_NAME_PRECISIONS = (("nvfp4", "fp4"), ("fp4", "fp4"), ("fp8", "fp8"), ("int8", "int8"), ("w8a16", "int8"),
                    ("w8a8", "int8"), ("int4", "int4"), ("w4a16", "int4"), ("awq", "int4"), ("gptq", "int4"))
#: (the bit width named first: Qwen2.5-7B-Instruct-GPTQ-Int8 is int8; a bare -AWQ or -GPTQ is 4-bit)


def precision_from_name(model: str | None) -> str | None:
    """The serving precision a quantized checkpoint's name implies (``...-Instruct-FP8`` -> fp8, ``-AWQ-INT4`` ->
    int4), or None."""
    if not model:
        return None
    parts = str(model).rsplit("/", 1)[-1].lower().replace("_", "-").replace(".", "-").split("-")
    for part, prec in _NAME_PRECISIONS:
        if part in parts:
            return prec
    return None


def _workload(spec_like: dict[str, Any]):
    """Build and validate an optimizer.sizing.Workload from plain options."""
    from optimizer.sizing import Workload, validate_workload, with_request_rate

    kw = {k: v for k, v in spec_like.items() if v is not None and k not in ("model_name", "params", "active_params",
                                                                             "experts")}
    kw["model"] = _model_spec(spec_like.get("model_name"), spec_like.get("params"), spec_like.get("active_params"),
                              spec_like.get("experts"))
    w = Workload(**kw)
    validate_workload(w)
    return with_request_rate(w)


def _lower(value, field_name: str):
    """A text option folded to lower case (None stays None); aliases of optimizers resolved."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(field_name, f"must be text, got {value!r}")
    v = value.strip().lower()
    if field_name == "optimizer":
        from optimizer.sizing.training import OPTIMIZER_ALIASES

        v = OPTIMIZER_ALIASES.get(v, v)
    return v


@dataclass
class EstimateResult:
    """What `gpuopt estimate` prints: sizing of one replica of the workload on one GPU model.

    Keys of ``numbers``: memory_gib_per_replica, memory_gib_per_gpu, gpus_per_replica, breakdown_gib,
    tokens_per_second_per_replica and, for train/finetune, train_flops, gpu_hours, wall_hours_one_replica;
    plus replicas_needed / gpus_needed when a demand (tokens/s) or a deadline is given.
    """

    model: str
    task: str
    gpu: str
    numbers: dict[str, Any]
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``estimate`` document (gpuopt.schemas.EstimateDoc)."""
        d = {"model": self.model, "task": self.task, "gpu": self.gpu}
        d.update(self.numbers)
        d["assumptions"] = list(self.assumptions)
        return envelope("estimate", d)

    def to_dataframe(self):
        """One row: the model, task, GPU and every scalar number (nested breakdowns stay in ``to_dict()``)."""
        return frame([{k: v for k, v in self.to_dict().items()
                       if k not in ("schema_version", "kind") and not isinstance(v, (dict, list))}])


def estimate(*, model: str | None = None, params: float | None = None, task: str = "serve", gpu: str = "A100-80GB",
             precision: str | None = None, context_tokens: int | None = None, concurrency: int | None = None,
             tokens_per_second: float | None = None, tokens: float | None = None, deadline_hours: float | None = None,
             zero_stage: int | None = None, tensor_parallel: int | None = None, pipeline_parallel: int | None = None,
             engine: str | None = None, input_tokens: int | None = None, output_tokens: int | None = None,
             scenario: str | None = None, request_rate: float | None = None, ttft_slo_ms: float | None = None,
             tpot_slo_ms: float | None = None, measured: str | Path | None = None,
             trace: str | Path | None = None, micro_batch_size: int | None = None,
             activation_recompute: bool | None = None, mfu: float | None = None, gpus: int | str | None = None,
             global_batch_tokens: float | None = None, optimizer: str | None = None, offload: str | None = None,
             framework: str | None = None, context_parallel: int | None = None,
             expert_parallel: int | None = None, sweep: bool = False, prefix_cache_hit_rate: float | None = None,
             speculative_tokens: int | None = None, acceptance_rate: float | None = None,
             disaggregate: str | None = None, active_params: float | None = None,
             experts: int | None = None) -> EstimateResult:
    """Size one replica of a workload on ``gpu`` (no prices involved). ``sweep`` (serving): also the
    throughput/latency curve per tensor-parallel size and precision (``precision`` may then list several, "bf16,fp8")
    with its Pareto front, in ``numbers["curve"]`` (optimizer.sizing.estimate.latency_curve).

    Args: as ``gpuopt estimate``: model (known name or HF repo, -Instruct/-chat variants accepted) or params (count;
        a mixture of experts with active_params and experts, ``optimizer.sizing.specs.moe_from_params``),
        task serve|train|finetune|lora, gpu (canonical name, e.g. A100-80GB), precision (serve: bf16|fp16|fp8|int8|
        int4|fp4; fp8 needs Ada/Hopper/Blackwell, fp4 Blackwell), context_tokens, concurrency (sequences per
        replica; default: the largest batch that fits memory and the latency targets), tokens_per_second or
        request_rate (serve demand, to count replicas), tokens (train), deadline_hours, zero_stage 0..3.
        Serving: tensor_parallel / pipeline_parallel (default: the smallest replica that serves), engine
        vllm|sglang|tensorrt-llm (default vllm), input_tokens / output_tokens per request (default 1024 / 128),
        scenario chat|interactive|server|offline (default chat: p99 TTFT <= 2,000 ms, TPOT <= 50 ms), ttft_slo_ms /
        tpot_slo_ms (p99 targets, override the scenario's), measured (a CSV/JSON of the user's benchmark results,
        ``optimizer.sizing.serving.load_measurements``), trace (a CSV of requests' input/output tokens: their means are
        the lengths, ``optimizer.sizing.serving.load_trace``), prefix_cache_hit_rate (0 <= h < 1: share of input
        tokens from the prefix cache), speculative_tokens / acceptance_rate (speculative decoding: k draft tokens
        per step, each accepted with that probability), disaggregate off|auto|on (also the best unit of prefill and
        decode replicas on nodes of 8 of the GPU, ``numbers["disaggregated"]``). Training (train/finetune, issue 11;
        ``optimizer.sizing.training``): gpus (the job's GPU count, or "fewest": the fewest that hold it; default: the
        fewest that finish within 30 days, at most 4,096 -- issue 28; of 1, 2, 4, ... 16,384 that
        hold it, or with deadline_hours the fewest that finish in time), tensor_parallel / pipeline_parallel /
        context_parallel / expert_parallel (fix the layout; default searched),
        context_tokens (sequence length), global_batch_tokens (default 4M), micro_batch_size, activation_recompute
        (default: searched), precision bf16|fp16|fp8, optimizer adam|adam8bit|adafactor|sgd, zero_stage 0..3 (default:
        the framework's), offload none|optimizer|params, framework megatron|fsdp|deepspeed (default: megatron for
        train, fsdp for finetune), mfu (your measured MFU, replacing the model's throughput). LoRA keeps
        micro_batch_size, activation_recompute, zero_stage and mfu.
    Returns: EstimateResult; training ``numbers`` has tokens_per_second_per_gpu, mfu, step_time_s,
        memory_gib_per_gpu, gpu_hours, wall_hours, goodput, gpus and layout; serving ``numbers`` has
        tokens_per_second_per_replica, ttft_ms, tpot_ms, concurrency,
        gpus_per_replica, memory_gib_per_replica, tensor_parallel, pipeline_parallel, precision, engine, the targets
        and estimate_source. Raises: InputError naming the field for bad input or when nothing fits.
    """
    from optimizer import sizing
    from optimizer.sizing.specs import load_gpu

    training_only = {"--gpus": gpus, "--global-batch-tokens": global_batch_tokens, "--optimizer": optimizer,
                     "--offload": offload, "--framework": framework, "--context-parallel": context_parallel,
                     "--expert-parallel": expert_parallel}
    if task == "serve":
        training_only["--zero-stage"] = zero_stage
    if task not in ("train", "finetune"):
        extra = [k for k, v in training_only.items() if v is not None]
        if extra:
            raise InputError(extra[0].lstrip("-").replace("-", "_"), f"{extra[0]} is an option of full training; task "
                             f"{task!r} does not use it", accepted="--task train or finetune")
    if task != "serve":
        given = {"--engine": engine, "--concurrency": concurrency, "--tokens-per-second": tokens_per_second,
                 "--input-tokens": input_tokens, "--output-tokens": output_tokens, "--scenario": scenario,
                 "--request-rate": request_rate, "--ttft-ms": ttft_slo_ms, "--tpot-ms": tpot_slo_ms,
                 "--measured": measured, "--trace": trace, "--prefix-cache-hit-rate": prefix_cache_hit_rate,
                 "--speculative-tokens": speculative_tokens, "--acceptance-rate": acceptance_rate,
                 "--disaggregate": disaggregate}
        if task == "lora":
            given.update({"--tensor-parallel": tensor_parallel, "--pipeline-parallel": pipeline_parallel})
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise InputError(extra[0].lstrip("-").replace("-", "_"), f"{extra[0]} is a serving option; task {task!r} "
                             "does not use it", accepted="--task serve")
    else:
        given = {"--micro-batch-size": micro_batch_size, "--activation-recompute": activation_recompute,
                 "--mfu": mfu}
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise InputError(extra[0].lstrip("-").replace("-", "_"), f"{extra[0]} is a training option; task 'serve' "
                             "does not use it", accepted="--task train, finetune or lora")
    if isinstance(precision, str):
        precision = precision.strip().lower()
    sweep_precisions = None
    if sweep:
        if task != "serve":
            raise InputError("sweep", "--sweep draws a serving replica's latency curve", accepted="--task serve")
        if precision and "," in precision:
            sweep_precisions = tuple(dict.fromkeys(p.strip() for p in precision.split(",") if p.strip()))
            precision = sweep_precisions[0]
    name_note = ""
    if precision is None and task == "serve" and precision_from_name(model):
        precision = precision_from_name(model)
        name_note = f"precision {precision} from the checkpoint's name ({model}); --precision to override"
    input_tokens, output_tokens, trace_note, trace_data = trace_lengths(trace, input_tokens, output_tokens)
    if trace_data is not None and trace_data.rate and request_rate is None and tokens_per_second is None:
        request_rate = trace_data.rate  # the trace's own load (issue 27: --trace replays arrival times)
    meas = None
    if measured is not None:
        from optimizer.sizing.serving import load_measurements

        meas = load_measurements(str(measured))
    w = _workload(dict(task=task, model_name=model, params=params, active_params=active_params, experts=experts,
                       precision=precision, context_tokens=context_tokens,
                       concurrency=concurrency, tokens_per_second=tokens_per_second, tokens=tokens,
                       deadline_hours=deadline_hours, zero_stage=zero_stage, engine=engine, input_tokens=input_tokens,
                       output_tokens=output_tokens, scenario=scenario, request_rate=request_rate,
                       ttft_slo_ms=ttft_slo_ms, tpot_slo_ms=tpot_slo_ms, measured=meas,
                       micro_batch_size=micro_batch_size, activation_recompute=activation_recompute, mfu=mfu,
                       global_batch_tokens=global_batch_tokens,
                       optimizer=_lower(optimizer, "optimizer"), offload=_lower(offload, "offload"),
                       framework=_lower(framework, "framework"), prefix_cache_hit_rate=prefix_cache_hit_rate,
                       speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate,
                       disaggregate=_lower(disaggregate, "disaggregate"), length_mix=trace_mix(trace_data)))
    tokens_per_second = w.tokens_per_second
    import dataclasses

    from optimizer.planning.candidates import usable_gpu_memory_gib

    g = load_gpu(gpu)
    g = dataclasses.replace(g, memory_gib=usable_gpu_memory_gib(g.name, None, g.memory_gib))
    nums = dict(sizing.estimate(w, g, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                                gpus=gpus, context_parallel=context_parallel, expert_parallel=expert_parallel))
    assumptions = list(nums.pop("assumptions", []) or [])
    for note in (trace_note, name_note):
        if note:
            assumptions.insert(0, note)
    if task == "serve" and tokens_per_second:
        per = nums["tokens_per_second_per_replica"]
        reps = math.ceil(tokens_per_second / per) if per > 0 else None
        # at the load users send (issue 27): the fewest replicas whose share of the request rate keeps p99 TTFT
        # and TPOT within the targets, and the operating point each runs at (optimizer.sizing.operating)
        rate = tokens_per_second / max(1, nums.get("output_tokens") or 1)
        n, pt = sizing.replicas_at_load(w, g, nums["gpus_per_replica"], nums.get("pipeline_parallel") or 1, rate,
                                        trace=trace_data if trace_data is not None and trace_data.rate else None)
        if pt is not None:
            reps = n
            nums["operating_point"] = {**pt.as_dict(), "replicas": n, "request_rate_total": round(rate, 6)}
            # the replica's own figures at that load, its figures with every slot busy kept beside them
            nums["at_capacity"] = {k: nums[k] for k in ("concurrency", "ttft_ms", "tpot_ms",
                                                        "tokens_per_second_per_replica", "tokens_per_second_per_gpu")}
            # every figure of the table at that load (a fresh user read batch 5 and TPOT 74.9 ms at the load beside
            # the sized batch's 94.8 tokens/s)
            nums.update(concurrency=int(round(pt.batch)), ttft_ms=pt.ttft_ms, tpot_ms=pt.tpot_ms,
                        time_per_output_token_ms=pt.tpot_ms, tokens_per_second_per_replica=pt.tokens_per_second,
                        tokens_per_second_per_gpu=pt.tokens_per_second / max(nums["gpus_per_replica"], 1e-12))
        nums["replicas_needed"] = reps
        nums["gpus_needed"] = None if reps is None else reps * nums["gpus_per_replica"]
    if task == "serve" and w.disaggregate != "off":
        # issue 27 point 5: the best unit of prefill and decode replicas on 8-GPU nodes of this GPU (inside a node
        # over its GPU link, or across nodes over the default InfiniBand network), beside the co-located replica
        from optimizer.sizing.disaggregated import best_unit

        # across nodes only for NVLink-class GPUs (the default InfiniBand cluster); PCIe cards (L4, L40S...) are
        # sold without a cluster fabric: their pools stay inside one 8-GPU node
        unit = best_unit(w, g, sizing.GPUS_PER_NODE,
                         network=sizing.DEFAULT_NODE_NETWORK if g.interconnect == "nvlink" else None)
        if unit is None:
            assumptions.append("disaggregated: no split of prefill and decode replicas on 8-GPU nodes meets the "
                               "targets")
        else:
            gpus = (unit.prefill_replicas + unit.decode_replicas) * unit.gpus_per_replica
            per_gpu = unit.tokens_per_second / gpus
            nums["disaggregated"] = {**unit.as_dict(), "gpus": gpus, "tokens_per_second_per_gpu": per_gpu}
            assumptions.append(unit.describe())
            co = float(nums.get("tokens_per_second_per_gpu") or 0.0)
            assumptions.append(f"disaggregated {per_gpu:,.0f} tokens/s per GPU against {co:,.0f} co-located (this "
                               "replica): " + ("the unit gives more" if per_gpu > co else "co-location gives more")
                               + " per GPU (a plan compares them per offer, with its demand and spares)")
    if sweep:
        nums["curve"], nums["curve_notes"] = sizing.latency_curve(w, g, precisions=sweep_precisions)
    if task == "lora" and deadline_hours and nums.get("gpu_hours"):
        gpus_needed = nums["gpu_hours"] / deadline_hours
        reps = math.ceil(gpus_needed / nums["gpus_per_replica"])
        nums["replicas_needed"] = reps
        nums["gpus_needed"] = reps * nums["gpus_per_replica"]
    return EstimateResult(model=w.model.name, task=task, gpu=g.name, numbers=nums, assumptions=assumptions)


# ------------------------------------------------------------------------------------------ recommend
#: Smallest training job gpuopt plans (tokens): below it the work is a fraction of one step and the MILP's
#: coefficients span more than the solver's tolerances.
MIN_TRAIN_TOKENS = 1e6

#: JSON interface version of ``RecommendResult.to_dict()`` (docs/json-schema.md). 2: horizon, commitments, layout.
SCHEMA_VERSION = VERSIONS["recommend"]  # of the recommend document (docs/json-schema.md)


def _positive(field_name: str, value, unit: str):
    """None, or a finite number > 0 (strings such as "1000" from notebooks are accepted)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(field_name, f"must be a number of {unit}, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(field_name, f"must be a number of {unit}, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(field_name, f"must be a finite number greater than 0 {unit}, got {value!r}")
    return v


def _date_or_none(value):
    if value is None or value == "":
        return None
    from pricing_cache.history import parse_date

    day = parse_date(value, "prices_on")
    if day > _dt.date.today():
        raise InputError("prices_on", f"{day} is in the future: prices of a future date are not known")
    return day


def _names(value) -> list[str]:
    """A filter given as one name or a list of names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


@dataclass
class RecommendResult:
    """What `gpuopt recommend` prints: the workload(s) it planned (and where they came from), the prices it used,
    and the plan with its explanation (optimizer.planning.answer.FleetResult)."""

    workload: dict[str, Any]
    workload_origin: str
    headline: str
    prices: dict[str, Any]
    plan: Any

    @property
    def feasible(self) -> bool:
        return self.plan.feasible

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON interface (docs/json-schema.md, ``schema_version`` 2)."""
        from gpuopt.templating import unproven_caveat, with_not_computed_hints

        p = self.plan
        limit = (self.workload or {}).get("time_limit_s")
        caveat = unproven_caveat(p.status, p.gap, p.total_usd, objective=getattr(p, "objective", "cost"),
                                 time_limit_s=limit, strategies=getattr(p, "strategies", None))
        head = {"schema_version": SCHEMA_VERSION, "kind": "recommend", "status": p.status, "gap": p.gap,
                "proven_optimal": None if not p.feasible else p.status == "optimal", "caveat": caveat,
                "feasible": p.feasible,
                "horizon_months": p.horizon_months, "horizon_note": p.horizon_note, "start_month": p.start_month,
                "total_usd": p.total_usd, "monthly_usd": p.monthly_usd, "commitment_usd": p.commitment_usd,
                "upfront_usd": p.upfront_usd, "headline": self.headline, "workload_origin": self.workload_origin,
                "workload": self.workload, "prices": self.prices}
        body = with_not_computed_hints(p.to_dict(), limit)
        for k in head:
            body.pop(k, None)
        return {**head, **body}

    def to_dataframe(self):
        """The plan's lines as a pandas DataFrame (the keys of ``to_dict()["lines"]``; no rows with no plan)."""
        from gpuopt.schemas import Line

        return frame(self.to_dict()["lines"], Line)


def recommend(request: "PlanRequest | None" = None, /, **keywords: Any) -> RecommendResult:
    """Recommend the cheapest mix of GPU instances for a plan of one or several workloads over a horizon.

    ``recommend(request)`` plans a :class:`gpuopt.request.PlanRequest` (the plan-file schema, built in Python);
    ``recommend(**keywords)`` plans the keywords laid over ``workload`` (a plan file, either format;
    gpuopt.plan_spec), else ``./gpuopt.yaml`` in ``cwd``, else the keywords alone, else the bundled example;
    ``recommend(request, **keywords)`` lays the keywords over the request. Offers come from the shipped snapshot,
    the cache, or ``catalog`` (an offers CSV). One planning model plans it (optimizer.planning), through
    :func:`plan_request`.

    Keywords: every key of the request (the plan-file keys: ``budget``, ``horizon_months``, ``ttft_ms``,
        ``providers``, ``gpus``...; name, type, unit, default and bounds of each: gpuopt.request, or
        docs/schemas/plan-request.schema.json), plus ``workload`` (the plan file, as ``--workload``), ``cwd`` (the
        folder of ``./gpuopt.yaml`` and of relative paths) and ``explain`` (default True: also price the
        strategies, duals and alternatives). The old keyword names (``horizon``, ``ttft_slo_ms``, ``tpot_slo_ms``,
        ``start_month``, ``end_month``, ``spot_capacity``, ``max_instances_per_offer``, ``workload_file``) still work
        with a DeprecationWarning naming the new one (gpuopt.request.DEPRECATED_KEYWORDS).
    Returns: RecommendResult (``feasible`` False with ``plan.reason`` when nothing fits or a budget is short).
    Raises: InputError naming the field for bad input, and for an unknown keyword naming the closest known one;
        SnapshotError for a corrupt snapshot.
    """
    from gpuopt.plan_spec import plan_from_request
    from gpuopt.request import PlanRequest, request_keywords

    options = request_keywords(keywords)
    workload_file, cwd = options.pop("workload", None), options.pop("cwd", None)
    explain = options.pop("explain", True)
    for key, value in (("workload", workload_file), ("cwd", cwd)):
        if value is not None and not isinstance(value, (str, Path)) and not hasattr(value, "__fspath__"):
            raise InputError(key, f"must be a path, got {type(value).__name__}", accepted="a str or os.PathLike")
    if not isinstance(explain, bool):
        raise InputError("explain", f"must be True or False, got {explain!r}", accepted="True, False")
    if options.get("model") and options.get("params"):  # as estimate: one of them names the model
        raise InputError("model", "give either --model or --params, not both")
    if request is None:
        plan = load_plan(options, workload_file, cwd)
    elif not isinstance(request, PlanRequest):
        raise InputError("request", f"must be a gpuopt.request.PlanRequest, got {type(request).__name__} "
                         "(give options as keywords: gpuopt.recommend(budget=..., ...))")
    elif workload_file is not None:
        raise InputError("workload", "give a PlanRequest or a plan file (workload=...), not both")
    else:
        plan = plan_from_request(request, options, base_dir=cwd)
    solver_given = options.get("solver") is not None or (request is not None and "solver" in request.model_fields_set)
    return plan_request(plan, explain=explain, solver_given=bool(solver_given))


def load_plan(options: dict[str, Any], workload_file=None, cwd=None):
    """The PlanFile for these options: over --workload FILE, else ./gpuopt.yaml, else the options alone, else the
    bundled example (gpuopt.plan_spec). Raises InputError naming the key, and the argument a bad value came from
    (``budget: must be a number, got 'abc' (the budget= argument)``), or the file and line."""
    from gpuopt.plan_spec import ARGUMENT, EXAMPLE_WORKLOAD, find_plan_file, load_plan_file, plan_from_options

    path = find_plan_file(workload_file, cwd)
    opts = {k: v for k, v in options.items() if v not in (None, [], ())}
    if path is not None:
        return load_plan_file(path, opts, given_as=ARGUMENT)
    if opts.get("model") is None and opts.get("params") is None:
        plan = load_plan_file(EXAMPLE_WORKLOAD, opts, given_as=ARGUMENT)
        plan._origin = "the bundled example workload (gpuopt/data/example_workload.yaml)"
        return plan
    return plan_from_options(opts, base_dir=cwd, given_as=ARGUMENT)


def print_workload(options: dict[str, Any], workload_file=None, cwd=None) -> str:
    """The plan file (YAML) for the given options over the file they would be planned with (--print-workload)."""
    from gpuopt.plan_spec import plan_to_yaml

    plan = load_plan(options, workload_file, cwd)
    # relative paths are relative to the plan's folder: write them absolute so the printed file works anywhere
    for item in plan.workloads:
        if item.demand_profile:
            item.demand_profile = str(plan.resolve_path(item.demand_profile).resolve())
        ref = plan.model_ref(item)
        if ref and ref != item.model:
            item.model = str(Path(ref).resolve())
    if plan.catalog:
        plan.catalog = str(plan.resolve_path(plan.catalog).resolve())
    return plan_to_yaml(plan)


def plan_offers(plan, offers):
    """The offers a plan may use: its providers, regions, region groups and GPUs, without excluded GPUs and, unless
    ``include_local_zones``, without AWS Local Zones and Wavelength Zones. Returns (offers, notes)."""
    from providers.regions import region_groups_of

    notes = []
    try:
        filtered = filter_offers(offers, providers=plan.providers, regions=plan.regions, gpus=plan.gpus)
    except InputError as exc:  # name the plan's key (gpus, not gpu) and, for a plan file, the file
        from gpuopt.plan_spec import ERROR_FIELD_KEYS

        key = ERROR_FIELD_KEYS.get(exc.field, exc.field)
        raise InputError(key, exc.message + plan.where(key), exc.accepted) from None
    if plan.exclude_gpus:
        try:
            drop = _canonical_gpu_filter(plan.exclude_gpus, offers, offers)
        except InputError as exc:
            raise InputError("exclude_gpus", exc.message + plan.where("exclude_gpus"), exc.accepted) from None
        filtered = filtered[~filtered["gpu_model"].isin(drop)]
    if plan.region_group:
        want = set(plan.region_group)
        keep = [bool(region_groups_of(p, r) & want) for p, r in zip(filtered["provider"], filtered["region"])]
        filtered = filtered[keep]
        if filtered.empty:
            raise InputError("region_group", f"no offer of the providers selected is in {', '.join(sorted(want))}",
                             accepted="us, eu, europe, na, apac, latam, mea")
    if not plan.include_local_zones:
        kinds = _zone_kinds(filtered)
        n = int((kinds != "").sum())
        if n:
            filtered = filtered[(kinds == "").to_numpy()]
            notes.append(f"{n} offers in AWS Local Zones / Wavelength Zones left out (--include-local-zones)")
    return filtered, notes


def _zone_kinds(df):
    """The zone_kind column (local_zone, wavelength or ""), from the offers or, for rows without it, the facts."""
    import pandas as pd

    if "zone_kind" in df.columns:
        return df["zone_kind"].fillna("")
    try:
        from providers.facts import zone_kind_of
    except ImportError:  # pragma: no cover - facts ship with gpuopt
        return pd.Series([""] * len(df), index=df.index)
    return pd.Series([zone_kind_of(p, r, str(z or "")) for p, r, z in zip(df["provider"], df["region"], df["zone"])],
                     index=df.index)


#: Seconds the re-plan that names the cheapest plan honouring a zone spread or residency may take.
HONOURING_TIME_S = 20.0


def _honouring_plan(plan, ws, offers, result, owned, filtered=None) -> None:
    """An infeasible request with ``--spread zones`` or ``--region-group`` and a provider, region or GPU filter
    (issue 26: "an infeasible request names the cheapest plan that honours it"): plan it again with the spread and
    the residency kept and those filters dropped, and add that plan's offers and cost to ``result.plan.reason``
    (``honouring_plan``) and its message. Nothing is added when the re-plan fails too (the message then says so)."""
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import Budgets

    reason = result.reason if isinstance(result.reason, dict) else None  # FleetResult.reason
    if reason is None:
        return
    if plan.spread and filtered is not None and len(filtered):
        from providers.zones import region_has_zones

        pairs = filtered[["provider", "region"]].astype(str).drop_duplicates()
        zoneless = sorted({p_ for p_, r_ in pairs.itertuples(index=False) if not region_has_zones(p_, r_)})
        if zoneless and all(not region_has_zones(p_, r_) for p_, r_ in pairs.itertuples(index=False)):
            reason["message"] = (f"--spread zones: the offers allowed ({', '.join(zoneless)}) are in regions without "
                                 f"availability zones (each region is one location, providers/zones.py); "
                                 + reason["message"])
    wide = plan.model_copy(update={"providers": [], "regions": [], "gpus": []})
    dropped = [f"--{k} {' '.join(v)}" for k, v in (("provider", plan.providers), ("region", plan.regions),
                                                   ("gpu", plan.gpus)) if v]
    rule = " and ".join(x for x in (("--spread zones" if plan.spread else ""),
                                    (f"--region-group {','.join(plan.region_group)}" if plan.region_group else ""))
                        if x)
    try:
        filtered, _ = plan_offers(wide, offers)
        other = plan_fleet(ws, plan.demand_profiles(), filtered, budgets=Budgets(monthly=plan.budget,
                           total=plan.budget_total, upfront=plan.max_upfront, commitment=plan.max_commitment),
                           objective=plan.objective, pricing=tuple(plan.pricing) or None,
                           spot_capacity=_spot_caps(plan), max_instances=plan.max_instances,
                           explain=False, time_limit_s=min(float(plan.time_limit_s), HONOURING_TIME_S),
                           horizon_months=plan.horizon_months, leftover_value=plan.leftover_value,
                           placement=plan.placement, spread=plan.spread or "", quotas=_quotas(plan), owned=owned)
    except InputError:
        other = None
    if other is None or not other.feasible:
        reason["message"] += f"; no offer in the data honours {rule} without {', '.join(dropped)} either"
        return
    where = sorted({f"{ln.provider} {ln.region}".strip() for ln in other.lines})
    shapes = ", ".join(sorted({f"{ln.count:g} {ln.instance_type} {ln.pricing}" for ln in other.lines}))
    reason["honouring_plan"] = {"total_usd": round(float(other.total_usd), 2), "status": other.status,
                                "dropped": dropped, "where": where, "lines": shapes}
    reason["message"] += (f"; the cheapest plan that honours {rule} drops {', '.join(dropped)}: {shapes} in "
                          f"{'; '.join(where)}, ${other.total_usd:,.2f} over the horizon")


def plan_request(plan, *, explain: bool = True, solver_given: bool = False) -> "RecommendResult":
    """Plan a validated request (:func:`_plan_once`); a serving workload with a trace is also planned split into
    pools by prompt length, kept where cheaper (gpuopt.size_mix, issue 27 point 6); one with ``disaggregate`` auto|on
    into prefill and decode pools on their own GPU types, kept where cheaper (gpuopt.phase_mix, point 5)."""
    from gpuopt import phase_mix, size_mix

    split, buckets, notes = size_mix.split_request(plan)
    one = _plan_once(plan, explain=explain, solver_given=solver_given)
    one.plan.notes.extend(notes)
    if split is None:
        return phase_mix.plan_pools(plan, one, _plan_once, explain=explain, solver_given=solver_given)
    mixed = _plan_once(split, explain=False, solver_given=solver_given)
    modes = {it.name: (it.mix_by_size or "auto") for it in plan.workloads}
    chosen = size_mix.choose(one, mixed, buckets, modes)
    if chosen is mixed and explain:  # explain the plan presented
        notes_mixed, table = list(mixed.plan.notes), mixed.plan.size_mix
        chosen = _plan_once(split, explain=True, solver_given=solver_given)
        chosen.plan.notes.extend(n for n in notes_mixed if n not in chosen.plan.notes)
        chosen.plan.size_mix = table
    return phase_mix.plan_pools(plan if chosen is one else split, chosen, _plan_once, explain=explain,
                                solver_given=solver_given)


def _plan_once(plan, *, explain: bool = True, solver_given: bool = False) -> "RecommendResult":
    """Plan a validated request (a gpuopt.request.PlanRequest, as load_plan or plan_spec.plan_from_request return
    it) with the one planning model: the one place where the request's keys become the planner's arguments
    (optimizer.sizing.Workload, optimizer.planning.FleetWorkload and Budgets, and plan_fleet's keywords).

    ``solver_given``: the solver was chosen by the caller (an option); otherwise the default cbc lets the planner
    pick (``auto``)."""
    from optimizer.planning import progress
    from optimizer.planning.plan import plan_fleet
    from optimizer.planning.problem import Budgets, FleetWorkload
    from optimizer.planning.rate_guards import cap_estimated_commitments, request_scope, unpriced_options
    from optimizer.sizing import Workload, validate_workload

    progress.update("reading the request and prices")
    ws = []
    for i, item in enumerate(plan.workloads):
        implied = precision_from_name(item.model) if item.task == "serve" and not item.precision else None
        precisions = tuple((item.precision or implied or "").split(",")) if (item.precision or implied) else ()
        kw = dict(task=item.task, precision=precisions[0] if precisions else None,
                  context_tokens=item.context_tokens, concurrency=item.concurrency, zero_stage=item.zero_stage)
        if item.task == "serve":
            kw["tokens_per_second"] = (item.tokens_per_second or 1.0) if item.request_rate is None else \
                item.request_rate * item.output_length()
            kw.update(engine=item.engine, input_tokens=item.input_tokens, output_tokens=item.output_tokens,
                      scenario=item.scenario, ttft_slo_ms=item.ttft_ms, tpot_slo_ms=item.tpot_ms,
                      precision_options=precisions if len(precisions) > 1 else None,
                      prefix_cache_hit_rate=item.prefix_cache_hit_rate, speculative_tokens=item.speculative_tokens,
                      acceptance_rate=item.acceptance_rate, disaggregate=item.disaggregate,
                      serve_phase=item.serve_phase)
            if item.trace:
                from optimizer.sizing.buckets import size_buckets
                from optimizer.sizing.serving import load_trace

                try:
                    t = load_trace(str(plan.resolve_path(item.trace)))
                except InputError as exc:
                    raise InputError(plan.field_path(i, "trace"), exc.message, exc.accepted) from None
                kw.update(input_tokens=t.mean_input, output_tokens=t.mean_output,
                          length_mix=tuple((b.share, b.mean_input, b.mean_output) for b in size_buckets(t.lengths)))
                if item.request_rate is not None:
                    kw["tokens_per_second"] = item.request_rate * t.mean_output
            if item.measured:
                from optimizer.sizing.serving import load_measurements

                try:
                    kw["measured"] = load_measurements(str(plan.resolve_path(item.measured)))
                except InputError as exc:
                    raise InputError(plan.field_path(i, "measured"), exc.message, exc.accepted) from None
        elif len(precisions) > 1:
            raise InputError(plan.field_path(i, "precision"), f"a {item.task} workload has one precision, not "
                             f"{item.precision}", "bf16, fp16, fp8")
        else:
            if item.tokens < MIN_TRAIN_TOKENS:
                raise InputError(plan.field_path(i, "tokens"),
                                 f"{item.tokens:g} tokens is too little to plan (at least {MIN_TRAIN_TOKENS:g})")
            kw["tokens"] = item.tokens
            kw["deadline_hours"] = item.deadline_hours
            if item.task != "lora":
                from optimizer.sizing.training import OPTIMIZER_ALIASES

                kw.update(framework=item.framework, offload=item.offload, global_batch_tokens=item.global_batch_tokens,
                          optimizer=OPTIMIZER_ALIASES.get(item.optimizer, item.optimizer) if item.optimizer else None)
        if item.lora_rank is not None:
            kw["lora_rank"] = item.lora_rank
        kw = {k: v for k, v in kw.items() if v is not None}
        try:
            w = Workload(model=_model_spec(plan.model_ref(item), item.params, item.active_params, item.experts), **kw)
            validate_workload(w)
        except InputError as exc:  # name the workload's key in the plan file
            msg = str(exc).split(": ", 1)[-1] if str(exc).startswith(exc.field + ":") else str(exc)
            key = {"ttft_slo_ms": "ttft_ms", "tpot_slo_ms": "tpot_ms"}.get(exc.field, exc.field)
            raise InputError(plan.field_path(i, key), msg.split(" (accepted:")[0], exc.accepted) from None
        start, end = item.month_window()
        ws.append(FleetWorkload(name=item.name, workload=w, allow_spot=item.allow_spot,
                                min_replicas=item.min_replicas or 0, spot_only_ok=item.spot_only_ok,
                                redundancy=float(item.redundancy or 0.0) if item.task == "serve" else 0.0,
                                allow_marketplace=item.allow_marketplace,
                                mixed_replicas=item.mixed_replicas and item.task == "serve",
                                min_replica_share=float(item.min_replica_share) if item.mixed_replicas else 0.0,
                                allow_spot_training=item.allow_spot_training,
                                schedule_margin=plan.schedule_margin if item.training else 0.0,
                                deadline_hours=item.deadline_hours, value_per_million_tokens=item.value_per_million_tokens,
                                value_usd=item.value_usd, start_month=start, end_month=end, region=item.region_key()))
    catalog = str(plan.resolve_path(plan.catalog)) if plan.catalog else None
    # text columns as categoricals: selecting rows of a big catalog 30x faster (records.as_categories)
    offers, info = _load(catalog, _date_or_none(plan.prices_on), categories=True)
    check_regions(plan, offers)
    filtered, notes = plan_offers(plan, offers)
    # issue 31: an estimated commitment rate never undercuts a quote anywhere in the data; an option asked for that
    # no offer in scope prices is said (in the notes and, below, the warnings)
    filtered, _ = cap_estimated_commitments(filtered, offers)
    unpriced = unpriced_options(plan.pricing, filtered, request_scope(plan))
    notes = unpriced + notes
    owned, owned_notes = owned_commitments(plan, filtered, offers)
    notes = notes + owned_notes
    rate_notes: dict[str, str] = {}
    if owned:
        from optimizer.planning.owned import owned_offers

        filtered = owned_offers(filtered, owned, offers, rate_notes)
    # the GPUs some provider sells, for an infeasible plan's "it would fit on" (optimizer.diagnose)
    filtered.attrs["catalog_gpus"] = set(offers["gpu_model"].astype(str).unique())
    log.info("plan: %d workload(s) %s over %d of %d offers after the plan's filters; solver %s, time limit %s s",
             len(ws), ", ".join(w.name for w in ws), len(filtered), len(offers), plan.solver, plan.time_limit_s)
    budgets = Budgets(monthly=plan.budget, total=plan.budget_total, upfront=plan.max_upfront,
                      commitment=plan.max_commitment)
    result_quotas = _quotas(plan)
    result = plan_fleet(ws, plan.demand_profiles(), filtered, budgets=budgets, objective=plan.objective,
                        pricing=tuple(plan.pricing) or None, spot_capacity=_spot_caps(plan),
                        max_instances=plan.max_instances, explain=explain,
                        solver="auto" if not solver_given and plan.solver == "cbc" else plan.solver,
                        time_limit_s=plan.time_limit_s, horizon_months=plan.horizon_months,
                        leftover_value=plan.leftover_value, placement=plan.placement, spread=plan.spread or "",
                        quotas=result_quotas, owned=owned)
    log.info("plan: status %s, total %s USD, solver %s", result.status, result.total_usd, result.solver)
    notes = notes + _quota_region_notes(result_quotas, offers)
    if not result.feasible and (plan.spread or plan.region_group) and (plan.providers or plan.regions or plan.gpus):
        _honouring_plan(plan, ws, offers, result, owned, filtered)
    result.notes.extend(notes)
    # the rates an owned savings plan's use is counted at: only for one the plan runs on (a breaker read "not used"
    # and "its use is counted at on-demand rates" side by side)
    result.notes.extend(n for cid, n in rate_notes.items() if cid in result.owned_used)
    result.notes.extend(checkpoint_notes(ws, result, [it.model for it in plan.workloads]))
    result.notes.extend(expert_layout_notes(ws, result))
    result.notes.extend(mixed_replica_notes(ws, result))
    old_quotes = _old_quotes(result.lines, plan.prices_on)
    result.notes.extend(old_quotes)
    for item in plan.workloads:
        ignored = item.ignored_fields()
        if ignored:
            result.notes.append(f"ignored for {item.name} (task {item.task}): {', '.join(ignored)}")
    parts = ", ".join(f"{w.name}: {w.workload.task} {w.workload.model.name}" +
                      (f" {plan.workloads[i].tokens_per_second:g} tokens/s" if w.workload.task == "serve"
                       and plan.workloads[i].tokens_per_second else "")
                      for i, w in enumerate(ws))
    origin = plan.origin if plan.origin else "command-line options"
    headline = f"Plan of {len(ws)} workload{'s' if len(ws) > 1 else ''} ({parts}) from {origin}"
    prices = _price_provenance(filtered if len(filtered) else offers, info, catalog, plan.prices_on)
    oldest = oldest_price_note(result.lines, plan.prices_on)  # issue 29: the oldest price the plan depends on
    if oldest:
        result.notes.append(oldest)
    prices["warnings"].extend(unpriced + old_quotes + ([oldest] if oldest else []))  # on stderr too, in the JSON
    return RecommendResult(workload=plan.model_dump(mode="json"), workload_origin=origin, headline=headline,
                           prices=prices, plan=result)


# ------------------------------------------------------------------------------------------------- review
def _lookback_days(value) -> float | None:
    """"30d", "720h", "4w" or a number of days -> days (None: the whole export)."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    units = {"d": 1.0, "h": 1.0 / 24.0, "w": 7.0}
    try:
        days = float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)
    except (ValueError, IndexError):
        raise InputError("lookback", f"not a duration: {value!r}", accepted="30d, 720h, 4w or a number of days") from None
    if not math.isfinite(days) or days < 1.0 / 24.0 or days > 3 * 366:
        raise InputError("lookback", f"must be between 1 hour and 3 years, got {value!r}")
    return days


def review(*, usage: str | Path, usage_format: str = "auto", lookback: str | float | None = None, term: str = "1y",
           payment: str = "no_upfront", solver: str = "cbc", scope: str = "shared", window: tuple | None = None):
    """The monthly cost review of GPU spend (optimizer.review): read a billing export (FOCUS 1.0-1.2, AWS CUR 2.0,
    Azure cost details, or hourly usage from the warehouse SQL), price it with the prices in effect during the
    usage period, and recommend commitments with the same MILP as ``recommend``.

    Args: usage: the export (CSV, CSV.gz, Parquet file or folder); usage_format: auto or a format name;
        lookback: "30d" / "720h" / days; term: 1y | 3y; payment: no_upfront | partial_upfront | all_upfront;
        scope: shared (pooled over accounts) | account (one recommendation per account).
        window: (start, end) of an ``hourly`` file without window_start / window_end columns (dates or ISO times,
        UTC, end exclusive; providers.usage.read_usage): every hour of it counts as covered.
        The window is the export's coverage, or the lookback counted back from its end (optimizer.review.review_window).
    Returns: optimizer.review.ReviewResult. Raises: InputError naming the field for bad input.
    """
    from optimizer.review import review as run_review
    from providers.usage import read_usage

    p = Path(usage)
    if not p.exists():
        raise InputError("usage", f"not found: {p}")
    import pandas as pd

    days = _lookback_days(lookback)
    data = read_usage(p, fmt=usage_format, lookback_days=days, window=window)
    log.info("review: %s read as %s: %d rows, %d GPU compute, %d bad; coverage %s to %s", p, data.source_format,
             data.rows_read, len(data.hourly), len(data.bad_rows), data.coverage_start, data.coverage_end)
    if data.hourly.empty:
        raise InputError("usage", f"{p.name}: no GPU compute usage found ({data.rows_read} rows read, "
                                  f"{data.rows_not_gpu} not GPU, {len(data.bad_rows)} bad)")
    # the window follows the data (optimizer.review.review_window): the export's coverage, or the lookback counted
    # back from its end; never padded to calendar months
    end_day = pd.Timestamp(data.coverage_end).date()
    offers, info = _load(None, min(end_day, _dt.date.today()))
    prices = _price_provenance(offers, info, None, prices_on=end_day)
    # an hourly file's window (its own window_start/window_end, or --window) is the review's window unless a
    # lookback cuts it: rows that stop before its end are warned as missing data (not idle), not silently trimmed
    own = (data.period_start, data.period_end) if data.source_format == "hourly" and days is None else None
    result = _with_focus(run_review(data, offers, term=term, payment=payment, lookback_days=days, prices=prices,
                                    solver=solver, scope=scope, window=own))
    used = {u for u in data.hourly["provider"].astype(str).unique()}
    # warnings about the prices of providers the export does not use are noise for this review
    others = (set(prices.get("providers", {})) | set(offers["provider"].astype(str).unique())) - used
    prices["warnings"] = [w for w in prices.get("warnings", []) if w.split(":", 1)[0].strip() not in others]
    later = sorted(p for p, v in prices["providers"].items() if p in used and v.get("as_of") and v["as_of"] > end_day.isoformat())
    if later:
        result.notes.append(f"no price snapshot from the usage period for {', '.join(later)}: priced with prices valid "
                            f"later (the shipped snapshot); `gpuopt prices import --as-of` a price file of that month "
                            "for the prices then in effect")
    return result


def review_charges(result):
    """FOCUS charges of a review (gpuopt.focus.review_charges, which this names for older callers)."""
    from gpuopt.focus import review_charges as charges

    return charges(result)


class ReviewResult(_PlannedReview):
    """What ``review()`` returns: optimizer.review.ReviewResult plus ``focus_charges()``, its FOCUS charges
    (gpuopt.focus.review_charges), which the planning layer does not build (FOCUS is a report, a layer above)."""

    def focus_charges(self):
        """FOCUS charges of the reviewed fleet with the recommended commitments (gpuopt.focus.review_charges)."""
        return review_charges(self)


def _with_focus(result) -> ReviewResult:
    from dataclasses import fields

    return ReviewResult(**{f.name: getattr(result, f.name) for f in fields(result) if f.init})


def diff(old: str | Path, new: str | Path):
    """What changed between two plans written by ``gpuopt recommend --format json`` (``gpuopt diff``).

    Returns: gpuopt.plan_diff.PlanDiff (``.money``: total_usd, max_month_usd, commitment_usd, upfront_usd as (old,
        new, change, change %); ``.lines``: purchases added, removed or changed; ``.to_dict()``).
    Raises: InputError("old" | "new") for a file that is missing, not JSON or not a plan.
    """
    from gpuopt.plan_diff import diff_plans, load_plan_json

    return diff_plans(load_plan_json(old, "old"), load_plan_json(new, "new"), old_name=str(old), new_name=str(new))
