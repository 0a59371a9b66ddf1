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
from functools import lru_cache
from typing import Any

#: The mark after an estimated price (a dagger), explained in the report's footnote.
ESTIMATED_MARK = "†"
ESTIMATED_NOTE = ("estimated price: derived from quoted prices by a documented discount rule (price source "
                  "\"rule:...\"), not quoted by the provider; refresh prices (`gpuopt prices refresh`) for quoted rates")


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
                       wide_columns=wide_columns)
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
    """Plain text safe in Markdown: no HTML tags, no emphasis or link syntax taken literally."""
    t = html.escape(str(x), quote=False).replace("\\", "\\\\")
    for ch in ("*", "_", "`", "[", "]", "#"):
        t = t.replace(ch, "\\" + ch)
    return t


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
