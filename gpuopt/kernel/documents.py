"""The versioned envelope of every JSON document (``schema_version`` + ``kind``) and the pandas frame of a result.

Every result object's ``to_dict()`` wraps its body with :func:`envelope`; ``to_dataframe()`` uses :func:`frame`.
The pydantic models that describe each document are in ``gpuopt.schemas`` (above this kernel), which imports
``VERSIONS`` from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

VERSIONS: dict[str, int] = {
    "recommend": 2, "estimate": 1, "review": 1, "prices-list": 1, "prices-status": 1, "prices-diff": 1,
    "prices-refresh": 1, "prices-import": 1, "plan-diff": 1, "error": 1, "models": 1,
    "report-data": 1, "quotas": 1, "spot-refresh": 1, "spot-scores": 1,
}

#: Exit codes of every command (README "Exit codes").
EXIT_CODES: dict[int, str] = {
    0: "ok",
    1: "bad input (a file, an option's value), or no plan meets the constraints",
    2: "usage error: an unknown command or option, a missing argument",
    3: "a price source or the network failed (prices refresh: some provider or region was not refreshed)",
    4: "gpuopt diff --fail-above: the plan's total rose by more than the gate",
    5: "not solved within the time limit: no plan found, none proven impossible",
}


def envelope(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """``{"schema_version": VERSIONS[kind], "kind": kind, **body}`` (a ``schema_version`` or ``kind`` in ``body``
    is replaced). Raises KeyError for an unknown kind."""
    out = {"schema_version": VERSIONS[kind], "kind": kind}
    out.update({k: v for k, v in body.items() if k not in ("schema_version", "kind")})
    return out


def frame(rows: list[dict[str, Any]] | None, columns: list[str] | type[BaseModel] | None = None):
    """A pandas DataFrame of ``rows`` (one row per dict; nested dicts and lists stay Python objects). ``columns``
    (names, or a model whose fields name them) are the columns of an empty result, so that a pipeline's column
    names hold when nothing matched."""
    import pandas as pd

    rows = list(rows or [])
    if rows or columns is None:
        return pd.DataFrame(rows)
    names = list(columns.model_fields) if isinstance(columns, type) else list(columns)
    return pd.DataFrame(rows, columns=names)


class DictResult(dict):
    """A result that is a plain dict (``prices_status``, ``prices_import``) with the methods of the other results:
    ``to_dict()`` (the versioned document) and ``to_dataframe()`` (its table: :attr:`frame_key`'s rows)."""

    kind = ""
    frame_key = ""

    def to_dict(self) -> dict[str, Any]:
        return envelope(self.kind, dict(self))

    #: the model of one row of :attr:`frame_key` (the columns of an empty table)
    row_model: type[BaseModel] | None = None

    def to_dataframe(self):
        return frame(self.get(self.frame_key), self.row_model)
