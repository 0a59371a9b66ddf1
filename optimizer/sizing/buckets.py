"""Request-size ranges of a serving trace (issue 27, point 6: a mix of GPU types by request size).

Mélange (Griggs et al., arXiv 2404.14527) shows that the GPU type with the most tokens per dollar changes with the
request size -- small requests on L4/A10G, large ones on A100/H100 -- so a service whose requests mix short chats and
long documents can cost less when a router sends each size range to its own pool. Mélange buckets by input and
output length; a router knows a request's prompt when it arrives but not how long the answer will be, so gpuopt cuts
by input length alone: the trace's requests fall into ranges on a fixed grid of prompt lengths, ranges too small to
hold a pool of their own are merged into a neighbour, and each range gets its share of the requests and of the
output tokens (the demand its pool carries). ``gpuopt/size_mix.py`` plans one pool per range and keeps the split
only when it is cheaper than one pool.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Prompt-length edges (tokens) of the grid: below 256, 256-1,023, 1,024-4,095, 4,096 and above.
INPUT_EDGES = (256, 1024, 4096)
#: A range with less than this share of the requests is merged into its neighbour (a pool needs a replica).
MIN_SHARE = 0.05


@dataclass(frozen=True)
class SizeBucket:
    """One prompt-length range ``[input_lo, input_hi)`` tokens (``None``: no upper bound): its ``requests`` and
    their ``share`` of the trace, their mean lengths, and their ``token_share`` of the output tokens."""

    input_lo: int
    input_hi: int | None
    requests: int
    share: float
    mean_input: int
    mean_output: int
    token_share: float

    @property
    def label(self) -> str:
        """A short name: ``prompt<256``, ``prompt256-1023``, ``prompt4096+``."""
        if self.input_hi is None:
            return f"prompt{self.input_lo}+"
        return f"prompt<{self.input_hi}" if self.input_lo == 0 else f"prompt{self.input_lo}-{self.input_hi - 1}"

    def rule(self) -> str:
        """The routing rule in words."""
        if self.input_hi is None:
            rng = f">= {self.input_lo:,}"
        else:
            rng = f"< {self.input_hi:,}" if self.input_lo == 0 else f"{self.input_lo:,}-{self.input_hi - 1:,}"
        return (f"prompts of {rng} tokens ({100 * self.share:.0f} % of requests, {100 * self.token_share:.0f} % of "
                f"output tokens; mean {self.mean_input:,} in / {self.mean_output:,} out)")


def size_buckets(lengths, *, edges: tuple[int, ...] = INPUT_EDGES, min_share: float = MIN_SHARE) -> list[SizeBucket]:
    """The prompt-length ranges of ``lengths`` ((input, output) tokens per request), shortest first: the grid's
    non-empty ranges, the smallest one under ``min_share`` of the requests merged into its smaller neighbour, again
    until every range holds ``min_share`` (one range when the trace does not split). Raises ValueError for an empty
    trace."""
    reqs = [(int(i), int(o)) for i, o in lengths]
    if not reqs:
        raise ValueError("no requests")
    lows = (0,) + tuple(edges)
    ranges = [[lo, hi, []] for lo, hi in zip(lows, tuple(edges) + (None,))]
    for i, o in reqs:
        next(r for r in ranges if r[1] is None or i < r[1])[2].append((i, o))
    ranges = [r for r in ranges if r[2]]
    n = len(reqs)
    while len(ranges) > 1:
        k = min(range(len(ranges)), key=lambda j: len(ranges[j][2]))
        if len(ranges[k][2]) >= min_share * n:
            break
        if k == 0:
            j = 1
        elif k == len(ranges) - 1:
            j = k - 1
        else:
            j = k - 1 if len(ranges[k - 1][2]) <= len(ranges[k + 1][2]) else k + 1
        a, b = sorted((k, j))
        ranges[a:b + 1] = [[ranges[a][0], ranges[b][1], ranges[a][2] + ranges[b][2]]]
    total_out = sum(o for _, o in reqs) or 1
    return [SizeBucket(lo, hi, len(rs), len(rs) / n, max(1, round(sum(i for i, _ in rs) / len(rs))),
                       max(1, round(sum(o for _, o in rs) / len(rs))), sum(o for _, o in rs) / total_out)
            for lo, hi, rs in ranges]
