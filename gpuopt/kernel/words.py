"""Counts in words, the same in every output: ``plural(1, "GPU")`` is "1 GPU", ``plural(3, "replica")`` "3 replicas",
``count_range(3, 3, "replica")`` "3 replicas" and ``count_range(2, 4, "replica")`` "2-4 replicas" (never "1 GPUs" or
"3-3 replicas", issue 32)."""

from __future__ import annotations


def plural(x: float, noun: str, fmt: str = "g") -> str:
    """``x`` and ``noun``, plural unless ``x`` is 1 or a share of one: '1 GPU', '2 GPUs', '0 blocks', '0.5 GPU'.
    ``fmt`` formats the number (``","`` for thousands separators: '4,096 GPUs')."""
    return f"{x:{fmt}} {noun}" + ("s" if float(x) > 1 or float(x) == 0 else "")


def count_range(low: float, high: float, noun: str, fmt: str = "g") -> str:
    """A count that varies from ``low`` to ``high``: '2-4 replicas'; one number when they are equal: '3 replicas'."""
    if low == high:
        return plural(low, noun, fmt)
    return f"{low:{fmt}}-{high:{fmt}} {noun}s"
