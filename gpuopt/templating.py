"""Reports from one template system: the Jinja2 environment every report (plan: gpuopt/report.py, review:
gpuopt/review_report.py) renders with, and the filters its templates use.

Templates live in ``gpuopt/templates/`` (package data): ``base.html.j2`` (the page: head, embedded ``report.css``,
key figures, footnotes) and ``base.md.j2`` (the Markdown skeleton) are extended by ``plan.*.j2`` and
``review.*.j2``; ``macros.html.j2`` / ``macros.md.j2`` hold the tables, charts and key figures both use. HTML
templates (``*.html.j2``) autoescape every value; Markdown templates escape with the ``md`` and ``md_cell``
filters. An HTML report is one self-contained file: CSS inline, charts as ``data:image/png;base64`` URIs, no script.

Estimated prices: a price derived by a documented rule rather than quoted (an offer whose ``source`` starts with
``rule:``, gpuopt.kernel.records.is_estimated) is shown with :data:`ESTIMATED_MARK` after it and a footnote saying so.
"""

from __future__ import annotations

import base64
import html
import re
from functools import lru_cache
from typing import Any

#: The mark after an estimated price (a dagger), explained in the report's footnote.
ESTIMATED_MARK = "†"
ESTIMATED_NOTE = ("estimated price: derived from quoted prices by a documented discount rule (price source "
                  "\"rule:...\"), not quoted by the provider; refresh prices (`gpuopt prices refresh`) for quoted rates")


#: The mark after a figure that rests on a plan not proven optimal (stopped at its time limit), explained at the
#: top of every output (:func:`unproven_caveat`).
UNPROVEN_MARK = "‡"
UNPROVEN_NOTE = "not proven optimal: rests on a plan the solver stopped at its time limit (see the top)"


def _plain_usd(x: float) -> str:
    return f"${x:,.2f}"


def suggested_time_limit(limit_s: float | None) -> int | None:
    """The ``--time-limit`` (seconds) to suggest after a solve stopped at ``limit_s``: four times it, at least
    60 s (the default); None when the limit is not known."""
    if limit_s is None:
        return None
    return int(max(60.0, 4.0 * float(limit_s)))


def rerun_hint(limit_s: float | None) -> str:
    """'rerun with --time-limit 240 (this run had 60 s)', or with a longer --time-limit when the limit is unknown."""
    n = suggested_time_limit(limit_s)
    if n is None:
        return "rerun with a longer --time-limit"
    return f"rerun with --time-limit {n} (this run had {float(limit_s):g} s)"


#: The strategies a plan is priced against (optimizer.planning.explain), as every output names them.
STRATEGY_LABELS = {
    "all_on_demand": "all on-demand", "all_reserved_1y": "all reserved 1 year", "all_reserved_3y": "all reserved 3 years",
    "spot_where_allowed": "spot where allowed", "this_plan": "this plan",
}
#: The --pricing that plans a strategy alone.
_STRATEGY_RERUN = {"all_on_demand": "--pricing on_demand", "all_reserved_1y": "--pricing reserved_1y",
                   "all_reserved_3y": "--pricing reserved_3y"}


def unproven_caveat(status: str | None, gap: float | None, total_usd: float | None = None, *,
                    objective: str = "cost", time_limit_s: float | None = None,
                    strategies: dict | None = None) -> str | None:
    """What every output of a plan says first when the plan is not proven optimal, None when it is (or there is no
    plan). ``status`` is the plan's solve status (only ``time_limit`` -- a feasible plan, the solver stopped at its
    time limit -- gives a caveat); ``gap`` its relative gap (cost - bound) / cost, 0..1; ``total_usd`` the plan's
    total over the horizon (with the cost objective the best plan may cost up to gap x total less: the bound is
    total x (1 - gap)); ``time_limit_s`` the limit the solve had (seconds; the rerun suggestion).
    Example: "NOT PROVEN OPTIMAL: the solver stopped at its time limit with a gap of 4.2 %: the best plan may cost
    up to $3,600.00 less than this one's $85,276.05; rerun with --time-limit 240 (this run had 60 s)". A gap of 1
    (no bound proven, e.g. a plan by construction) says that instead of "may cost up to $X less than $X"."""
    if status != "time_limit":
        return None
    pct = "unknown" if gap is None else f"{100 * gap:.3g} %"
    out = f"NOT PROVEN OPTIMAL: the solver stopped at its time limit with a gap of {pct}"
    if gap is not None and gap >= 1.0 - 1e-9:  # no lower bound in the time (a plan by construction): say so
        out = ("NOT PROVEN OPTIMAL: the solver stopped at its time limit with no lower bound proven: this plan "
               "meets every constraint, but how much a cheaper one could save is unknown")
    elif objective == "cost" and gap is not None and total_usd:
        out += (f": the best plan may cost up to {_plain_usd(gap * total_usd)} less than this one's "
                f"{_plain_usd(total_usd)}")
    elif gap is not None:
        out += f": the best plan's objective may be up to {pct} better"
    out += f"; {rerun_hint(time_limit_s)}"
    # a new user: an unproven plan of $573,488.13 beside an all-on-demand plan of $109,340.98 the same run priced,
    # and nothing pointing at it. Each strategy is a plan of the same demand under the same rules
    cheaper = sorted((float(v["total_usd"]), k) for k, v in (strategies or {}).items()
                     if k in _STRATEGY_RERUN and isinstance(v, dict) and v.get("total_usd") is not None
                     and total_usd and float(v["total_usd"]) < float(total_usd) * (1 - 1e-9))
    if objective == "cost" and cheaper:
        usd, key = cheaper[0]
        label, option = STRATEGY_LABELS[key], _STRATEGY_RERUN[key]
        out += (f". This run also priced {label} at {_plain_usd(usd)}, {_plain_usd(float(total_usd) - usd)} less than "
                f"this plan: plan with {option} for it, or rerun with the longer --time-limit")
    return out


def not_computed_hint(note: str | None, time_limit_s: float | None) -> str:
    """The note of a comparison that was not computed (why; gpuopt.optimizer's explanations), with how to get it:
    the explanations run within the solver's time limit, so a longer --time-limit computes them."""
    why = str(note or "not computed").rstrip(".")
    if "; to compute it, " in why:  # already says how (a JSON note rendered again)
        return why
    return f"{why}; to compute it, {rerun_hint(time_limit_s)}"


def with_not_computed_hints(doc: Any, time_limit_s: float | None) -> Any:
    """``doc`` (a plan's JSON, nested dicts and lists) with every ``note``/``reason`` that says a comparison was
    "not computed" extended by how to compute it (:func:`not_computed_hint`): issue 32, "comparisons that were not
    computed say why and how to get them (--time-limit)", in the JSON as in the table and the reports."""
    if isinstance(doc, list):
        return [with_not_computed_hints(v, time_limit_s) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for k, v in doc.items():
        if k in ("note", "reason") and isinstance(v, str) and "not computed" in v:
            out[k] = not_computed_hint(v, time_limit_s)
        else:
            out[k] = with_not_computed_hints(v, time_limit_s)
    return out


@lru_cache(maxsize=2)
def environment(markup: str = "html"):
    """The Jinja2 environment of the report templates of ``markup`` ("html" or "markdown"; loaded once each).
    StrictUndefined: a missing value is an error, never an empty cell. HTML escapes every value with
    ``html.escape`` (``&quot;``, ``&#x27;``: the same text the reports had before templates); Markdown escapes in
    its templates (the ``md``/``md_cell`` filters)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined
    from markupsafe import Markup

    def escape(v: Any) -> Any:
        return v if isinstance(v, Markup) else Markup(html.escape(str(v)))

    is_html = markup == "html"
    env = Environment(loader=PackageLoader("gpuopt", "templates"), autoescape=is_html,
                      finalize=escape if is_html else None, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(md=md_text, md_cell=md_cell, data_uri=png_data_uri)
    env.globals.update(ESTIMATED_MARK=ESTIMATED_MARK, ESTIMATED_NOTE=ESTIMATED_NOTE, right_columns=right_columns,
                       wide_columns=wide_columns, table_fit=table_fit, NUMBER_CELL_MAX=NUMBER_CELL_MAX)
    return env


def render(template: str, **context: Any) -> str:
    """Render ``template`` (a name under gpuopt/templates/) with ``context``; one trailing newline."""
    text = environment("html" if template.endswith(".html.j2") else "markdown").get_template(template).render(**context)
    return text.rstrip("\n").replace("\n\n\n", "\n\n") + "\n"


def key_figure(id: str, label: str, value: str, *, mark: str = "", main: bool = False, note: str = "") -> dict:
    """One key figure at the top of a report: ``id`` (the HTML element id of its value), ``label``, ``value`` (text),
    ``mark`` (ESTIMATED_MARK when it rests on an estimated price), ``main`` (highlighted), ``note`` (a line under it)."""
    return {"id": id, "label": label, "value": value, "mark": mark, "main": main, "note": note}


def md_text(x: Any) -> str:
    """Plain text safe in Markdown, readable as it is: ``p99 TTFT <= 2000 ms`` stays so (no HTML entities), but
    what a Markdown renderer would take for markup is backslash-escaped (CommonMark escapes any ASCII punctuation):
    a ``<`` that could open an HTML tag or autolink (``<`` before a letter, ``/``, ``!`` or ``?``), a ``&`` that
    could start an entity (``&amp;``, ``&#38;``), emphasis, code, link and heading characters."""
    t = str(x).replace("\\", "\\\\")
    for ch in ("*", "_", "`", "[", "]", "#"):
        t = t.replace(ch, "\\" + ch)
    t = re.sub(r"<(?=[A-Za-z/!?])", r"\\<", t)
    return re.sub(r"&(?=#?[A-Za-z0-9]+;)", r"\\&", t)


def md_cell(x: Any) -> str:
    """md_text for a Markdown table cell: pipes escaped, one line."""
    return md_text(x).replace("|", "\\|").replace("\n", " ")


def png_data_uri(png: bytes) -> str:
    """A PNG as a ``data:image/png;base64,...`` URI (the HTML report embeds its charts)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


#: Column heads of numbers (right-aligned) besides those starting with "$" or ending in " $" / " $/mo".
NUMBER_COLUMNS = {"count", "months", "hours/month each", "total", "used", "upfront", "commitment", "most in a month",
                  "break-even", "replicas", "age (days)", "savings vs all on-demand", "instance-hours", "peak",
                  "average", "quantity", "utilization", "break-even months"}


def right_columns(head: list[str]) -> set[int]:
    """Indices of the columns of numbers in a table with column heads ``head`` (right-aligned)."""
    return {i for i, h in enumerate(head) if h.startswith("$") or "$" in h.split(" ")[-1] or h in NUMBER_COLUMNS}


def wide_columns(head: list[str], rows: list[list[Any]], longest: int = 24) -> set[int]:
    """Indices of the text columns with a cell longer than ``longest`` characters: given a minimum width in HTML so
    that a table of many columns does not squeeze them into a word a line."""
    right = right_columns(head)
    return {i for i in range(len(head)) if i not in right and any(len(str(r[i])) > longest for r in rows if i < len(r))}

#: Pixels a character of a report table takes (0.8em of 16 px, system-ui; tabular figures are wider than the
#: average letter: measured in Chromium, see tests/test_report_browser.py) and a cell's padding and border.
TABLE_CHAR_PX = 7.0
TABLE_CELL_PX = 12
#: The least characters a text column is narrowed to before columns are left out (terminal tables: 28, 20, 16, then
#: columns, then 12; gpuopt.render._fit); the page's margins and room for a scroll bar.
TABLE_TEXT_MIN = 10
#: A cell of a column of numbers longer than this is text (why a strategy has no total): it wraps, left-aligned.
NUMBER_CELL_MAX = 24
TABLE_WIDE_PX = 128  # td.w (a text column with long cells): min-width 10em of 12.8 px
PAGE_MARGIN_PX = 80


def table_fit(head: list[str], rows: list[list[Any]], drop: tuple[str, ...] | list[str] = (), key: str = "t") -> dict:
    """How an HTML report table fits a narrow window, as the terminal tables do (gpuopt.render._fit): numbers never
    wrap; text wraps between words, a long word breaks (CSS in report.css); when even then the table is wider than
    the window, the columns named in ``drop`` are left out in that order (the least needed first; without
    ``drop``, the text columns from the right, never the first column), one at a time, each below the window width
    (px, estimated from the cells' characters) at which the table no longer fits, and a note under the table says
    which are left out and that a wider window, the CSV or the JSON beside the report shows them.

    Returns ``{"id", "css": CSS text (media queries: a column is left out by its position, ``:nth-child``),
    "notes": [(K, text)]}``; ``key`` makes the table's element id (``fit-<key>``) unique in the page."""
    right = right_columns(head)
    wide = wide_columns(head, rows)

    def need(i: int) -> float:
        cells = [str(r[i]) for r in rows if i < len(r)]
        words = [w for c in cells + [head[i]] for w in c.split()] or [""]
        if i in right:  # numbers never wrap; the head wraps between its words; a long text cell wraps
            chars = max([len(c) for c in cells if len(c) <= NUMBER_CELL_MAX]
                        + [max(len(w) for w in head[i].split() or [""]), min(TABLE_TEXT_MIN, len(head[i]))])
        else:
            chars = min(max(len(c) for c in cells + [head[i]]), max(len(w) for w in words), TABLE_TEXT_MIN)
        return max(chars * TABLE_CHAR_PX, TABLE_WIDE_PX if i in wide else 0) + TABLE_CELL_PX

    order = [head.index(d) for d in drop if d in head]
    if not drop:
        order = [i for i in range(len(head) - 1, 0, -1) if i not in right]
    tid = f"fit-{key}"
    shown = list(range(len(head)))
    css: list[str] = []
    notes: list[tuple[int, str]] = []
    hidden: list[str] = []
    for k, i in enumerate(order, start=1):
        width = sum(need(j) for j in shown) + PAGE_MARGIN_PX
        if width <= 640:  # fits a narrow window as it is: nothing more to leave out
            break
        shown.remove(i)
        hidden.append(head[i])
        notes.append((k, f"Narrow window: {', '.join(hidden)} not shown (a wider window, or the CSV or JSON "
                         "beside this report, shows them)."))
        cells = f"#{tid} th:nth-child({i + 1}),#{tid} td:nth-child({i + 1})"
        css.append(f"@media (max-width:{int(width)}px){{{cells}{{display:none}}#{tid} .n{k}{{display:block}}"
                   + (f"#{tid} .n{k - 1}{{display:none}}" if k > 1 else "") + "}")
    return {"id": tid, "css": "".join(css), "notes": notes}


def serving_split_text(s: dict) -> str:
    """What a serving sizing row adds to a plan's workload table (issue 27): a disaggregated unit's split and KV
    link, or the utilization the replica is sized at; then the user's measured row(s) the replica's figures come
    from (issue 31, point 6: ``estimate_source``); "" otherwise."""
    src = s.get("estimate_source") or ""
    return _split_text(s) + (f"; {src}" if src.startswith("measured:") else "")


def _split_text(s: dict) -> str:
    d = s.get("disaggregated")
    if d and d.get("pool"):  # one pool of a disaggregated deployment on its own GPU type (gpuopt.phase_mix)
        return (f"; {d['pool']} pool: replicas of {d['gpus_per_replica']} GPU(s) at {d['request_rate']:,.3g} requests/s, "
                f"KV {d['kv_mib_per_request']:,.0f} MiB per request over {d['link']}")
    if d:
        return (f"; disaggregated unit: {d['prefill_replicas']} prefill + {d['decode_replicas']} decode replicas of "
                f"{d['gpus_per_replica']} GPU(s) over {d['instances']} instance(s), KV over {d['link']}")
    if s.get("utilization") is not None:
        return f"; sized at {100 * s['utilization']:.0f} % of saturation"
    return ""
