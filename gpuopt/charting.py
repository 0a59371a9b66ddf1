"""The chart kit both reports draw with (gpuopt/report.py: the plan; gpuopt/review_report.py: the review).

matplotlib on its Agg canvas (no pyplot state), imported inside the functions: importing this module is cheap. The
output is deterministic: fixed figure sizes and DPI, no PNG software tag.
"""

from __future__ import annotations

import io

#: Chart size in inches and resolution (1000 x 450 pixels; fixed: deterministic), and font sizes in points.
FIG_SIZE = (10.0, 4.5)
FIG_DPI = 100
FONT_PT = 11
TITLE_PT = 13


def figure(size: tuple[float, float] = FIG_SIZE):
    """A matplotlib figure on the Agg canvas (no pyplot state), constrained layout (labels never cut off).

    ``size`` is (width, height) in inches, drawn at FIG_DPI dots per inch. Returns a ``matplotlib.figure.Figure``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=FIG_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig) -> bytes:
    """The PNG file of ``fig`` (a matplotlib Figure) as bytes, at FIG_DPI dots per inch, without the software tag
    (the same figure gives the same bytes)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=FIG_DPI, metadata={"Software": None})
    return buf.getvalue()


def dollars(v: float) -> str:
    """An amount in USD as a chart label, whole dollars with thousands separators: 1234.5 -> ``\\$1,234``.

    The dollar sign is escaped (``\\$``) so matplotlib's mathtext does not pair two plain ones into math."""
    return f"\\${v:,.0f}"  # "\$": a literal dollar sign (matplotlib's mathtext would pair plain ones)
