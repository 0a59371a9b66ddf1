"""Typed errors shared by every part of gpuopt.

The CLI turns any :class:`GpuoptError` into a one-line message on stderr and exit code 1
(see ``gpuopt.cli``); nothing below the CLI prints or exits.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` on one line: line breaks and other control characters a value carried into a message (a cell of a
    user's file, an option value) shown escaped (``\\n``), so an error stays the one line the CLI promises."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class GpuoptError(Exception):
    """Base class of every error gpuopt raises on purpose; its message is one line (:func:`one_line`)."""

    def __init__(self, *args):
        super().__init__(*(one_line(a) if isinstance(a, str) else a for a in args))


class InputError(GpuoptError, ValueError):
    """Bad user input: the message names the field and the accepted values."""

    def __init__(self, field: str, message: str, accepted: str | None = None):
        self.field = field
        self.message = one_line(message)
        self.accepted = accepted if accepted is None else one_line(accepted)
        text = f"{field}: {message}"
        if accepted:
            text += f" (accepted: {accepted})"
        super().__init__(text)

    def __reduce__(self):  # pickle and copy rebuild it from its parts (its __init__ takes three)
        return (type(self), (self.field, self.message, self.accepted))


class ProviderError(GpuoptError):
    """A price source answered something that cannot be used."""


class PriceDataError(ProviderError):
    """A price row or file breaks an invariant (duplicates, unknown term, mixed currency...)."""


class SnapshotError(GpuoptError):
    """The price snapshot is missing, corrupted or of an unknown schema version."""


class SolverError(GpuoptError):
    """The MILP solver did not return a proven optimal solution."""

    def __init__(self, status: str, message: str):
        self.status = status
        super().__init__(message)
