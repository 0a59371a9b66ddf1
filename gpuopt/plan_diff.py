"""`gpuopt diff OLD.json NEW.json`: what changed between two plans, for cost gates in CI (issue 12, point 7; the way
``infracost diff`` compares two cost estimates).

The inputs are the documents ``gpuopt recommend --format json`` writes (docs/json-schema.md). The diff compares the
money of the whole plan (total over the horizon, the most paid in one month, commitments, upfront) and its lines,
matched by what is bought: provider, region, zone, instance type, pricing, payment and the months the line covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuopt.kernel.errors import InputError

#: Money keys of a plan document that the diff compares, USD.
MONEY_KEYS = ("total_usd", "max_month_usd", "commitment_usd", "upfront_usd")
#: What identifies a line (the same purchase in both plans).
LINE_KEY = ("provider", "region", "zone", "instance_type", "pricing", "payment", "start_month", "end_month")
#: Exit code of ``gpuopt diff --fail-above`` when the total rose by more than the limit (0: within it; 1: bad input).
EXIT_COST_GATE = 4


def load_plan_json(path: str | Path, which: str) -> dict[str, Any]:
    """A ``gpuopt recommend --format json`` document from ``path``.

    Raises:
        InputError(which): the file is missing, is not JSON, or is not a plan (no ``total_usd`` and ``lines``;
        ``which`` is "old" or "new"), or an amount (``total_usd``, ``max_month_usd``, ``commitment_usd``,
        ``upfront_usd``, a line's ``total_usd``) is not a finite number from 0 to 1e15 USD, as recommend writes them.
    """
    from gpuopt.kernel.inputs import load_json_file

    p = Path(path)
    if not p.is_file():
        raise InputError(which, f"no such file: {p}", accepted="a file written by gpuopt recommend --format json")
    try:  # UTF-8 with or without a byte-order mark, bounded size and nesting, finite numbers, no duplicate keys
        doc = load_json_file(p, which, "plan JSON")
    except InputError as exc:
        raise InputError(which, exc.message, accepted="a file written by gpuopt recommend --format json") from None
    doc = _known_version(doc, p, which)
    if not isinstance(doc.get("lines"), list) or \
            not isinstance(doc.get("total_usd"), (int, float)) or isinstance(doc.get("total_usd"), bool):
        raise InputError(which, f"{p} is not a gpuopt plan (no total_usd and lines)",
                         accepted="a file written by gpuopt recommend --format json")
    from gpuopt.kernel.inputs import check_number

    for k in MONEY_KEYS:  # the amounts diff_plans compares: numbers (or null), finite, 0 to 1e15 USD (schemas.Usd)
        if doc.get(k) is not None:
            check_number(doc[k], which, f"{p}: {k}")
    for i, line in enumerate(doc["lines"]):
        if not isinstance(line, dict):
            raise InputError(which, f"{p}: lines[{i}] is not an object", accepted="a file written by gpuopt recommend")
        if line.get("count") is not None:
            check_number(line["count"], which, f"{p}: lines[{i}].count", whole=True)
        if line.get("total_usd") is not None:
            check_number(line["total_usd"], which, f"{p}: lines[{i}].total_usd")
    return doc


#: The plan documents ``gpuopt diff`` reads: ``recommend`` of schema_version 2 (docs/json-schema.md), and of 1 --
#: gpuopt's output before it had a horizon: no ``schema_version`` key, one month (``total_monthly_usd``), no line
#: totals -- read with a note of what it lacks.
KNOWN_VERSIONS = (1, 2)
V1_NOTE = ("is a schema_version 1 plan (one month, no horizon): its total is that month's cost "
           "(total_monthly_usd), it has no max-month, commitment or upfront amounts and its lines no totals, so "
           "those compare as 0")


def _known_version(doc: Any, p: Path, which: str) -> dict[str, Any]:
    """``doc`` as a schema_version 2 plan document, a version 1 one lifted with a ``_notes`` entry, else an
    InputError naming the file (another kind of document, an unknown or missing schema_version: issue 30)."""
    accepted = "a file written by gpuopt recommend --format json (schema_version 1 or 2)"
    if not isinstance(doc, dict):
        raise InputError(which, f"{p} is not a gpuopt plan (a JSON {type(doc).__name__}, not an object)",
                         accepted=accepted)
    kind = doc.get("kind")
    if kind is not None and kind != "recommend":
        raise InputError(which, f"{p} is a gpuopt {kind!s} document, not a plan", accepted=accepted)
    version = doc.get("schema_version")
    if version is None:
        if "total_monthly_usd" in doc and isinstance(doc.get("lines"), list):  # version 1 wrote no version key
            version = 1
        else:
            raise InputError(which, f"{p} has no schema_version: not a plan this gpuopt wrote", accepted=accepted)
    if isinstance(version, bool) or version not in KNOWN_VERSIONS:
        raise InputError(which, f"{p} has schema_version {version!r}, which this gpuopt does not read "
                                f"(it reads {', '.join(map(str, KNOWN_VERSIONS))})", accepted=accepted)
    if version == 1:
        from gpuopt.kernel.inputs import check_number

        total = doc.get("total_monthly_usd")
        if total is not None:
            check_number(total, which, f"{p}: total_monthly_usd")
        doc = {**doc, "total_usd": total if total is not None else 0.0,
               "_notes": [f"{which} ({p.name}) {V1_NOTE}"]}
    return doc


def _key(line: dict) -> tuple:
    return tuple(str(line.get(k, "")) for k in LINE_KEY)


@dataclass
class PlanDiff:
    """The difference NEW - OLD of two plans. ``money``: key -> (old, new, change, change %); ``lines``: one dict per
    purchase that was added, removed or changed (count or total), with ``change`` "added" | "removed" | "changed"."""

    old: str
    new: str
    money: dict[str, tuple[float, float, float, float | None]]
    lines: list[dict[str, Any]] = field(default_factory=list)
    status: tuple[str, str] = ("", "")
    notes: list[str] = field(default_factory=list)

    @property
    def total_change_pct(self) -> float | None:
        return self.money["total_usd"][3]

    def to_dataframe(self):
        """The purchases added, removed or changed, one row each (pandas DataFrame)."""
        from gpuopt.schemas import frame

        from gpuopt.schemas import LineChange

        return frame(self.lines, LineChange)

    def to_dict(self) -> dict[str, Any]:
        """The ``plan-diff`` document (gpuopt.schemas.PlanDiffDoc)."""
        from gpuopt.schemas import envelope

        return envelope("plan-diff", {"old": self.old, "new": self.new, "status": {"old": self.status[0], "new": self.status[1]},
                "money": {k: {"old": o, "new": n, "change": d, "change_pct": p}
                          for k, (o, n, d, p) in self.money.items()},
                "lines": self.lines, "notes": list(self.notes)})


def diff_plans(old: dict[str, Any], new: dict[str, Any], *, old_name: str = "old", new_name: str = "new") -> PlanDiff:
    """NEW - OLD of two plan documents: money (USD; change % of the old, None when the old is 0) and lines.

    A line is the same purchase when provider, region, zone, instance type, pricing, payment and months match; its
    ``count`` (instances) and ``total_usd`` are compared, a line only one plan has is added or removed.
    """
    money = {}
    for k in MONEY_KEYS:
        o, n = float(old.get(k) or 0.0), float(new.get(k) or 0.0)
        d = round(n - o, 2)
        money[k] = (round(o, 2), round(n, 2), d, None if abs(o) < 1e-9 else round(100.0 * d / o, 2))
    olds = {}
    for ln in old["lines"]:
        olds.setdefault(_key(ln), []).append(ln)
    news = {}
    for ln in new["lines"]:
        news.setdefault(_key(ln), []).append(ln)
    lines = []
    for key in sorted(set(olds) | set(news)):
        a, b = olds.get(key, []), news.get(key, [])
        count_o, count_n = sum(int(x.get("count") or 0) for x in a), sum(int(x.get("count") or 0) for x in b)
        usd_o = round(sum(float(x.get("total_usd") or 0.0) for x in a), 2)
        usd_n = round(sum(float(x.get("total_usd") or 0.0) for x in b), 2)
        change = "added" if not a else "removed" if not b else "changed"
        if change == "changed" and count_o == count_n and abs(usd_o - usd_n) < 0.005:
            continue
        lines.append({**dict(zip(LINE_KEY, key)), "change": change, "count_old": count_o, "count_new": count_n,
                      "total_usd_old": usd_o, "total_usd_new": usd_n, "total_usd_change": round(usd_n - usd_o, 2)})
    lines.sort(key=lambda x: -abs(x["total_usd_change"]))
    return PlanDiff(old=old_name, new=new_name, money=money, lines=lines,
                    status=(str(old.get("status", "")), str(new.get("status", ""))),
                    notes=list(old.get("_notes") or []) + list(new.get("_notes") or []))


def gate(diff: PlanDiff, fail_above_pct: float | None) -> tuple[bool, str]:
    """Whether the plan's total rose by more than ``fail_above_pct`` % (a cost gate), and a one-line verdict.

    A plan that was free (old total 0) and costs now fails any gate; so does a new plan with no solution
    (infeasible, not solved: its total 0 is no saving). Raises InputError("fail_above") for a negative
    or non-finite limit."""
    if fail_above_pct is None:
        return False, ""
    import math

    if not math.isfinite(fail_above_pct) or fail_above_pct < 0:
        raise InputError("fail_above", f"must be a finite percentage >= 0, got {fail_above_pct!r}",
                         accepted="a number >= 0, e.g. 5")
    if diff.status[1] in ("infeasible", "not_solved"):
        return True, (f"the new plan has no solution (status {diff.status[1]}): its total of $0.00 is not a saving; "
                      "the gate fails")
    if diff.status[0] in ("infeasible", "not_solved"):
        return True, (f"the old plan has no solution (status {diff.status[0]}): there is no cost to compare with; "
                      "the gate fails")
    o, n, d, pct = diff.money["total_usd"]
    if pct is None:
        failed = n > 0.005
    else:
        failed = pct > fail_above_pct + 1e-9
    money = f"-${-d:,.2f}" if d < 0 else f"${d:,.2f}"
    verdict = (f"total {'rose' if d > 0 else 'changed'} by {money} "
               + (f"({pct:+.2f} %)" if pct is not None else "(from $0)")
               + (f": above the limit of {fail_above_pct:g} %" if failed else f": within {fail_above_pct:g} %"))
    return failed, verdict
