"""A progress line on stderr for a plan that takes more than a moment (issue 25: "a progress line on stderr for any
solve that takes more than 2 s (phase, bound, gap), off with --quiet").

The planner reports what it is doing with :func:`update` (phase, the best plan so far, the best bound); nothing is
shown unless a caller opened a :func:`reporting` context (the CLI does, unless ``--quiet``) and the plan has run for
``after_s`` seconds (2 s). On a terminal the line is rewritten in place about twice a second; into a file or a pipe a
new line is written when the phase changes and otherwise at most every ``every_s`` seconds (10 s), so logs stay short. The line is cleared (terminal) or
ended with a newline (file) when the context closes, before the result is printed.

Example line: ``gpuopt: placement search, 12 nodes · best $45,436.57 · bound $44,980.00 · gap 1.0 % · 3.4 s``.

The state is one per process (the planner's explanation threads update the same line); :func:`update` is cheap
and thread-safe, and a no-op without a reporter.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, Callable, Iterator

#: Seconds a plan runs before the progress line appears (the issue's threshold).
AFTER_S = 2.0
#: Seconds between lines written to a file or pipe (a terminal's line is rewritten every TICK_S).
EVERY_S = 10.0
TICK_S = 0.5

_lock = threading.Lock()
_state: dict = {"active": False}


def update(phase: str | None = None, *, best: float | None = None, bound: float | None = None,
           detail: str | None = None) -> None:
    """Record what the planner is doing: ``phase`` (e.g. "candidates", "placement search", "explanations"),
    ``best`` the cost of the best plan found (USD), ``bound`` the best lower bound (USD), ``detail`` a few words
    (e.g. "12 nodes"). Values not given keep their last value; a new phase clears best, bound and detail."""
    if not _state.get("active"):
        return
    new_phase = False
    with _lock:
        if _state.get("held") and phase is not None and phase != _state.get("phase"):
            return  # the solves of a held phase (the explanations' what-ifs) do not take its line
        if phase is not None and phase != _state.get("phase"):
            _state.update(phase=phase, best=None, bound=None, detail=None, watch=None)
            new_phase = True
        if best is not None:
            _state["best"] = best
        if bound is not None:
            _state["bound"] = bound
        if detail is not None:
            _state["detail"] = detail
        write = _state.get("write_phase")
    if new_phase and write is not None:
        write()  # into a file: a line for each phase, written by the planner's thread (none is missed)


def hold(phase: str) -> None:
    """Enter ``phase`` and keep it: until :func:`release`, updates naming another phase are ignored (the explanations
    re-solve what-ifs with the same placement search, whose nodes and bounds are not the plan's)."""
    update(phase)
    with _lock:
        _state["held"] = True


def release() -> None:
    """End :func:`hold`."""
    with _lock:
        _state["held"] = False


def watch(source: "Callable[[], tuple[float | None, float | None]] | None") -> None:
    """While a solver runs, ``source()`` gives its (best, bound) in USD (e.g. read from CBC's log as it is
    written: :func:`cbc_log_progress`); None stops watching. Values it returns as None keep the last ones."""
    if not _state.get("active"):
        return
    with _lock:
        _state["watch"] = source


_CBC_BEST = re.compile(r"(?:Integer solution of|, )\s*([-+0-9.eE]+)\s*(?:found|best solution)")
_CBC_BOUND = re.compile(r"(?:best possible|Continuous objective value is)\s*([-+0-9.eE]+)")


def cbc_log_progress(path: str) -> "Callable[[], tuple[float | None, float | None]]":
    """A :func:`watch` source reading CBC's log file ``path`` while CBC writes it: the last integer solution
    ("Integer solution of X found ...", "... X best solution, best possible Y") and the last bound ("best
    possible Y", else the root LP's "Continuous objective value is Y"), in the model's objective units (USD)."""

    def read() -> tuple[float | None, float | None]:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - 20_000))
                text = fh.read()
        except OSError:
            return None, None
        best = bound = None
        for m in _CBC_BEST.finditer(text):
            v = float(m.group(1))
            best = v if v < 1e49 else best
        for m in _CBC_BOUND.finditer(text):
            bound = float(m.group(1))
        return best, bound

    return read


def line() -> str:
    """The progress line of the current state (without a line ending)."""
    with _lock:
        st = dict(_state)
    source = st.get("watch")
    if source is not None and st.get("phase") != "placement search" and not st.get("held"):
        # a leaf's bound is not the plan's, nor a what-if's
        try:
            best, bound = source()
        except Exception:  # a progress line never breaks a plan  # noqa: BLE001
            best, bound = None, None
        st["best"] = best if best is not None else st.get("best")
        st["bound"] = bound if bound is not None else st.get("bound")
    parts = [f"gpuopt: {st.get('phase') or 'planning'}" + (f", {st['detail']}" if st.get("detail") else "")]
    best, bound = st.get("best"), st.get("bound")
    if best is not None:
        parts.append(f"best ${best:,.2f}")
    if bound is not None:
        parts.append(f"bound ${bound:,.2f}")
    if best is not None and bound is not None and best > 0:
        parts.append(f"gap {max(0.0, 100.0 * (best - bound) / best):.1f} %")
    parts.append(f"{time.perf_counter() - st.get('t0', time.perf_counter()):.1f} s")
    return " · ".join(parts)


@contextmanager
def reporting(stream: IO[str] | None = None, *, after_s: float | None = None, every_s: float | None = None,
              tty: bool | None = None) -> Iterator[None]:
    """Show the progress line on ``stream`` (default stderr) while the body runs, from ``after_s`` seconds on.
    ``after_s`` / ``every_s`` default to :data:`AFTER_S` / :data:`EVERY_S`. ``tty`` (default: ``stream.isatty()``)
    chooses rewriting one line in place or writing a line every ``every_s``.
    Nested or concurrent contexts: only the outermost reports."""
    out = stream if stream is not None else sys.stderr
    after_s = AFTER_S if after_s is None else after_s
    every_s = EVERY_S if every_s is None else every_s
    if tty is None:
        try:
            tty = bool(out.isatty())
        except (AttributeError, ValueError):
            tty = False
    with _lock:
        if _state.get("active"):
            owner = False
        else:
            owner = True
            _state.clear()
            _state.update(active=True, t0=time.perf_counter(), phase=None)
    if not owner:
        yield
        return
    stop = threading.Event()
    shown = {"any": False, "width": 0, "last": -1e9}
    write_lock = threading.Lock()
    t0 = _state["t0"]

    def emit() -> None:
        """Write the current line (in place on a terminal, as a new line into a file)."""
        text = line()
        with write_lock:
            try:
                out.write("\r" + text.ljust(shown["width"]) if tty else text + "\n")
                out.flush()
            except (OSError, ValueError):
                return
            shown.update(any=True, width=max(shown["width"], len(text)), last=time.perf_counter())

    def phase_line() -> None:
        if time.perf_counter() - t0 >= after_s and not stop.is_set():
            emit()

    if not tty:
        with _lock:
            _state["write_phase"] = phase_line

    def run() -> None:
        if stop.wait(after_s):
            return
        while not stop.is_set():
            if tty or time.perf_counter() - shown["last"] >= every_s:
                emit()
            stop.wait(TICK_S)

    thread = threading.Thread(target=run, name="gpuopt-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with _lock:
            _state["active"] = False
            _state["write_phase"] = None
        if shown["any"] and tty:
            try:
                out.write("\r" + " " * shown["width"] + "\r")
                out.flush()
            except (OSError, ValueError):
                pass
