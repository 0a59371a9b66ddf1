"""The input boundary shared by gpuopt's readers of configuration files (issue 13, point 1).

One place decides how a file a user hands to gpuopt is read, so that every reader answers a bad file with one
``InputError`` line naming the file (and, where known, its line and key), in bounded time and memory:

* :func:`read_text` -- the file's text: UTF-8 with or without a byte-order mark (Excel's and Notepad's "UTF-8 with
  BOM"); anything else is refused naming the file and the line of the first bad byte; a file larger than
  ``max_bytes`` (default :data:`MAX_FILE_BYTES`) is refused before it is read.
* :func:`load_yaml` -- PyYAML's *safe* loader (no Python tags) with limits: at most :data:`MAX_DEPTH` levels of
  nesting (counted after aliases are expanded), at most :data:`MAX_YAML_ALIASES` alias uses and at most
  :data:`MAX_YAML_NODES` values once aliases are expanded (a 600-byte "billion laughs" alias bomb expands to 9^9
  values: refused before it is built), no recursive alias; a key given twice in one mapping is refused naming the
  key and both lines (PyYAML silently keeps the last). Merge keys (``<<: *base``) stay legal: a key set beside the
  merge overrides the merged one, as the YAML merge spec says.
* :func:`load_json` -- ``json`` with the same depth limit, duplicate keys refused, and ``NaN`` / ``Infinity`` /
  overflowing numbers (``1e400``) refused unless the reader checks each number it uses (``allow_nonfinite``).
* :func:`check_number` -- a finite number within ``[lo, hi]``, the message naming the field and the file.

:data:`MAX_QUANTITY` is the ceiling of every quantity a plan or an option may hold (tokens, tokens/s, USD,
parameters, hours): 1e15, a thousand times the largest real value of any of them (Llama 3's 15e12 training tokens)
and small enough that the product of two stays finite in float64.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator

from gpuopt.kernel.errors import InputError

#: Largest configuration file read, bytes (a plan, a config.json, a measurements JSON): 64 MiB.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Deepest nesting of mappings and lists (after YAML aliases are expanded); a plan file needs 4.
MAX_DEPTH = 64
#: Most alias uses (``*name``) in one YAML document.
MAX_YAML_ALIASES = 1_000
#: Most values (scalars, lists, mappings) the aliases of one YAML document may add once expanded (issue 33: counted
#: apart from the values written out, so a plain 100,000-value list is not refused as an "alias" expansion).
MAX_YAML_NODES = 100_000
#: Most values written out in one YAML document (aliases not expanded): 250,000. Measured (PyYAML's safe loader,
#: pure Python, on 2 shared cores): an inline list of 100,000 numbers (0.69 MB) reads in ~24 s at ~100 MiB, 300,000
#: in ~58 s at ~330 MiB; a longer series belongs in a demand_profile CSV. Counted while composing: refused at once.
MAX_YAML_PLAIN_NODES = 250_000
#: Ceiling of every quantity a plan key or a command-line option holds (module docstring).
MAX_QUANTITY = 1e15


def dotted(loc: tuple, empty: str = "workload") -> str:
    """A key path as users write it: ``("workloads", 0, "model")`` -> ``workloads[0].model``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or empty


def check_name_length(path: "str | Path", option: str = "--output") -> Path:
    """The absolute ``path`` of a file to write, or InputError (field: ``option`` without its dashes) when its file
    name is over 245 bytes (255 less the 10 of the temporary file it is written through) or a folder name in it over
    255 bytes, the limit of ext4, XFS, APFS and NTFS (issue 33: it was an OSError
    traceback, "File name too long")."""
    out = Path(path).absolute()
    for i, part in enumerate(out.parts):
        # the file itself is written through a temporary file beside it, ".NAME." + 8 characters (the CLI's atomic
        # write): its name may hold 245 bytes (a breaker's 253-byte name passed, then failed "File name too long")
        most = 245 if i == len(out.parts) - 1 else 255
        if len(os.fsencode(part)) > most:
            raise InputError(option.lstrip("-").replace("-", "_"),
                             f"the name {part[:24]}... is {len(os.fsencode(part))} bytes long; file names are at "
                             f"most 245 bytes here (255, less the temporary file's 10) and folder names 255: give "
                             f"{option} a shorter name")
    if len(os.fsencode(str(out))) >= 4096:
        raise InputError(option.lstrip("-").replace("-", "_"),
                         f"the path is {len(os.fsencode(str(out)))} bytes long; paths are shorter than 4,096 bytes "
                         f"(Linux PATH_MAX): give {option} a shorter path")
    return out


# ------------------------------------------------------------------------------------------- text
def _bad_byte(data: bytes, exc: UnicodeDecodeError) -> str:
    line = data.count(b"\n", 0, exc.start) + 1
    return f"byte 0x{data[exc.start]:02x} at line {line}"


def read_text(path: str | Path, field: str, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of ``path``, decoded as UTF-8 (a leading byte-order mark dropped).

    Raises InputError(field): no such file, a folder, unreadable, larger than ``max_bytes``, or not UTF-8 (the
    message names the file and the line of the first byte that is not)."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(field, f"{p} is a directory, not a {what}")
        if not p.is_file():
            raise InputError(field, f"file not found: {p}")
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(field, f"{p} is {size:,} bytes, more than the {max_bytes:,} a {what} may have")
        chunks, total = [], 0
        with open(p, "rb") as fh:  # in chunks: read(max_bytes) would allocate max_bytes for a small file
            while chunk := fh.read(1 << 20):
                chunks.append(chunk)
                total += len(chunk)
                if total > max_bytes:  # a file that grew, or a device: stop at the limit
                    raise InputError(field, f"{p} is more than the {max_bytes:,} bytes a {what} may have")
        data = b"".join(chunks)
    except OSError as exc:
        raise InputError(field, f"cannot read {p}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(field, f"{p} is not UTF-8 text ({_bad_byte(data, exc)}); save it as UTF-8",
                         accepted="UTF-8 text, with or without a byte-order mark") from None


# ------------------------------------------------------------------------------------------- YAML
class _ValueAt(Exception):
    """A YAML value PyYAML cannot build (``node``), raised by the loader so the message can name its key."""

    def __init__(self, node, exc: Exception):
        super().__init__(str(exc))
        self.node, self.exc = node, exc


def _path_of(root, target) -> tuple | None:
    """The key path (as :func:`dotted` reads it) of the node ``target`` under ``root``, or None."""
    import yaml

    todo: list[tuple[Any, tuple]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        if node is target:
            return path
        if isinstance(node, yaml.MappingNode):
            todo.extend((v, path + (getattr(k, "value", "?"),)) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((v, path + (i,)) for i, v in enumerate(node.value))
    return None


def _bad_value(err: _ValueAt, root, origin: str, field: str) -> InputError:
    """'prices_on: no such date 2026-02-30 (plan.yaml, line 12)' for a value PyYAML could not build."""
    node, line = err.node, err.node.start_mark.line + 1
    path = _path_of(root, node)
    value = str(getattr(node, "value", ""))[:40]
    if getattr(node, "tag", "").endswith(":timestamp"):
        what = f"no such date {value}"
    else:
        what = f"the value {value!r} is not valid: {str(err.exc).splitlines()[0][:120]}"
    return InputError(dotted(path, field) if path else field, f"{what} ({origin}, line {line})",
                      accepted="a date YYYY-MM-DD that exists" if "date" in what else None)


def _yaml_loader(text: str, origin: str, field: str):
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that counts aliases and nesting while it composes (the parser itself is not recursive)."""

        aliases = 0
        depth = 0
        nodes = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                Loader.aliases += 1
                if Loader.aliases > MAX_YAML_ALIASES:
                    line = self.peek_event().start_mark.line + 1
                    raise InputError(field, f"{origin}: more than {MAX_YAML_ALIASES} aliases (line {line})")
            else:
                Loader.nodes += 1
                if Loader.nodes > MAX_YAML_PLAIN_NODES:
                    line = self.peek_event().start_mark.line + 1
                    raise InputError(field, f"{origin}: more than {MAX_YAML_PLAIN_NODES:,} values (line {line}); "
                                     "a file this large takes minutes to read: give a long demand series as a "
                                     "demand_profile CSV", accepted=f"at most {MAX_YAML_PLAIN_NODES:,} values")
            Loader.depth += 1
            try:
                if Loader.depth > MAX_DEPTH:
                    line = self.peek_event().start_mark.line + 1
                    raise InputError(field, f"{origin}: nested deeper than {MAX_DEPTH} levels (line {line})")
                return super().compose_node(parent, index)
            finally:
                Loader.depth -= 1

        def construct_object(self, node, deep=False):
            try:
                return super().construct_object(node, deep)
            except (ValueError, OverflowError) as exc:  # a date 2026-02-30, a 5000-digit integer: where is it?
                raise _ValueAt(node, exc) from None

    return Loader(text)


def _check_expanded(root, origin: str, field: str, plain: int = 0) -> None:
    """Size and depth of the document with its aliases expanded, computed on the node graph (each node once):
    refuse a recursive alias, aliases adding more than MAX_YAML_NODES values to the ``plain`` ones written out, or
    more than MAX_DEPTH levels."""
    import yaml

    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = [] if isinstance(node, yaml.ScalarNode) else (
            [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else list(node.value))
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_YAML_NODES + plain:
                raise InputError(field, f"{origin}: its aliases expand to more than {MAX_YAML_NODES:,} values "
                                 f"(line {node.start_mark.line + 1}); write the values out or use fewer aliases")
            if depth[key] > MAX_DEPTH:
                raise InputError(field, f"{origin}: nested deeper than {MAX_DEPTH} levels once its aliases are "
                                 f"expanded (line {node.start_mark.line + 1})")
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for c in children:
            if id(c) in on_path:
                raise InputError(field, f"{origin}: an alias refers to a value that holds it (recursive alias, "
                                 f"line {c.start_mark.line + 1})")
            if id(c) not in size:
                stack.append((c, False))


def _check_duplicates(root, origin: str, field: str) -> None:
    """Refuse a key given twice in one mapping (merge keys ``<<`` apart), naming its path and both lines."""
    import yaml

    seen: set[int] = set()
    stack = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((c, path + (i,)) for i, c in enumerate(node.value))
            continue
        first: dict[tuple, int] = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                ident = (k.tag, k.value)
                if ident in first:
                    raise InputError(dotted(path + (k.value,), field),
                                     f"duplicate key in {origin} (lines {first[ident]} and {k.start_mark.line + 1})")
                first[ident] = k.start_mark.line + 1
            stack.append((v, path + ((k.value,) if isinstance(k, yaml.ScalarNode) else ("?",))))


def load_yaml(text: str, origin: str, field: str = "workload") -> tuple[Any, Any]:
    """(data, root node) of one YAML document, read within the limits of the module docstring.

    ``origin`` (the file) is named in every message; the root node (None for an empty document) gives lines, see
    :func:`yaml_lines`. Raises InputError(field) for invalid YAML (with its line), several documents, a limit
    passed or a value PyYAML cannot build (a date 2024-13-01); InputError(path of the key) for a duplicate key."""
    import yaml

    loader = None
    try:
        loader = _yaml_loader(text, origin, field)  # its reader refuses control characters at once
        try:
            node = loader.get_single_node()
        except RecursionError:  # belt and braces: the depth limit stops nesting long before
            raise InputError(field, f"{origin}: nested deeper than {MAX_DEPTH} levels") from None
        if node is None:
            return None, None
        _check_expanded(node, origin, field, type(loader).nodes)
        _check_duplicates(node, origin, field)
        try:
            data = loader.construct_document(node)
        except _ValueAt as exc:
            raise _bad_value(exc, node, origin, field) from None
    except InputError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None)
        raise InputError(field, f"{origin} is not valid YAML{where}" + (f": {problem}" if problem else "")) from None
    except (ValueError, OverflowError, TypeError) as exc:  # a date that is no date, a 5000-digit integer
        raise InputError(field, f"{origin}: a value is not valid: {str(exc).splitlines()[0][:200]}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, node


def yaml_lines(root) -> dict[tuple, int]:
    """Key path -> 1-based line of every value under ``root`` (as :func:`dotted` paths are built; the first path
    wins where an alias repeats a value). Bounded: :func:`load_yaml` has checked the expanded size."""
    import yaml

    lines: dict[tuple, int] = {}
    if root is None:
        return lines
    stack = [(root, ())]
    while stack:
        n, path = stack.pop()
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for k, v in reversed(n.value):
                key = k.value if isinstance(k, yaml.ScalarNode) else "?"
                lines.setdefault(path + (key,), k.start_mark.line + 1)
                stack.append((v, path + (key,)))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((v, path + (i,)) for i, v in reversed(list(enumerate(n.value))))
    return lines


# ------------------------------------------------------------------------------------------- JSON
def _json_depth_ok(data: Any) -> bool:
    stack = [(data, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            if d > MAX_DEPTH:
                return False
            stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return True


def load_json(text: str, origin: str, field: str, allow_nonfinite: bool = False) -> Any:
    """The JSON value of ``text`` (``origin`` names the file in messages).

    Refused with InputError(field): invalid JSON (with its line and column), a key given twice in one object,
    nesting deeper than :data:`MAX_DEPTH`, an integer of more than 4300 digits; ``NaN``, ``Infinity`` and numbers
    that overflow a float (``1e400``) unless ``allow_nonfinite`` (for files whose writers emit them in fields the
    reader does not use: the reader then checks each number it takes with :func:`check_number`)."""

    def pairs(items: list) -> dict:
        out: dict = {}
        for k, v in items:
            if k in out:
                raise InputError(field, f"{origin}: duplicate key {k!r} in one JSON object")
            out[k] = v
        return out

    def constant(name: str) -> float:
        if not allow_nonfinite:
            raise InputError(field, f"{origin}: {name} is not a finite number", accepted="finite numbers")
        return float(name.replace("Infinity", "inf"))

    def number(s: str) -> float:
        v = float(s)
        if not math.isfinite(v) and not allow_nonfinite:
            raise InputError(field, f"{origin}: the number {s[:40]} is too large for a float",
                             accepted="finite numbers")
        return v

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number)
    except InputError:
        raise
    except json.JSONDecodeError as exc:
        raise InputError(field, f"{origin} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except RecursionError:
        raise InputError(field, f"{origin}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise InputError(field, f"{origin}: a value is not valid: {str(exc)[:200]}") from None
    if not _json_depth_ok(data):
        raise InputError(field, f"{origin}: nested deeper than {MAX_DEPTH} levels")
    return data


def load_json_file(path: str | Path, field: str, what: str = "JSON file", allow_nonfinite: bool = False) -> Any:
    """:func:`read_text` then :func:`load_json`, naming ``path``."""
    return load_json(read_text(path, field, what), str(path), field, allow_nonfinite=allow_nonfinite)


# ------------------------------------------------------------------------------------------- numbers
#: A number as files write it: ASCII digits, an optional sign, decimal point and exponent; ``inf``/``nan`` spelled
#: out (the callers refuse them with their own reason). Not what Python's float() also takes: ``1_8.5`` (read as
#: 18.5), ``٣`` (Arabic-Indic digits), surrounding whitespace inside the cell's quotes.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                      re.IGNORECASE)


def parse_decimal(text: Any) -> float:
    """``text`` (stripped) read as a decimal number, as ``float()`` but refusing what only Python reads as one: an
    underscore between digits (``"1_8.5"``, which float() reads as 18.5: issue 33), non-ASCII digits, an empty
    text. Raises ValueError (the callers name the column and the line)."""
    s = str(text).strip()
    if not _DECIMAL.fullmatch(s):
        raise ValueError(f"{s[:40]!r} is not a decimal number" + (" (no _ between digits)" if "_" in s else ""))
    return float(s)


#: Clock skew allowed for a date a file gives as the day its prices held (``as_of``, a catalog row's date): one day
#: after today (UTC) is accepted, a later one refused (a catalog row of 2999-01-01 was shown "-355043 days old").
DATE_SKEW_DAYS = 1


def date_error(text: str, today: "dt.date | None" = None, *, future: bool = False) -> "str | None":
    """Why ``text`` (``YYYY-MM-DD``) is not a usable date, or None: "no such date 2026-02-30", "not a date
    (YYYY-MM-DD) 'soon'", and unless ``future``, "2999-01-01 is in the future (today is 2026-12-07 UTC, 1 day of
    clock skew allowed)" (:data:`DATE_SKEW_DAYS`)."""
    import datetime as dt

    s = str(text).strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        return f"not a date (YYYY-MM-DD): {s[:40]!r}"
    try:
        day = dt.date.fromisoformat(s)
    except ValueError:
        return f"no such date {s}"
    today = today or dt.datetime.now(dt.timezone.utc).date()
    if not future and day > today + dt.timedelta(days=DATE_SKEW_DAYS):
        return (f"{s} is in the future (today is {today.isoformat()} UTC, {DATE_SKEW_DAYS} day of clock skew "
                "allowed)")
    return None


def check_number(value: Any, field: str, where: str = "", *, lo: float = 0.0, hi: float = MAX_QUANTITY,
                 lo_open: bool = False, whole: bool = False, accepted: str | None = None) -> float:
    """``value`` as a float when it is a finite number (not a bool) with ``lo <= value <= hi`` (``lo < value``
    when ``lo_open``) and, with ``whole``, a whole number. Raises InputError(field) naming ``where`` (the file,
    row or option) and the range."""
    kind = "whole number" if whole else "number"
    rng = f"{'above' if lo_open else 'from'} {lo:g} {'up ' if lo_open else ''}to {hi:g}"
    prefix = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, f"{prefix}must be a {kind}, got {value!r}", accepted=accepted or rng)
    try:
        v = float(value)
    except OverflowError:  # an int beyond a float's range
        v = math.inf
    if not math.isfinite(v):
        raise InputError(field, f"{prefix}must be a finite {kind}, got {value!r:.40}", accepted=accepted or rng)
    if v < lo or (lo_open and v == lo) or v > hi or (whole and not v.is_integer()):
        raise InputError(field, f"{prefix}must be a {kind} {rng}, got {value!r:.40}", accepted=accepted or rng)
    return v


# ------------------------------------------------------------------------------------------- stderr in JSON mode
@contextlib.contextmanager
def third_party_silenced(on: bool = True) -> Iterator[None]:
    """While active (when ``on``: ``--format json``, whose stderr holds nothing but gpuopt's error document): no log
    record of another library and no Python warning reaches stderr (issue 33: azure-identity's 4-line "failed to
    retrieve a token" warning preceded gpuopt's JSON error). Log records: a NullHandler on the root logger, so
    Python's last-resort handler (which prints WARNING records of unconfigured loggers such as ``azure.*``,
    ``urllib3``, ``botocore`` to stderr) is not used; handlers a user asked for with ``-v`` stay. Warnings
    (``warnings.warn``): ignored. Both restored on exit."""
    if not on:
        yield
        return
    import logging
    import warnings

    root, null = logging.getLogger(), logging.NullHandler()
    root.addHandler(null)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.removeHandler(null)
