"""The workload file (``gpuopt.yaml``) and where a workload comes from.

Precedence, resolved here in one place: options given to ``recommend`` (CLI or Python) override the file;
the file is ``--workload FILE`` when given; else ``./gpuopt.yaml`` when the current directory has one; else,
when neither ``--model`` nor ``--params`` is given, the bundled example (``gpuopt/data/example_workload.yaml``,
documented key by key); else no file (the options alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuopt.errors import InputError
from gpuopt.records import PRICING_MODELS

#: Keys of the workload file, each the name of a `recommend` option (see the bundled example).
WORKLOAD_KEYS = (
    "name", "task", "model", "params", "precision", "context_tokens", "concurrency", "tokens_per_second",
    "tokens", "deadline_hours", "zero_stage", "allow_spot", "providers", "regions", "gpus", "pricing", "budget",
)
LIST_KEYS = ("providers", "regions", "gpus", "pricing")
TASKS = ("serve", "train", "finetune", "lora")

EXAMPLE_WORKLOAD = Path(__file__).parent / "data" / "example_workload.yaml"
LOCAL_WORKLOAD_NAME = "gpuopt.yaml"


@dataclass
class WorkloadSpec:
    """A workload as the user states it (before sizing). Field units: tokens_per_second in generated tokens/s
    for the whole fleet, tokens in training tokens, deadline_hours in hours, budget in USD per month."""

    name: str | None = None
    task: str | None = None
    model: str | None = None
    params: float | None = None
    precision: str | None = None
    context_tokens: int | None = None
    concurrency: int | None = None
    tokens_per_second: float | None = None
    tokens: float | None = None
    deadline_hours: float | None = None
    zero_stage: int | None = None
    allow_spot: bool | None = None
    providers: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    pricing: list[str] = field(default_factory=list)
    budget: float | None = None
    origin: str = "command-line options"

    def merged(self, overrides: dict[str, Any]) -> "WorkloadSpec":
        """A copy with every non-None (non-empty for lists) value of ``overrides`` applied."""
        data = {k: getattr(self, k) for k in WORKLOAD_KEYS}
        for k, v in overrides.items():
            if k not in WORKLOAD_KEYS:
                raise InputError(k, "is not a workload option", accepted=", ".join(WORKLOAD_KEYS))
            if v is None or (k in LIST_KEYS and not v):
                continue
            data[k] = list(v) if k in LIST_KEYS else v
        out = WorkloadSpec(**data, origin=self.origin)
        return out

    def describe(self) -> str:
        what = self.model or (f"{self.params:.3g} parameters" if self.params else "?")
        demand = ""
        if self.task == "serve" and self.tokens_per_second is not None:
            demand = f", {self.tokens_per_second:g} tokens/s"
        elif self.tokens is not None:
            demand = f", {self.tokens:.3g} tokens"
            if self.deadline_hours:
                demand += f" within {self.deadline_hours:g} h"
        label = f"'{self.name}' " if self.name else ""
        return f"Workload {label}({self.task}, {what}{demand}) from {self.origin}"


def _num(key: str, value: Any, kind=float, positive: bool = True):
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(key, f"must be a number, got {value!r}")
    try:
        v = kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        raise InputError(key, f"must be a number, got {value!r}") from None
    if kind is int and float(value) != int(float(value)):
        raise InputError(key, f"must be a whole number, got {value!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise InputError(key, f"must be a finite number, got {value!r}")
    if positive and v <= 0:
        raise InputError(key, f"must be greater than 0, got {value!r}")
    return v


def parse_workload(data: Any, origin: str) -> WorkloadSpec:
    """Validate a workload mapping (parsed YAML) into a WorkloadSpec.

    Raises InputError naming the first bad key (unknown keys, wrong types, bad task or pricing names)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("workload", f"{origin} must be a mapping of keys to values, got {type(data).__name__}",
                         accepted=", ".join(WORKLOAD_KEYS))
    unknown = [k for k in data if k not in WORKLOAD_KEYS]
    if unknown:
        raise InputError(str(unknown[0]), f"unknown key in {origin}", accepted=", ".join(WORKLOAD_KEYS))
    spec = WorkloadSpec(origin=origin)
    for k in LIST_KEYS:
        v = data.get(k) or []
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise InputError(k, f"must be a list of names in {origin}")
        setattr(spec, k, list(v))
    spec.name = None if data.get("name") is None else str(data["name"])
    spec.task = None if data.get("task") is None else str(data["task"])
    spec.model = None if data.get("model") is None else str(data["model"])
    spec.precision = None if data.get("precision") is None else str(data["precision"])
    spec.params = _num("params", data.get("params"))
    spec.context_tokens = _num("context_tokens", data.get("context_tokens"), int)
    spec.concurrency = _num("concurrency", data.get("concurrency"), int)
    spec.tokens_per_second = _num("tokens_per_second", data.get("tokens_per_second"))
    spec.tokens = _num("tokens", data.get("tokens"))
    spec.deadline_hours = _num("deadline_hours", data.get("deadline_hours"))
    spec.zero_stage = _num("zero_stage", data.get("zero_stage"), int, positive=False)
    spec.budget = _num("budget", data.get("budget"))
    if data.get("allow_spot") is not None:
        if not isinstance(data["allow_spot"], bool):
            raise InputError("allow_spot", f"must be true or false in {origin}", accepted="true, false")
        spec.allow_spot = data["allow_spot"]
    return spec


def load_workload_file(path: str | Path, origin: str | None = None) -> WorkloadSpec:
    """Read and validate a YAML workload file. Raises InputError (field ``workload``) if missing or not YAML."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise InputError("workload", f"file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except ValueError as exc:  # an unquoted impossible date (2024-13-01) fails inside PyYAML's date constructor
        raise InputError("workload", f"{p}: {exc} (quote dates, e.g. \"2024-06-01\")") from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        raise InputError("workload", f"{p} is not valid YAML{where}") from None
    return parse_workload(data, origin or str(p))


def resolve_workload(options: dict[str, Any], workload_file: str | Path | None, cwd: str | Path | None = None) -> WorkloadSpec:
    """Resolve where the workload comes from (module docstring) and apply the options over it."""
    local = Path(cwd or Path.cwd()) / LOCAL_WORKLOAD_NAME
    if workload_file is not None:
        if Path(workload_file).is_dir():
            raise InputError("workload", f"{workload_file} is a directory, not a YAML file")
        base = load_workload_file(workload_file)
    elif local.is_file():
        base = load_workload_file(local, origin=f"./{LOCAL_WORKLOAD_NAME}")
    elif options.get("model") is None and options.get("params") is None:
        base = load_workload_file(EXAMPLE_WORKLOAD, origin="the bundled example workload (gpuopt/data/example_workload.yaml)")
    else:
        base = WorkloadSpec(origin="command-line options")
    if base.origin != "command-line options" and any(
            v not in (None, [], ()) for k, v in options.items() if k != "budget" or base.budget is not None):
        base.origin += " with command-line options over it"
    if options.get("model") is not None and base.params is not None:
        base.params = None  # --model replaces the file's parameter count
    if options.get("params") is not None and base.model is not None:
        base.model = None  # and --params replaces the file's model
    spec = base.merged(options)
    if spec.task is None:
        spec.task = "serve"
    spec.task = spec.task.lower()
    if spec.precision:
        spec.precision = spec.precision.lower()
    if spec.task not in TASKS:
        raise InputError("task", f"unknown task '{spec.task}'", accepted=", ".join(TASKS))
    bad = [p for p in spec.pricing if p not in PRICING_MODELS]
    if bad:
        raise InputError("pricing", f"unknown pricing model '{bad[0]}'", accepted=", ".join(PRICING_MODELS))
    return spec
