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

The schema itself (every key's type, unit, default and bounds, and its option) is ``gpuopt.request.PlanRequest``:
this module reads, lays options over and writes plan files; ``PlanFile`` is another name of ``PlanRequest``.

``EXAMPLE_WORKLOAD`` is the bundled single-workload example planned when no file and no model is given.
"""

from __future__ import annotations

import contextlib
import copy
import re
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from gpuopt.kernel.errors import InputError
from gpuopt.request import (ACCEPTED, CLI_OPTIONS, DEMAND_KEYS, EXAMPLE_WORKLOAD, FILE_ONLY, ITEM_KEYS,  # noqa: F401
                            KEY_DOCS, LOCAL_WORKLOAD_NAME, PLAN_KEYS, TASKS, TRAINING_TASKS, PlanRequest, WorkloadItem,
                            show_value, validation_message)

#: The plan file's schema (the request model; the old name).
PlanFile = PlanRequest


def find_plan_file(workload_file: str | Path | None, cwd: str | Path | None = None) -> Path | None:
    """The plan file ``recommend`` reads: ``workload_file`` (``--workload``) if given, else ``./gpuopt.yaml`` in
    ``cwd`` (default: the current folder) if there is one, else None."""
    if workload_file is not None:
        return Path(workload_file)
    local = Path(cwd or Path.cwd()) / LOCAL_WORKLOAD_NAME
    return local if local.is_file() else None


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


#: How an error names a value given as an argument of the Python API (``recommend(budget="abc")``) rather than read
#: from the plan file: "budget: must be a number, got 'abc' (the budget= argument)". The CLI names the option instead
#: (:func:`named_as_options`).
ARGUMENT = "the {key}= argument"


def mark_given(lines: dict[tuple, Any], options: Mapping[str, Any], given_as: str | None) -> dict[tuple, Any]:
    """``lines`` (key path -> line of the plan file) with every key ``options`` set (None and empty lists are "not
    given") mapped to ``given_as.format(key=key)`` instead: its line and the lines under it in the file are dropped,
    so an error on the value names where the value came from (the argument), not the file line it replaced.
    Unchanged when ``given_as`` is None."""
    if given_as is None:
        return lines
    out = dict(lines)
    for k, v in options.items():
        if v is None or (isinstance(v, (list, tuple)) and not v):
            continue
        path = (k,) if k in PLAN_KEYS else ("workloads", 0, k)
        for p in [p for p in out if p[:len(path)] == path]:
            del out[p]
        out[path] = given_as.format(key=k)
    return out


def _raise_validation(exc: ValidationError, origin: str, lines: dict[tuple, Any], single: bool) -> None:
    err = exc.errors(include_url=False)[0]
    loc, msg, accepted = validation_message(err, single)
    line = None
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            line = lines[loc[:n]]
            break
    shown = loc[2:] if single and loc[:2] == ("workloads", 0) else loc
    if isinstance(line, str):  # a value given as an argument (mark_given), not read from the file
        where = f" ({line})"
    else:
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


def load_plan_file(path: str | Path, options: Mapping[str, Any] | None = None,
                   given_as: str | None = None) -> PlanFile:
    """Read and validate a plan file (either shape, module docstring), with ``options`` laid over its keys.

    Also reads every demand profile it names (``PlanFile.demand_profiles``) and checks they share one grid.
    Raises InputError: field ``workload`` for a missing file, a folder or bad YAML; else the dotted path of the
    first bad key, the message naming the file and line -- or, for a key of ``options`` when ``given_as`` is set
    (:data:`ARGUMENT`), naming the argument it came from instead (:func:`mark_given`)."""
    from gpuopt.kernel.inputs import read_text

    p = Path(path)
    text = read_text(p, "workload", "YAML file")
    data, lines = _compose(text, str(p))
    data, lines, single = _normalize(data, str(p), lines)
    if options:
        data = apply_options(data, options)
        lines = mark_given(lines, options, given_as)
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
        # the option, not the file line it replaced nor the API argument, is where the value came from
        msg = exc.message.removesuffix(f" ({ARGUMENT.format(key=key)})")
        msg = re.sub(r" \((?:[^()]|\([^()]*\))*, line \d+\)$", "", msg)
        raise InputError(option.split("/")[0], msg, exc.accepted) from None


def plan_from_options(options: Mapping[str, Any], base_dir: str | Path | None = None,
                      given_as: str | None = None) -> PlanFile:
    """A one-workload plan from ``recommend`` options alone (keys of ``CLI_OPTIONS``); paths relative to
    ``base_dir`` (default: the current folder). ``given_as`` (:data:`ARGUMENT`): errors name the argument."""
    data = apply_options({}, options)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    plan = _validate(data, "", base, mark_given({}, options, given_as), single=True)
    plan._origin = "command-line options"
    return plan


def plan_from_request(request: PlanRequest, options: Mapping[str, Any] | None = None,
                      base_dir: str | Path | None = None) -> PlanRequest:
    """A request built in Python (``gpuopt.recommend(PlanRequest(...))``), checked as a plan file is, with
    ``options`` (its keys) laid over the keys it was given; paths relative to ``base_dir`` (default: the current
    folder). Raises InputError naming the key."""
    data = apply_options(request.model_dump(mode="python", exclude_unset=True), options or {})
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    plan = _validate(data, "", base, mark_given({}, options or {}, ARGUMENT), single=False)
    plan._origin = "a PlanRequest"
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
    if isinstance(v, dict):  # a flow mapping (spot_capacity_by_gpu: {H100-80GB: 4})
        return "{" + ", ".join(f"{_scalar(k)}: {_scalar(x)}" for k, x in v.items()) + "}"
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
