"""The `gpuopt` command line: thin commands over gpuopt.api, rendered by gpuopt.render.

Every command parses its options, makes one call into the API and renders the result. Domain errors become
one line on stderr and exit code 1 (never a traceback); usage errors (an unknown option or command, a missing
argument or option) exit 2 (see :func:`main`). ``--format`` is the output format in every command.
Heavy libraries (pandas, pulp, boto3) are imported inside the commands, so `gpuopt --help` stays fast.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuopt.kernel.inputs import check_name_length, third_party_silenced  # light: json, math, re, pathlib

app = typer.Typer(
    name="gpuopt",
    help="Which cloud GPU instances to run, where, how many, for how long and on which pricing model "
         "(on-demand, reserved 1y/3y, spot) for your ML workloads, from real cloud prices.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
prices_app = typer.Typer(help="Inspect, refresh, import and compare the GPU prices gpuopt plans with.",
                         no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(prices_app, name="prices")

FORMATS = ("table", "json")
#: recommend (and review) also write FinOps outputs to a file: FOCUS 1.2 CSV, Markdown or HTML reports.
FILE_FORMATS = ("focus", "markdown", "html")


def _version(value: bool):
    if value:
        from gpuopt import __version__

        typer.echo(f"gpuopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                 help="Print the version and exit.")] = False,
          quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only results and errors: no warnings, "
                                              "notes or progress bars on stderr.")] = False,
          verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="Log what gpuopt does on stderr "
                                               "(-v: info, -vv: debug).")] = 0,
          no_color: Annotated[bool, typer.Option("--no-color", help="No colors or styles (also: the NO_COLOR "
                                                 "environment variable, https://no-color.org).")] = False):
    """Which cloud GPU instances to run, where, how many, for how long and on which pricing model
    (on-demand, reserved 1y/3y, spot) for your ML workloads, from real cloud prices."""
    from gpuopt.kernel.errors import InputError

    if quiet and verbose:
        _STATE["format"] = "table"
        _fail(str(InputError("quiet", "--quiet and --verbose contradict each other", accepted="one of them")), 2,
              "usage", "quiet")
    _STATE["quiet"], _STATE["verbose"] = quiet, verbose
    _INPUTS.clear()  # each command names the files it reads
    _INPUT_DIRS.clear()
    from gpuopt import render

    render.QUIET, render.NO_COLOR = quiet, no_color
    if verbose:
        import logging

        logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO, stream=sys.stderr,
                            format="gpuopt: %(levelname)s: %(name)s: %(message)s")
        from gpuopt.kernel.redact import install_log_filter

        install_log_filter()  # urllib3 and botocore log request URLs: keys never reach the log (issue 13)


def _isatty(stream) -> bool:
    """``stream.isatty()``, False for a stream without one (a test's capture)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


#: --quiet / --verbose / --format of the command being run (set by the root callback and by _boundary).
_STATE: dict = {"quiet": False, "verbose": 0, "format": "table"}


def _note(message: str) -> None:
    """An informational line on stderr ("wrote ... to FILE"); --quiet silences it (never an error)."""
    if not _STATE["quiet"]:
        typer.echo(message, err=True)


def _error_type(exc) -> tuple[str, int]:
    """(type, exit code) of a gpuopt error: 1 bad input / no plan, 3 a price source or the network failed."""
    from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError, SnapshotError, SolverError

    if isinstance(exc, InputError):
        return "input", 1
    if isinstance(exc, PriceDataError):  # a price file or row that breaks an invariant: the input is at fault
        return "input", 1
    if isinstance(exc, ProviderError):
        return "provider", 3
    if isinstance(exc, SnapshotError):
        return "snapshot", 1
    if isinstance(exc, SolverError):
        return "solver", 1
    return "error", 1


#: Characters str.splitlines breaks a line at, and their escapes (an error message is one line).
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def _fail(message: str, code: int, kind: str, field: str | None = None, accepted: str | None = None,
          prefix: str = "gpuopt: error: ") -> None:
    """Report a failure: one line on stderr, or with --format json one ``error`` document (gpuopt.schemas.ErrorDoc)
    on stderr; then exit with ``code``. Secrets are scrubbed from the message (gpuopt.kernel.redact)."""
    from gpuopt.kernel.redact import scrub

    # one line whatever the user typed: a line break inside a value (--gpu $'a\nb') is shown escaped
    message = scrub(message).translate(_LINE_BREAKS)
    if _STATE["format"] == "json":
        import json

        from gpuopt.schemas import envelope

        if field:  # the option's name as a key: "--budget" and "budget" alike are "budget"
            field = str(field).lstrip("-").replace("-", "_")
        doc = envelope("error", {"exit_code": code, "error": {"type": kind, "message": message, "field": field,
                                                              "accepted": accepted}})
        typer.echo(json.dumps(doc), err=True)
    else:
        typer.echo(f"{prefix}{message}", err=True)
    raise typer.Exit(code)


@contextlib.contextmanager
def _boundary(fmt: str | None = None, aliases: dict[str, str] | None = None):
    """Turn gpuopt's own errors into one line on stderr (a JSON error document with --format json) and the exit
    code of gpuopt.schemas.EXIT_CODES (1 bad input, 3 a price source or the network)."""
    from gpuopt.kernel.errors import GpuoptError

    if fmt is not None:
        _STATE["format"] = fmt
        from gpuopt import render

        # --format json: stderr holds nothing but an error document (the warnings are in the JSON on stdout)
        render.JSON_STDERR = fmt == "json"
    try:
        with third_party_silenced(fmt == "json"):  # issue 33: azure-identity's warnings before the JSON error
            _check_numbers()
            yield
    except GpuoptError as exc:
        exc = _named_as_option(exc, aliases)
        kind, code = _error_type(exc)
        _fail(str(exc), code, kind, getattr(exc, "field", None), getattr(exc, "accepted", None))


def _named_as_option(exc, aliases: dict[str, str] | None = None):
    """README Habits: an error names the input its value came from. An InputError on a field that is an option of
    the running command the user typed (``gpu`` -> ``--gpu``; ``aliases`` maps other field names to a parameter,
    e.g. the export reader's ``format`` to review's ``usage_format``) is named by that option. File options are
    left alone: their errors name the file (and line) the bad value is in."""
    from gpuopt.kernel.errors import InputError

    if not isinstance(exc, InputError) or not exc.field or exc.field.startswith("-"):
        return exc
    click = _click()
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return exc
    name = (aliases or {}).get(exc.field, exc.field)
    for param in ctx.command.params:
        if param.name != name or getattr(param, "param_type_name", None) != "option":
            continue
        value = ctx.params.get(name)
        if any(isinstance(v, Path) for v in (value if isinstance(value, (list, tuple)) else (value,))):
            return exc  # a file option: the error names the file
        if ctx.get_parameter_source(name) != click.core.ParameterSource.COMMANDLINE:
            return exc
        option = max(param.opts, key=len)  # the long spelling
        return InputError(option, exc.message, exc.accepted)
    return exc


def _click():
    """click's package: vendored by typer >= 0.29 (typer._click), click itself before (as main() explains)."""
    import importlib

    click_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    pkg = importlib.import_module(click_error.__module__.rsplit(".", 1)[0])
    for sub in ("core", "globals"):
        importlib.import_module(f"{pkg.__name__}.{sub}")
    pkg.get_current_context = pkg.globals.get_current_context
    return pkg


def _check_numbers() -> None:
    """Every number option of the command being run is finite and within +-gpuopt.kernel.inputs.MAX_QUANTITY (1e15):
    ``--tokens-per-second inf`` or ``--budget nan`` is refused naming the option, before any command-specific check
    (click reads "inf" and "nan" as floats). Raises InputError(option)."""
    import math

    from gpuopt.kernel.errors import InputError
    from gpuopt.kernel.inputs import MAX_QUANTITY

    ctx = _click().globals.get_current_context(silent=True)
    if ctx is None:
        return
    output, fmt = ctx.params.get("output"), ctx.params.get("fmt")
    if output is not None:  # before any work (a fuzzer's find: a missing folder was found after it, under warnings)
        if fmt != "focus":  # a .parquet output needs --format focus
            _not_parquet(output, f"--format {fmt or 'table'}")
        out = check_name_length(output)
        if out.is_dir():
            raise InputError("output", f"{output} is a folder; give a file name")
        if not out.parent.is_dir():
            raise InputError("output", f"folder {out.parent} does not exist")
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        for x in value if isinstance(value, (list, tuple)) else (value,):
            if not isinstance(x, float) or (math.isfinite(x) and abs(x) <= MAX_QUANTITY):
                continue
            name = next((o for o in param.opts if o.startswith("--")), param.name)
            if not math.isfinite(x):
                raise InputError(name, f"must be a finite number, got {x:g}")
            raise InputError(name, f"must be from {-MAX_QUANTITY:g} to {MAX_QUANTITY:g}, got {x:g}")


#: The files the command being run reads (--usage, --workload, --catalog, ...): never written over by an output.
_INPUTS: list[Path] = []
#: The folders it reads whole (a --usage folder of Parquet parts): no output goes inside one.
_INPUT_DIRS: list[Path] = []


def _inputs(*paths) -> None:
    """Remember the files (and folders) this command reads, so that no output (or a report's CSV/JSON beside it)
    replaces one or lands in one."""
    _INPUTS.clear()
    _INPUT_DIRS.clear()
    for p in paths:
        if not p:
            continue
        p = Path(p).absolute()
        (_INPUT_DIRS if p.is_dir() else _INPUTS).append(p.resolve() if p.is_dir() else p)


def _plan_file_inputs(workload) -> list[Path]:
    """The files a plan file names (demand_profile, catalog, measured, trace; relative to its folder), read by
    recommend: protected from --output like the options' files."""
    from gpuopt.plan_spec import find_plan_file

    path = find_plan_file(workload)
    if path is None or not Path(path).is_file():
        return []
    from gpuopt.kernel.errors import GpuoptError
    from gpuopt.kernel.inputs import load_yaml, read_text

    try:  # the bounded reader: an alias bomb or deep nesting must not hang or crash here either
        doc, _ = load_yaml(read_text(path, "workload", "YAML file"), str(path))
    except GpuoptError:  # the plan's own reader reports a bad file, with its line
        return [Path(path)]
    found = [Path(path)]
    stack, seen = [doc], set()
    while stack:  # each value once (aliases share them), without recursion
        x = stack.pop()
        if not isinstance(x, (dict, list)) or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, list):
            stack.extend(x)
            continue
        for k, v in x.items():
            if k in ("demand_profile", "catalog", "measured", "trace", "quota", "owned") and isinstance(v, str) \
                    and v.strip():
                q = Path(v).expanduser()
                found.append(q if q.is_absolute() else Path(path).parent / q)
            else:
                stack.append(v)
    return found


def _not_an_input(*outputs: Path) -> None:
    """InputError("output") when an output would replace a file the command reads (a report's CSV beside it named
    like the billing export it reviews, a plan JSON over the plan file...)."""
    from gpuopt.kernel.errors import InputError

    reads = {p.resolve() for p in _INPUTS if p.exists()}
    for out in outputs:
        if Path(out).absolute().resolve() in reads:
            raise InputError("output", f"{out} is a file this command reads; writing there would replace it: give "
                                       "--output another name")


def _public(path: Path) -> None:
    """A temporary file is created 0600; the output gets the mode a new file gets under the umask (0644 usually)."""
    mask = os.umask(0)
    os.umask(mask)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666 & ~mask)


def _check_output(output: Path, option: str = "--output") -> Path:
    """The absolute path of a file ``option`` writes (--output, --owned-out), or InputError (field: the option
    without its dashes) for a folder, a missing folder or one of the inputs."""
    from gpuopt.kernel.errors import InputError

    field = option.lstrip("-").replace("-", "_")
    out = check_name_length(output, option)
    try:
        if out.is_symlink() and not _special(out):  # a link to a file: write the file it points at (renaming
            out = Path(os.path.realpath(out))      # over the link would replace it); /dev/stdout is written through
        if out.is_dir():
            raise InputError(field, f"{output} is a folder; give a file name")
        if not out.parent.is_dir():
            raise InputError(field, f"folder {out.parent} does not exist")
    except OSError as exc:  # a path too long in all, a loop of links
        raise _cannot_write(out, exc, field) from None
    _not_an_input(out)
    for d in _INPUT_DIRS:  # a file written into a --usage folder would be read as part of the export next time
        if d in out.resolve().parents:
            raise InputError(field, f"{output} is inside the folder {d} this command reads; give {option} "
                                    "another folder")
    return out


def _not_parquet(output: Path, what: str) -> None:
    """InputError("output") when ``output`` ends .parquet/.pq but ``what`` is text (issue 30: ``--format json`` or
    ``markdown`` wrote text into a .parquet file and exited 0): only --format focus writes Parquet."""
    from gpuopt.focus import PARQUET_SUFFIXES
    from gpuopt.kernel.errors import InputError

    if Path(output).suffix.lower() in PARQUET_SUFFIXES:
        raise InputError("output", f"{output}: a {Path(output).suffix} file is Parquet, but {what} is text; only "
                                   "--format focus (recommend, review) writes Parquet -- use it, or another suffix "
                                   "(.json, .csv, .txt)", accepted="--format focus with .parquet/.pq")


def _special(out: Path) -> bool:
    """An existing output that is not a regular file (/dev/null, /dev/stdout, a FIFO): written through, not
    replaced."""
    return out.exists() and not out.is_file()


def _cannot_write(out: Path, exc: OSError, field: str = "output"):
    from gpuopt.kernel.errors import InputError

    return InputError(field, f"cannot write {out}: {exc.strerror or exc}")


@contextlib.contextmanager
def _stdout_to(output: Path | None):
    """Send what the command prints on stdout to ``output`` (--output), written whole or not at all: a temporary file
    beside it is renamed over it when the command succeeds (an error leaves a previous file as it was, and no
    temporary file). InputError("output") for a folder, a missing folder, an input of the command, or a file or
    folder that cannot be written."""
    if output is None:
        yield
        return
    import tempfile

    _not_parquet(output, "this output")
    out = _check_output(output)
    if _special(out):
        try:
            with open(out, "w", encoding="utf-8") as f, contextlib.redirect_stdout(f):
                yield
        except OSError as exc:
            raise _cannot_write(out, exc) from None
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    except OSError as exc:
        raise _cannot_write(out, exc) from None
    ok = False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f, contextlib.redirect_stdout(f):
            yield
        _public(Path(tmp))
        try:
            os.replace(tmp, out)
        except OSError as exc:
            raise _cannot_write(out, exc) from None
        ok = True
    finally:
        if not ok:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _note(f"wrote {out}")


def _write_whole(output: Path, write) -> list[Path]:
    """Write a file and the files beside it (a report's CSV, JSON and charts) whole or not at all: ``write(path)``
    writes them into a temporary folder next to ``output``; only when it succeeded is each moved into place. Returns
    the files written. InputError("output") as :func:`_stdout_to`, and when a file to write is a folder."""
    import shutil
    import tempfile

    from gpuopt.kernel.errors import InputError

    out = _check_output(output)
    special = _special(out)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".gpuopt-output.")) if special else \
            Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise _cannot_write(out, exc) from None
    try:
        write(tmp / out.name)
        made = sorted(tmp.iterdir())
        if special:  # /dev/stdout, a FIFO: the one file is written through; files beside it have nowhere to go
            if len(made) != 1:
                raise InputError("output", f"{output} is not a regular file, and this format writes files beside "
                                           "its output: give a file name")
            with open(made[0], "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            return [out]
        targets = [out.parent / f.name for f in made]
        _not_an_input(*targets)
        for t in targets:
            if t.is_dir():
                raise InputError("output", f"{t} (written beside {out.name}) is a folder; give --output another name")
        for f, t in zip(made, targets):
            _public(f)
            os.replace(f, t)
        return targets
    except OSError as exc:
        raise _cannot_write(out, exc) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check_format(fmt: str, extra: tuple[str, ...] = ()) -> str:
    from gpuopt.kernel.errors import InputError

    if fmt not in FORMATS + extra:
        raise InputError("--format", f"unknown format '{fmt}'", accepted=", ".join(FORMATS + extra))
    return fmt


def _write_file_format(result, fmt: str, output: Path | None) -> None:
    """--format focus|markdown|html: write the FinOps output and say where (FOCUS CSV to stdout without --output;
    Parquet to a .parquet/.pq file). Files are written whole or not at all (:func:`_write_whole`)."""
    if fmt == "focus":
        from gpuopt.focus import charges_from_plan, focus_csv_text, focus_rows, write_focus

        rows = focus_rows(charges_from_plan(result) if not hasattr(result, "focus_charges") else result.focus_charges())
        if output is None:
            typer.echo(focus_csv_text(rows), nl=False)
        else:
            _write_whole(output, lambda p: write_focus(rows, p))
            plan = getattr(result, "plan", None)
            span = (f" covering the {plan.horizon_months}-month horizon from {plan.start_month}"
                    if getattr(plan, "horizon_months", None) else "")
            _note(f"wrote {len(rows)} FOCUS 1.2 rows{span} to {output}")
        return
    from gpuopt.kernel.errors import InputError

    if output is None:
        raise InputError("output", f"--format {fmt} writes a file: give --output PATH (e.g. report.{'md' if fmt == 'markdown' else 'html'})")
    _not_parquet(output, f"the {fmt} report")
    if hasattr(result, "plan"):
        from gpuopt.report import render_report

        _write_whole(output, lambda p: render_report(result, fmt, p))
        _note(f"wrote the {fmt} report to {output} (with its CSV and JSON beside it)")
    else:
        from gpuopt.review_report import render_review_report

        _write_whole(output, lambda p: render_review_report(result, fmt, p))
        _note(f"wrote the {fmt} review to {output} (with its CSV and JSON beside it)")


FormatOpt = Annotated[str, typer.Option("--format", "-f", help="Output: 'table' (for people) or 'json' (for programs); recommend also 'focus' (FOCUS 1.2 CSV), 'markdown', 'html' (reports, with --output).")]
OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the output to this file instead of stdout (written whole, or not at all on failure).")]
CatalogOpt = Annotated[Optional[Path], typer.Option("--catalog", help="Plan over your own offers CSV (the columns of docs/architecture.md) instead of the shipped snapshot.")]


def _help(key: str) -> str:
    """The help of the `recommend` option of a request key, from its field (gpuopt.request.cli_help): one text,
    one default, for the flag, the plan file's comment and the JSON Schema."""
    from gpuopt.request import cli_help

    return cli_help(key)


@app.command()
def recommend(
    budget: Annotated[Optional[float], typer.Option(help=_help("budget"))] = None,
    budget_total: Annotated[Optional[float], typer.Option("--budget-total", help=_help("budget_total"))] = None,
    max_upfront: Annotated[Optional[float], typer.Option("--max-upfront", help=_help("max_upfront"))] = None,
    max_commitment: Annotated[Optional[float], typer.Option("--max-commitment", help=_help("max_commitment"))] = None,
    horizon: Annotated[Optional[int], typer.Option("--horizon", help=_help("horizon_months"))] = None,
    leftover_value: Annotated[Optional[float], typer.Option("--leftover-value", help=_help("leftover_value"))] = None,
    schedule_margin: Annotated[Optional[float], typer.Option("--schedule-margin", help=_help("schedule_margin"))] = None,
    placement: Annotated[Optional[str], typer.Option("--placement", help=_help("placement"))] = None,
    region_group: Annotated[Optional[list[str]], typer.Option("--region-group", help=_help("region_group"))] = None,
    spread: Annotated[Optional[str], typer.Option("--spread", help=_help("spread"))] = None,
    include_local_zones: Annotated[Optional[bool], typer.Option("--include-local-zones", help=_help("include_local_zones"))] = None,
    start_month: Annotated[Optional[int], typer.Option("--start-month", help=_help("start"))] = None,
    end_month: Annotated[Optional[int], typer.Option("--end-month", help=_help("end"))] = None,
    months: Annotated[Optional[int], typer.Option("--months", help=_help("months"))] = None,
    model: Annotated[Optional[str], typer.Option(help=_help("model"))] = None,
    params: Annotated[Optional[float], typer.Option(help=_help("params"))] = None,
    task: Annotated[Optional[str], typer.Option(help=_help("task"))] = None,
    tokens_per_second: Annotated[Optional[float], typer.Option("--tokens-per-second", help=_help("tokens_per_second"))] = None,
    tokens: Annotated[Optional[float], typer.Option(help=_help("tokens"))] = None,
    deadline_hours: Annotated[Optional[float], typer.Option("--deadline-hours", help=_help("deadline_hours"))] = None,
    precision: Annotated[Optional[str], typer.Option(help=_help("precision"))] = None,
    request_rate: Annotated[Optional[float], typer.Option("--request-rate", help=_help("request_rate"))] = None,
    engine: Annotated[Optional[str], typer.Option("--engine", help=_help("engine"))] = None,
    input_tokens: Annotated[Optional[int], typer.Option("--input-tokens", help=_help("input_tokens"))] = None,
    output_tokens: Annotated[Optional[int], typer.Option("--output-tokens", help=_help("output_tokens"))] = None,
    scenario: Annotated[Optional[str], typer.Option("--scenario", help=_help("scenario"))] = None,
    ttft_ms: Annotated[Optional[float], typer.Option("--ttft-ms", help=_help("ttft_ms"))] = None,
    tpot_ms: Annotated[Optional[float], typer.Option("--tpot-ms", help=_help("tpot_ms"))] = None,
    measured: Annotated[Optional[Path], typer.Option("--measured", help=_help("measured"))] = None,
    trace: Annotated[Optional[Path], typer.Option("--trace", help=_help("trace"))] = None,
    prefix_cache_hit_rate: Annotated[Optional[float], typer.Option("--prefix-cache-hit-rate", help=_help("prefix_cache_hit_rate"))] = None,
    speculative_tokens: Annotated[Optional[int], typer.Option("--speculative-tokens", help=_help("speculative_tokens"))] = None,
    acceptance_rate: Annotated[Optional[float], typer.Option("--acceptance-rate", help=_help("acceptance_rate"))] = None,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", help=_help("disaggregate"))] = None,
    mix_by_size: Annotated[Optional[str], typer.Option("--mix-by-size", help=_help("mix_by_size"))] = None,
    context: Annotated[Optional[int], typer.Option("--context", help=_help("context_tokens"))] = None,
    concurrency: Annotated[Optional[int], typer.Option(help=_help("concurrency"))] = None,
    zero_stage: Annotated[Optional[int], typer.Option("--zero-stage", help=_help("zero_stage"))] = None,
    framework: Annotated[Optional[str], typer.Option("--framework", help=_help("framework"))] = None,
    optimizer: Annotated[Optional[str], typer.Option("--optimizer", help=_help("optimizer"))] = None,
    offload: Annotated[Optional[str], typer.Option("--offload", help=_help("offload"))] = None,
    global_batch_tokens: Annotated[Optional[float], typer.Option("--global-batch-tokens", help=_help("global_batch_tokens"))] = None,
    gpu: Annotated[Optional[list[str]], typer.Option("--gpu", help=_help("gpus"))] = None,
    provider: Annotated[Optional[list[str]], typer.Option("--provider", help=_help("providers"))] = None,
    region: Annotated[Optional[list[str]], typer.Option("--region", help=_help("regions"))] = None,
    pricing: Annotated[Optional[list[str]], typer.Option("--pricing", help=_help("pricing"))] = None,
    allow_spot: Annotated[Optional[bool], typer.Option("--allow-spot/--no-spot", help=_help("allow_spot"))] = None,
    workload: Annotated[Optional[Path], typer.Option("--workload", help="Workload YAML file (default: ./gpuopt.yaml, else the bundled example).")] = None,
    catalog: Annotated[Optional[Path], typer.Option("--catalog", help=_help("catalog"))] = None,
    max_instances: Annotated[Optional[int], typer.Option("--max-instances", help=_help("max_instances"))] = None,
    quota: Annotated[Optional[Path], typer.Option("--quota", help=_help("quota"))] = None,
    owned: Annotated[Optional[Path], typer.Option("--owned", help=_help("owned"))] = None,
    prices_on: Annotated[Optional[str], typer.Option("--prices-on", help=_help("prices_on"))] = None,
    objective: Annotated[Optional[str], typer.Option("--objective", help=_help("objective"))] = None,
    exclude_gpu: Annotated[Optional[list[str]], typer.Option("--exclude-gpu", help=_help("exclude_gpus"))] = None,
    demand_profile: Annotated[Optional[str], typer.Option("--demand-profile", help=_help("demand_profile"))] = None,
    blocks: Annotated[Optional[int], typer.Option("--blocks", help=_help("blocks"))] = None,
    min_replicas: Annotated[Optional[int], typer.Option("--min-replicas", help=_help("min_replicas"))] = None,
    redundancy: Annotated[Optional[str], typer.Option("--redundancy", help=_help("redundancy"))] = None,
    allow_marketplace: Annotated[Optional[bool], typer.Option("--allow-marketplace", help=_help("allow_marketplace"))] = None,
    mixed_replicas: Annotated[Optional[bool], typer.Option("--mixed-replicas", help=_help("mixed_replicas"))] = None,
    min_replica_share: Annotated[Optional[float], typer.Option("--min-replica-share", help=_help("min_replica_share"))] = None,
    allow_spot_training: Annotated[Optional[bool], typer.Option("--allow-spot-training", help=_help("allow_spot_training"))] = None,
    spot_only_ok: Annotated[Optional[bool], typer.Option("--spot-only-ok", help=_help("spot_only_ok"))] = None,
    value_per_million_tokens: Annotated[Optional[float], typer.Option("--value-per-million-tokens", help=_help("value_per_million_tokens"))] = None,
    value_usd: Annotated[Optional[float], typer.Option("--value-usd", help=_help("value_usd"))] = None,
    spot_capacity: Annotated[Optional[int], typer.Option("--spot-capacity", help=_help("spot_capacity_per_offer"))] = None,
    spot_capacity_gpu: Annotated[Optional[list[str]], typer.Option("--spot-capacity-gpu", help=_help("spot_capacity_by_gpu"))] = None,
    lora_rank: Annotated[Optional[int], typer.Option("--lora-rank", help=_help("lora_rank"))] = None,
    name: Annotated[Optional[str], typer.Option("--name", help=_help("name"))] = None,
    print_workload: Annotated[bool, typer.Option("--print-workload", help="Print the workload file for these options (YAML) and exit.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the output to this file instead of stdout (needed by --format markdown and html; --format focus writes Parquet to a .parquet file, else CSV).")] = None,
    explain: Annotated[bool, typer.Option("--explain/--no-explain", help="Also price the strategies, duals, per-provider alternatives and demand sensitivity (more solves).")] = True,
    solver: Annotated[Optional[str], typer.Option(help=_help("solver"))] = None,
    time_limit: Annotated[Optional[float], typer.Option("--time-limit", help=_help("time_limit_s"))] = None,
    fmt: FormatOpt = "table",
):
    """Recommend the cheapest mix of GPU instances and purchase options for one or several workloads over a horizon."""
    from gpuopt.plan_spec import named_as_options

    # a path typed on the command line is relative to the current folder (a plan file's own paths: to its folder)
    if demand_profile and not Path(demand_profile).is_absolute():
        demand_profile = str(Path(demand_profile).absolute())
    if catalog is not None and not Path(catalog).is_absolute():
        catalog = Path(catalog).absolute()
    opts = dict(
        budget=budget, model=model, params=params, task=task, tokens_per_second=tokens_per_second,
        tokens=tokens, deadline_hours=deadline_hours, precision=precision, context_tokens=context,
        concurrency=concurrency, zero_stage=zero_stage, gpus=gpu or [], providers=provider or [],
        regions=region or [], pricing=pricing or [], allow_spot=allow_spot,
        catalog=None if catalog is None else str(catalog), max_instances=max_instances,
        quota=None if quota is None else str(Path(quota).absolute()),
        owned=None if owned is None else str(Path(owned).absolute()), prices_on=prices_on,
        objective=objective, exclude_gpus=exclude_gpu or [], demand_profile=demand_profile, blocks=blocks,
        min_replicas=min_replicas, redundancy=redundancy, allow_marketplace=allow_marketplace,
        mixed_replicas=mixed_replicas, min_replica_share=min_replica_share,
        allow_spot_training=allow_spot_training, spot_only_ok=spot_only_ok, value_per_million_tokens=value_per_million_tokens,
        value_usd=value_usd, spot_capacity_per_offer=spot_capacity, spot_capacity_by_gpu=spot_capacity_gpu, lora_rank=lora_rank, name=name,
        solver=solver, time_limit_s=time_limit, budget_total=budget_total, max_upfront=max_upfront,
        max_commitment=max_commitment, horizon_months=horizon, leftover_value=leftover_value,
        schedule_margin=schedule_margin,
        placement=placement, region_group=region_group or [], spread=spread,
        include_local_zones=include_local_zones, start=start_month, end=end_month, months=months,
        request_rate=request_rate, engine=engine, input_tokens=input_tokens, output_tokens=output_tokens,
        scenario=scenario, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
        measured=None if measured is None else str(Path(measured).absolute()),
        trace=None if trace is None else str(Path(trace).absolute()), framework=framework, optimizer=optimizer,
        offload=offload, global_batch_tokens=global_batch_tokens, prefix_cache_hit_rate=prefix_cache_hit_rate,
        speculative_tokens=speculative_tokens, acceptance_rate=acceptance_rate, disaggregate=disaggregate,
        mix_by_size=mix_by_size)
    from gpuopt.plan_spec import find_plan_file

    # every key is an option when no plan file is read (neither --workload nor ./gpuopt.yaml)
    every = find_plan_file(workload) is None
    _inputs(workload, catalog, demand_profile, measured, trace, quota, owned, *_plan_file_inputs(workload))
    with _boundary(fmt), named_as_options(opts, every=every, extra={"format": "--format"}):
        _check_format(fmt, FILE_FORMATS)
        if output is not None:
            _not_an_input(output)  # before planning, not after it
            if fmt != "focus":
                _not_parquet(output, f"--format {fmt}")
        from gpuopt import api, render

        if print_workload:
            typer.echo(api.print_workload(opts, workload), nl=False)
            return
        from optimizer.planning import progress

        # a progress line on stderr once the plan runs 2 s (phase, best, bound, gap): rewritten in place on a
        # terminal, a line every 10 s into a file; never with --quiet, nor into a non-terminal stderr with
        # --format json/csv (stderr is then for an error document)
        shown = not _STATE["quiet"] and (_isatty(sys.stderr) or fmt == "table")
        with progress.reporting(sys.stderr) if shown else contextlib.nullcontext():
            result = api.recommend(**opts, workload=workload, explain=explain)
        render.warnings(result.prices)
        if fmt in FILE_FORMATS and (result.feasible or fmt in ("markdown", "html")):
            _write_file_format(result, fmt, output)  # a report of no plan says why (FOCUS has no rows to write)
        else:
            with _stdout_to(output if fmt not in FILE_FORMATS else None):
                render.recommend(result, "table" if fmt in FILE_FORMATS else fmt)
        if not result.feasible:
            reason = (result.plan.reason or {}).get("message", result.plan.status)
            if result.plan.status == "not_solved":  # stopped at a limit, nothing proven: not "no plan" (issue 33)
                _fail(reason, 5, "not_solved", prefix="gpuopt: ")
            _fail(f"no plan: {reason}", 1, "no_plan", prefix="gpuopt: ")


@app.command()
def estimate(
    model: Annotated[Optional[str], typer.Option(help="Model name or Hugging Face repo, e.g. meta-llama/Llama-2-7b-hf.")] = None,
    params: Annotated[Optional[float], typer.Option(help="Parameter count, for a model not in the table.")] = None,
    active_params: Annotated[Optional[float], typer.Option("--active-params", help="With --params: a mixture of experts' parameters used per token (e.g. 22e9); needs --experts.")] = None,
    experts: Annotated[Optional[int], typer.Option("--experts", help="With --params: routed experts per layer of a mixture of experts (e.g. 128); needs --active-params.")] = None,
    task: Annotated[str, typer.Option(help="serve, train, finetune or lora.")] = "serve",
    gpu: Annotated[str, typer.Option(help="GPU model, e.g. A100-80GB, H100-80GB, L4.")] = "A100-80GB",
    gpus: Annotated[Optional[str], typer.Option("--gpus", help="Training: GPUs of the job, 1-16384, or 'fewest' (the fewest that hold it). Default: the fewest (1, 2, 4, 8, then power-of-two nodes) that finish within 30 days, at most 4,096; with --deadline-hours the fewest (1, 2, 4, ... powers of two) that finish in time.")] = None,
    tokens: Annotated[Optional[float], typer.Option(help="Training: tokens to process (e.g. 2e12).")] = None,
    tokens_per_second: Annotated[Optional[float], typer.Option("--tokens-per-second", help="Serving demand, to count replicas.")] = None,
    deadline_hours: Annotated[Optional[float], typer.Option("--deadline-hours", help="Training deadline, to count GPUs.")] = None,
    precision: Annotated[Optional[str], typer.Option(help="Serving: bf16, fp16, fp8 (Ada/Hopper/Blackwell), int8, int4 (weight-only), fp4 (Blackwell). Training: bf16, fp16, fp8 (Hopper/Ada/Blackwell).")] = None,
    context: Annotated[Optional[int], typer.Option("--context", help="Serving: the context window (vLLM max_model_len: one sequence of it must fit the KV cache); training: sequence length.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="Serving: sequences per replica (default: the largest batch that fits memory and the latency targets).")] = None,
    request_rate: Annotated[Optional[float], typer.Option("--request-rate", help="Serving demand in requests/s (Poisson): the latency at that load and the replicas whose p99 meets the targets.")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="Serving: the throughput/latency curve per tensor-parallel size and precision (--precision bf16,fp8 for several) with its Pareto front.")] = False,
    chart: Annotated[Optional[Path], typer.Option("--chart", help="With --sweep: draw the curve to this PNG file.")] = None,
    tensor_parallel: Annotated[Optional[int], typer.Option("--tensor-parallel", help="GPUs one layer is split over, inside one node (default: serving the smallest replica that serves; training searched).")] = None,
    pipeline_parallel: Annotated[Optional[int], typer.Option("--pipeline-parallel", help="Pipeline stages (default: serving 1 per node; training searched).")] = None,
    engine: Annotated[Optional[str], typer.Option("--engine", help="Serving engine: vllm (V1, 0.8 and later; default), vllm-v0 (before 0.8), sglang, tensorrt-llm.")] = None,
    input_tokens: Annotated[Optional[int], typer.Option("--input-tokens", help="Serving: mean prompt tokens per request (default 1024).")] = None,
    output_tokens: Annotated[Optional[int], typer.Option("--output-tokens", help="Serving: mean generated tokens per request (default 128).")] = None,
    scenario: Annotated[Optional[str], typer.Option("--scenario", help="Serving: chat (p99 TTFT <= 2 s, TPOT <= 50 ms; default), interactive (450 ms, 40 ms), server (MLPerf's 2 s, 200 ms) or offline (no target).")] = None,
    ttft_ms: Annotated[Optional[float], typer.Option("--ttft-ms", help="Serving: p99 time-to-first-token target, ms (overrides the scenario's).")] = None,
    tpot_ms: Annotated[Optional[float], typer.Option("--tpot-ms", help="Serving: p99 time-per-output-token target, ms (overrides the scenario's).")] = None,
    measured: Annotated[Optional[Path], typer.Option("--measured", help="Serving: a CSV/JSON of your own benchmark results (vLLM benchmark_serving, GenAI-Perf) that corrects the model.")] = None,
    trace: Annotated[Optional[Path], typer.Option("--trace", help="Serving: a CSV of requests (input_tokens, output_tokens): their means are the lengths.")] = None,
    prefix_cache_hit_rate: Annotated[Optional[float], typer.Option("--prefix-cache-hit-rate", help="Serving: share 0..1 of input tokens served from the prefix cache (less prefill work; default 0).")] = None,
    speculative_tokens: Annotated[Optional[int], typer.Option("--speculative-tokens", help="Serving: speculative decoding, draft tokens per step (0-16; needs --acceptance-rate).")] = None,
    acceptance_rate: Annotated[Optional[float], typer.Option("--acceptance-rate", help="Serving: probability a draft token is accepted (your measurement or assumption).")] = None,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", help="Serving: off (default), on or auto: also size a unit of prefill and decode replicas (KV over the GPUs' link or the node network) on 8-GPU nodes of this GPU.")] = None,
    zero_stage: Annotated[Optional[int], typer.Option("--zero-stage", help="Training: ZeRO stage 0-3 (default: the framework's; Megatron 1, FSDP/DeepSpeed 3).")] = None,
    micro_batch_size: Annotated[Optional[int], typer.Option("--micro-batch-size", help="Training: sequences per GPU per micro-batch (default: searched; lora 1).")] = None,
    activation_recompute: Annotated[Optional[bool], typer.Option("--activation-recompute/--no-activation-recompute", help="Training: full activation checkpointing (default: searched; lora on).")] = None,
    mfu: Annotated[Optional[float], typer.Option("--mfu", help="Training: your measured MFU, 0-1, replacing the model's throughput.")] = None,
    global_batch_tokens: Annotated[Optional[float], typer.Option("--global-batch-tokens", help="Training: tokens per optimizer step (default 4M, Llama 2's).")] = None,
    context_parallel: Annotated[Optional[int], typer.Option("--context-parallel", help="Training: GPUs a sequence is split over (default: searched for long sequences).")] = None,
    expert_parallel: Annotated[Optional[int], typer.Option("--expert-parallel", help="Training, MoE: GPUs the experts are spread over (default: searched).")] = None,
    optimizer: Annotated[Optional[str], typer.Option("--optimizer", help="Training: adam (default), adam8bit, adafactor, sgd.")] = None,
    offload: Annotated[Optional[str], typer.Option("--offload", help="Training: none (default), optimizer (ZeRO-Offload to CPU), params (ZeRO-3 only).")] = None,
    framework: Annotated[Optional[str], typer.Option("--framework", help="Training: megatron (default for train), fsdp (default for finetune), deepspeed.")] = None,
    list_models: Annotated[bool, typer.Option("--list-models", help="List the known models and GPUs and exit.")] = False,
    output: OutputOpt = None,
    fmt: FormatOpt = "table",
):
    """Size a workload on one GPU model: memory per replica, GPUs per replica, FLOPs, GPU-hours, tokens/s."""
    _inputs(measured, trace)
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import render

        if list_models:
            from optimizer.sizing.specs import known_gpus, known_models

            with _stdout_to(output):
                render.known(known_models(), known_gpus(), fmt)
            return
        from gpuopt import api

        result = api.estimate(model=model, params=params, active_params=active_params, experts=experts, task=task,
                              gpu=gpu, tokens=tokens,
                              tokens_per_second=tokens_per_second, deadline_hours=deadline_hours, precision=precision,
                              context_tokens=context, concurrency=concurrency, zero_stage=zero_stage,
                              request_rate=request_rate, tensor_parallel=tensor_parallel,
                              pipeline_parallel=pipeline_parallel, engine=engine, input_tokens=input_tokens,
                              output_tokens=output_tokens, scenario=scenario, ttft_slo_ms=ttft_ms,
                              tpot_slo_ms=tpot_ms, measured=measured, trace=trace,
                              micro_batch_size=micro_batch_size, activation_recompute=activation_recompute, mfu=mfu,
                              gpus=int(gpus) if gpus and re.fullmatch(r"[0-9]+", gpus.strip()) else gpus,
                              global_batch_tokens=global_batch_tokens, optimizer=optimizer,
                              offload=offload, framework=framework, context_parallel=context_parallel,
                              expert_parallel=expert_parallel, sweep=sweep or chart is not None,
                              prefix_cache_hit_rate=prefix_cache_hit_rate, speculative_tokens=speculative_tokens,
                              acceptance_rate=acceptance_rate, disaggregate=disaggregate)
        if chart is not None:
            from gpuopt.kernel.errors import InputError

            if chart.suffix.lower() != ".png":
                raise InputError("chart", f"{chart} is not a .png file", accepted="a path ending in .png")
            try:
                check_name_length(chart, "--chart").write_bytes(render.curve_png(result))
            except OSError as exc:
                raise _cannot_write(chart, exc, "chart") from None
        with _stdout_to(output):
            render.estimate(result, fmt)


@app.command()
def quotas(
    provider: Annotated[str, typer.Option("--provider", help="aws, azure or gcp.")],
    region: Annotated[list[str], typer.Option("--region", help="Region code (repeat), e.g. us-east-1, eastus, us-central1.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The quota CSV to write (what --quota reads).")],
    profile: Annotated[Optional[str], typer.Option("--profile", help="AWS named profile (default: the standard boto3 credential chain).")] = None,
    subscription: Annotated[Optional[str], typer.Option("--subscription", envvar="AZURE_SUBSCRIPTION_ID", help="Azure subscription id.")] = None,
    project: Annotated[Optional[str], typer.Option("--project", envvar="GOOGLE_CLOUD_PROJECT", help="GCP project id.")] = None,
    gcp_token: Annotated[Optional[str], typer.Option("--gcp-token", envvar="GPUOPT_GCP_ACCESS_TOKEN", help="GCP OAuth access token (gcloud auth print-access-token).")] = None,
    fmt: FormatOpt = "table",
):
    """Read your GPU quotas from the provider's quota API with your credentials (AWS Service Quotas, Azure Compute
    usages, GCP regions.get) and write them as the CSV that `recommend --quota` reads. A failed read writes
    nothing (exit 3)."""
    with _boundary(fmt):
        _check_format(fmt)
        import json as _json

        from gpuopt.kernel.documents import envelope

        from providers.quotas import fetch_quotas, quota_rows, write_quota_file

        table = fetch_quotas(provider, region, profile=profile, subscription_id=subscription, project=project,
                             token=gcp_token)
        try:
            path = write_quota_file(table, check_name_length(output))
        except OSError as exc:
            raise _cannot_write(Path(output), exc) from None
        rows = quota_rows(table)
        if fmt == "json":
            typer.echo(_json.dumps(envelope("quotas", {"path": str(path), "quotas": rows}), indent=2))
        else:
            for r in rows:
                typer.echo(f"{r['provider']} {r['region']} {r['family']}: {r['limit']:g} {r['unit']} "
                           f"({r['used']:g} used) — {r['note']}")
            typer.echo(f"{len(rows)} quota(s) -> {path} (plan within them: gpuopt recommend --quota {path})")


@app.command()
def review(
    usage: Annotated[Path, typer.Option("--usage", help="Billing export: FOCUS 1.0-1.2, AWS CUR 2.0 or Azure cost details (CSV, CSV.gz or Parquet), or hourly usage from the warehouse SQL.")],
    usage_format: Annotated[str, typer.Option("--usage-format", help="auto, focus-1.0, focus-1.1, focus-1.2, aws-cur-2.0, azure-cost-details, hourly.")] = "auto",
    lookback: Annotated[Optional[str], typer.Option("--lookback", help="Window of usage to review, e.g. 30d, 720h (default: the whole export).")] = None,
    window: Annotated[Optional[tuple[str, str]], typer.Option("--window", metavar="START END", help="Hourly usage only: the [START, END) the warehouse query read (YYYY-MM-DD or ISO time, UTC), for a file without window_start/window_end columns; its hours without GPU rows are idle.")] = None,
    term: Annotated[str, typer.Option("--term", help="Commitment term to recommend: 1y or 3y.")] = "1y",
    payment: Annotated[str, typer.Option("--payment", help="no_upfront, partial_upfront or all_upfront.")] = "no_upfront",
    scope: Annotated[str, typer.Option("--scope", help="shared: one recommendation pooled over every account; account: one per account.")] = "shared",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the output to this file instead of stdout (needed by --format markdown and html; --format focus writes Parquet to a .parquet file, else CSV).")] = None,
    fmt: FormatOpt = "table",
    owned_out: Annotated[Optional[Path], typer.Option("--owned-out", help="Also write the commitments the export shows as the CSV that --owned reads (unknown ends left empty: fill them in).")] = None,
):
    """Monthly cost review: what the GPU fleet cost, how well it was used, what to commit to and what it saves."""
    _inputs(usage, *([] if not Path(usage).is_dir() else sorted(p for p in Path(usage).rglob("*") if p.is_file())))
    with _boundary(fmt, aliases={"format": "usage_format"}):  # the export reader's "format" is --usage-format
        _check_format(fmt, FILE_FORMATS)
        if output is not None and fmt != "focus":
            _not_parquet(output, f"--format {fmt}")  # before reading the export, not after it
        if owned_out is not None:  # its name too, before the export is read (issue 33), as --output's
            _check_output(owned_out, "--owned-out")  # a breaker's --owned-out named like the export replaced it
            if output is not None and Path(owned_out).absolute().resolve() == Path(output).absolute().resolve():
                from gpuopt.kernel.errors import InputError

                raise InputError("owned_out", f"{owned_out} is also --output: give it another name")
        from gpuopt import api, render

        result = api.review(usage=usage, usage_format=usage_format, lookback=lookback, term=term, payment=payment,
                            scope=scope, window=window)
        render.warnings(result.prices, result.warnings)
        if owned_out is not None:
            from providers.owned import owned_from_usage, write_owned_csv

            from gpuopt.kernel.words import plural

            owned = owned_from_usage(usage, fmt=usage_format)
            try:
                write_owned_csv(owned, owned_out)
            except OSError as exc:
                raise _cannot_write(Path(owned_out), exc, "owned_out") from None
            unknown = sum(1 for c in owned if c.end is None)
            _note(f"wrote {plural(len(owned), 'owned commitment')} to {owned_out}"
                  + (f"; {unknown} with an unknown end of term: fill in 'end' before --owned" if unknown else ""))
        if fmt in FILE_FORMATS:
            _write_file_format(result, fmt, output)
        else:
            with _stdout_to(output):
                render.review(result, fmt)


@prices_app.command("list")
def prices_list(
    gpu: Annotated[Optional[list[str]], typer.Option("--gpu", help="GPU model or family (repeat): H100, A100-80GB, L4 ...")] = None,
    provider: Annotated[Optional[list[str]], typer.Option("--provider", help="aws, azure, gcp, lambda (repeat).")] = None,
    region: Annotated[Optional[list[str]], typer.Option("--region", help="Region code (repeat).")] = None,
    pricing: Annotated[Optional[list[str]], typer.Option("--pricing", help="on_demand, spot, reserved_1y, reserved_3y, capacity_block, flex_start, savings_plan_1y, savings_plan_3y (repeat).")] = None,
    limit: Annotated[int, typer.Option(help="Show at most this many rows (0: all).", min=0)] = 50,
    catalog: CatalogOpt = None,
    prices_on: Annotated[Optional[str], typer.Option("--prices-on", help="The prices in effect on this date (YYYY-MM-DD).")] = None,
    output: OutputOpt = None,
    fmt: FormatOpt = "table",
):
    """List GPU offers, cheapest first, with where each price comes from."""
    _inputs(catalog)
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import api, render

        result = api.prices_list(gpu=gpu or (), provider=provider or (), region=region or (), pricing=pricing or (),
                                 catalog=catalog, limit=limit or None, prices_on=prices_on)
        render.warnings(result.prices)
        with _stdout_to(output):
            render.prices_list(result, fmt)


@prices_app.command("status")
def prices_status(catalog: CatalogOpt = None, output: OutputOpt = None, fmt: FormatOpt = "table"):
    """Where the prices come from, how old they are, and row counts per provider."""
    _inputs(catalog)
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import api, render

        status = api.prices_status(catalog)
        render.warnings(status.get("prices", {}))
        with _stdout_to(output):
            render.prices_status(status, fmt)


@prices_app.command("refresh-spot")
def prices_refresh_spot(
    provider: Annotated[str, typer.Option("--provider", help="aws (the Spot Instance Advisor, no credentials) or azure (eviction rates from Azure Resource Graph, with your credentials).")] = "aws",
    region: Annotated[Optional[list[str]], typer.Option("--region", help="Azure regions to read (repeat; default: every Azure region of the price data).")] = None,
    subscription: Annotated[Optional[str], typer.Option("--subscription", envvar="AZURE_SUBSCRIPTION_ID", help="Azure subscription the Resource Graph query runs in.")] = None,
    fmt: FormatOpt = "table",
):
    """Fetch spot interruption data into the cache: the AWS Spot Instance Advisor's buckets (no credentials), or
    Azure's Spot eviction rates (Resource Graph; Reader on a subscription). Training plans then use each instance
    type's current rate. A failed fetch keeps the data in use (exit 3)."""
    with _boundary(fmt):
        _check_format(fmt)
        import json as _json

        from gpuopt.kernel.documents import envelope

        from gpuopt.kernel.errors import InputError
        from pricing_cache.spot_risk import refresh_azure_eviction, refresh_spot_advisor

        provider = provider.strip().lower()
        if provider not in ("aws", "azure"):
            raise InputError("provider", f"no spot interruption source for '{provider}'", accepted="aws, azure")
        if provider == "aws":
            out = refresh_spot_advisor()
            what = "spot advisor"
        else:
            if not subscription:
                raise InputError("subscription", "the Azure subscription to query Resource Graph in is not set",
                                 accepted="--subscription ID or AZURE_SUBSCRIPTION_ID")
            from pricing_cache.store import load_offers
            from providers.base import MissingCredentials

            offers, _ = load_offers()
            az = offers[offers["provider"].astype(str) == "azure"]
            regions = list(region or sorted(set(az["region"].astype(str))))
            try:
                from azure.identity import DefaultAzureCredential
            except ImportError:
                raise MissingCredentials("azure eviction rates: azure-identity is not installed "
                                         "(pip install 'gpuopt[azure]')") from None
            out = refresh_azure_eviction(subscription, regions, DefaultAzureCredential(),
                                         sizes=sorted(set(az["instance_type"].astype(str))))
            what = "azure eviction rates"
        doc = {"provider": provider, "status": out.status, "path": out.path, "as_of": out.as_of,
               "entries": out.entries, "error": out.error, "kept": out.kept, "notes": out.notes}
        if fmt == "json":
            typer.echo(_json.dumps(envelope("spot-refresh", doc), indent=2))
        elif out.ok:
            typer.echo(f"{what}: {out.entries:,} entries as of {out.as_of} -> {out.path}")
        else:
            typer.echo(f"gpuopt: error: {what} refresh failed ({out.error}); still in use: {out.kept}",
                       err=True)
        if not out.ok:
            raise typer.Exit(3)


@prices_app.command("spot-scores")
def prices_spot_scores(
    instance_type: Annotated[list[str], typer.Option("--instance-type", help="EC2 instance type that may fill the request (repeat: any of them).")],
    capacity: Annotated[int, typer.Option("--capacity", min=1, max=100000, help="Spot instances wanted at once.")],
    region: Annotated[Optional[list[str]], typer.Option("--region", help="AWS region to score (repeat; default: every region).")] = None,
    single_az: Annotated[bool, typer.Option("--single-az", help="Score zones (the whole capacity in one zone: what a training cluster needs) instead of regions.")] = False,
    profile: Annotated[Optional[str], typer.Option("--profile", envvar="AWS_PROFILE", help="AWS credentials profile.")] = None,
    fmt: FormatOpt = "table",
):
    """EC2 Spot placement scores (with AWS credentials, ec2:GetSpotPlacementScores): how likely a Spot request of
    CAPACITY instances of the given types succeeds now, 1 (unlikely) to 10 (highly likely), per region or zone. A
    signal of capacity today, not an interruption rate: use it to set --spot-capacity-gpu or --spot-capacity."""
    with _boundary(fmt):
        _check_format(fmt)
        import json as _json

        from gpuopt.kernel.documents import envelope

        from providers.base import FetchOptions
        from providers.spot_advisor import fetch_spot_placement_scores, parse_spot_placement_scores

        pages = fetch_spot_placement_scores([t.strip() for t in instance_type], capacity, regions=region,
                                            single_az=single_az, options=FetchOptions(profile=profile))
        scores = parse_spot_placement_scores(pages)
        if fmt == "json":
            typer.echo(_json.dumps(envelope("spot-scores", {
                "instance_types": instance_type, "capacity": capacity, "single_az": single_az,
                "scores": [{"region": x.region, "zone_id": x.zone_id, "score": x.score} for x in scores]}), indent=2))
            return
        if not scores:
            typer.echo("no placement score returned (no region offers these types as Spot)")
            return
        for x in scores:
            typer.echo(f"{x.region:<16} {x.zone_id or '-':<12} {x.score:>2}/10")


@prices_app.command("refresh")
def prices_refresh(
    provider: Annotated[Optional[list[str]], typer.Option("--provider", help="aws, azure, gcp (repeat; default: all).")] = None,
    region: Annotated[Optional[list[str]], typer.Option("--region", help="Region code (repeat; default: every region).")] = None,
    profile: Annotated[Optional[str], typer.Option("--profile", help="AWS named profile (default: the standard boto3 credential chain).")] = None,
    gcp_api_key: Annotated[Optional[str], typer.Option("--gcp-api-key", envvar="GPUOPT_GCP_API_KEY", help="API key for the Cloud Billing Catalog API.")] = None,
    workers: Annotated[int, typer.Option("--workers", help="Regions fetched at once per provider.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", help="Timeout of one API call attempt, and the longest wait between attempts (Retry-After is capped), seconds.")] = 30.0,
    attempts: Annotated[int, typer.Option("--attempts", help="Attempts per API call, retries of throttling and 5xx included; a call gives up after about timeout x attempts seconds.")] = 5,
    savings_plans: Annotated[bool, typer.Option("--savings-plans", help="Also fetch AWS Savings Plans rates (needs savingsplans:DescribeSavingsPlansOfferingRates); Azure's come with its prices.")] = False,
    deadline: Annotated[float, typer.Option("--deadline", help="Deadline of the whole refresh, seconds (default 1800 = 30 min): no API call starts after it, timeouts and retry waits are capped at the time left; regions not done by then fail with 'deadline reached' and keep their previous prices (exit code 3).")] = 1800.0,
    source: Annotated[str, typer.Option("--source", help="AWS prices from: api (Pricing/EC2/Savings Plans APIs, credentials needed), bulk (the public Price List files, no credentials: on-demand, Reserved Instances and Savings Plans rates, no spot), auto (bulk when no AWS credentials are found).")] = "auto",
    output: OutputOpt = None,
    fmt: FormatOpt = "table",
):
    """Fetch current prices from the AWS, Azure and GCP APIs into your price cache (keeps good data on failure).
    Without AWS credentials, AWS prices and Savings Plans rates come from AWS's public price list files.

    Exit code 3 when a provider or region was not refreshed (what was fetched is kept, the rest stays as it was)."""
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import api, render
        from gpuopt.kernel.errors import InputError

        if workers < 1:
            raise InputError("workers", f"must be at least 1, got {workers}")
        if attempts < 1:
            raise InputError("attempts", f"must be at least 1, got {attempts}")
        if not timeout > 0:
            raise InputError("timeout", f"must be greater than 0 seconds, got {timeout:g}")
        try:
            with render.RefreshProgress(enabled=fmt == "table" and sys.stderr.isatty() and not _STATE["quiet"]) \
                    as progress:
                summary = api.prices_refresh(providers=provider or (), regions=region or (), profile=profile,
                                             gcp_api_key=gcp_api_key, workers=workers, timeout_s=timeout,
                                             max_attempts=attempts, on_event=progress.event,
                                             savings_plans=savings_plans, deadline_s=deadline,
                                             aws_source=source)
        except KeyboardInterrupt:
            # worker threads may be inside an HTTP call: leave at once; nothing half-written is ever used
            typer.echo("gpuopt: refresh interrupted: snapshots not written are not used; the previous prices stay "
                       "in use", err=True)
            sys.stderr.flush()
            os._exit(130)
        with _stdout_to(output):
            render.refresh_summary(summary, fmt)
        if not summary.ok:
            failed = [p.provider for p in summary.providers if p.status != "refreshed"]
            _fail(f"refresh incomplete: {', '.join(failed)} not (fully) refreshed; the previous prices stay in use "
                  "where nothing new was fetched", 3, "provider", "provider")


@prices_app.command("import")
def prices_import(
    file: Annotated[Path, typer.Argument(help="The price file to import.")],
    input_format: Annotated[Optional[str], typer.Option("--input-format", help="The file's type: skypilot, ec2instances, offers, aws-price-list, aws-bulk-csv, azure-retail, gcp-skus.")] = None,
    provider: Annotated[Optional[str], typer.Option("--provider", help="Provider of a SkyPilot file: aws, azure, gcp, lambda.")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Date the prices held (YYYY-MM-DD, or 'today'). The file's own date is used where it states one (AWS price files: publicationDate; offers CSV: the as_of column) and --as-of may not contradict it; required for skypilot, ec2instances, azure-retail and gcp-skus files, which carry no date. Never the day of the import by default.")] = None,
    replace_region: Annotated[bool, typer.Option("--replace-region", help="Replace the regions in the file whole: their previous offers the file does not list are removed. Default: replace only the offers the file carries and keep every other.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Deprecated (use --format json): print the summary as JSON.")] = False,
    output: OutputOpt = None,
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="Output: 'table' (default) or 'json', as in every command. (Deprecated, for one release: a file type here, e.g. --format skypilot, is read as --input-format.)")] = None,
):
    """Import a price file (for air-gapped machines) into your price cache as a new snapshot.

    Says per provider how many offers were added, changed, unchanged, kept and removed. A file older than the
    current prices goes into the price history only (used by --prices-on), leaving the current prices as they are.
    """
    from pricing_cache.importing import FORMATS as INPUT_FORMATS

    from gpuopt.kernel.errors import InputError

    deprecated, clash = [], None
    if fmt in INPUT_FORMATS:  # the old spelling: --format named the file's type
        if input_format not in (None, fmt):
            clash = InputError("--format", f"'{fmt}' (the deprecated spelling of --input-format) contradicts "
                               f"--input-format {input_format}", accepted="--format table|json")
        input_format, fmt = fmt, None
        deprecated.append(f"--format {input_format} is deprecated for the file's type: use --input-format "
                          f"{input_format} (--format is the output format, table or json, as in every command)")
    if as_json:
        if fmt not in (None, "json"):
            clash = InputError("--json", f"contradicts --format {fmt}", accepted="--format json (--json is its "
                               "deprecated spelling)")
        fmt = "json"
        deprecated.append("--json is deprecated: use --format json")
    fmt = fmt or "table"
    _inputs(file)
    with _boundary(fmt):
        from gpuopt import api, render

        if clash is not None:
            raise clash

        if fmt not in FORMATS:
            raise InputError("--format", f"unknown output format '{fmt}' (the file's type is --input-format: "
                             f"{', '.join(INPUT_FORMATS)})", accepted=", ".join(FORMATS))
        if input_format is None:  # a missing option: a usage error (2)
            missing = InputError("--input-format", "missing: the type of the price file",
                                 accepted=", ".join(INPUT_FORMATS))
            _fail(str(missing), 2, "usage", "input_format", missing.accepted)

        for line in deprecated if not (_STATE["quiet"] or fmt == "json") else ():  # JSON: in its notes
            typer.echo(f"gpuopt: warning: {line}", err=True)
        try:
            result = api.prices_import(file=file, fmt=input_format, provider=provider, as_of=as_of,
                                       replace_region=replace_region)
        except InputError as exc:  # name the option the value came from (--input-format, --as-of)
            option = {"format": "--input-format", "as_of": "--as-of", "provider": "--provider"}.get(exc.field)
            if option is None:
                raise
            raise InputError(option, exc.message.replace("--format ", "--input-format "), exc.accepted) from None
        if fmt == "json" and deprecated:  # stderr holds only error documents with JSON: the warning goes in it
            result["notes"] = [f"deprecated: {line}" for line in deprecated] + list(result.get("notes") or [])
        with _stdout_to(output):
            render.import_summary(result, fmt)


@prices_app.command("diff")
def prices_diff(
    since: Annotated[str, typer.Option("--since", help="Compare the prices in effect on this date (YYYY-MM-DD) with today's.")],
    provider: Annotated[Optional[list[str]], typer.Option("--provider", help="Limit to these providers (repeat).")] = None,
    limit: Annotated[int, typer.Option(help="Show at most this many changed rows (0: all).", min=0)] = 30,
    output: OutputOpt = None,
    fmt: FormatOpt = "table",
):
    """What changed in the prices since a date: added, removed and changed offers."""
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import api, render

        d = api.prices_diff(since=since, providers=provider or ())
        with _stdout_to(output):
            render.price_diff(d, fmt, limit or None)


@app.command("diff")
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier plan: a file of gpuopt recommend --format json.")],
    new: Annotated[Path, typer.Argument(help="The later plan, the same kind of file.")],
    fail_above: Annotated[Optional[float], typer.Option("--fail-above", help="Cost gate: exit with code 4 when the plan's total rose by more than this percentage.")] = None,
    output: OutputOpt = None,
    fmt: FormatOpt = "table",
):
    """What changed between two plans (money and lines), for cost gates in CI."""
    _inputs(old, new)
    with _boundary(fmt):
        _check_format(fmt)
        from gpuopt import api, render
        from gpuopt.plan_diff import EXIT_COST_GATE, gate

        d = api.diff(old, new)
        failed, verdict = gate(d, fail_above)
        with _stdout_to(output):  # a failed gate is said once, as the error line on stderr (its JSON keeps it)
            render.plan_diff(d, verdict if fmt == "json" or not failed else "", fmt)
    if failed:
        _fail(verdict, EXIT_COST_GATE, "cost_gate", "fail_above", prefix="gpuopt: cost gate: ")


@app.command("completion")
def completion(shell: Annotated[str, typer.Argument(help="bash, zsh, fish or powershell.")]):
    """Print the shell completion script (e.g. `gpuopt completion bash >> ~/.bashrc`; or `gpuopt --install-completion`
    for the shell you run)."""
    with _boundary():
        from gpuopt.kernel.errors import InputError
        from typer._completion_shared import get_completion_script

        shells = ("bash", "zsh", "fish", "powershell")
        if shell not in shells:
            raise InputError("shell", f"unknown shell {shell!r}", accepted=", ".join(shells))
        typer.echo(get_completion_script(prog_name="gpuopt", complete_var="_GPUOPT_COMPLETE", shell=shell))


#: Options of the root command, accepted anywhere on the command line (`gpuopt recommend ... -q`).
_GLOBAL_FLAGS = ("--quiet", "-q", "--verbose", "-v", "-vv", "-vvv", "--no-color")


def _globals_first(argv: list[str]) -> list[str]:
    """Move --quiet/-q, --verbose/-v and --no-color typed after the command to the front, where the root command
    reads them (a value of another option is never moved: these flags take none, and an option's value follows it)."""
    if "--" in argv:  # after "--" everything is an argument
        i = argv.index("--")
        return _globals_first(argv[:i]) + argv[i:]
    return [a for a in argv if a in _GLOBAL_FLAGS] + [a for a in argv if a not in _GLOBAL_FLAGS]


def _asks_json(argv: list[str]) -> bool:
    """Does the command line ask for JSON (--format json, -f json, --format=json; prices import --json)?"""
    for i, a in enumerate(argv):
        if a in ("--format", "-f") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if a in ("--format=json", "-fjson", "--json"):
            return True
    return False


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Exit codes (gpuopt.schemas.EXIT_CODES): 0 ok, 1 bad input or no plan, 2 usage
    error (unknown option or command, missing argument, a value click refuses), 3 a price source or the network
    failed, 4 the cost gate of ``gpuopt diff --fail-above``; 130 interrupted. With --format json a failure is one
    JSON ``error`` document on stderr.

    Typer >= 0.29 vendors click (typer._click) and older releases use click itself, so the click exception
    base classes are found from typer's own BadParameter rather than imported by name."""
    mro = {c.__name__: c for c in typer.BadParameter.__mro__}
    click_exception, usage_error = mro["ClickException"], mro["UsageError"]
    missing = sys.modules[typer.BadParameter.__module__].MissingParameter  # a missing argument or option
    args = _globals_first(list(sys.argv[1:] if argv is None else argv))
    try:
        rv = app(args=args, standalone_mode=False, prog_name="gpuopt")
    except typer.Exit as exc:
        sys.exit(getattr(exc, "exit_code", 0))
    except typer.Abort:
        typer.echo("gpuopt: aborted", err=True)
        sys.exit(130)
    except click_exception as exc:
        msg = exc.format_message()
        if not msg:  # `gpuopt` or `gpuopt prices` alone: the help was printed, nothing went wrong
            sys.exit(0)
        # a value click cannot convert (--budget abc) is bad input (1); an unknown option or command, a missing
        # argument or option (click's MissingParameter, a BadParameter too), is a usage error (2)
        code = 2 if isinstance(exc, missing) or (isinstance(exc, usage_error)
                                                 and not isinstance(exc, typer.BadParameter)) else 1
        _STATE["format"] = "json" if _asks_json(args) else "table"
        try:
            _fail(msg, code, "usage" if code == 2 else "input",
                  getattr(getattr(exc, "param", None), "name", None))
        except typer.Exit as done:
            sys.exit(done.exit_code)
    # with standalone_mode=False, click returns the exit code of a typer.Exit raised in a command
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
