"""The size ceilings of a plan's inputs (issue 33 point 2), in one place; README "Size limits" lists them.

Each is refused with a one-line InputError naming the input, the limit, the measured cost behind it and the way out:
the request's fields by ``gpuopt.request`` (workloads, min_replicas, a ``demand:`` list, blocks), the offers and
candidates by ``optimizer.planning.size_guard`` (which also refuses a model whose estimated memory exceeds a share of
this machine's). Here in the kernel so that both layers read the same numbers (imports go down only).
Figures measured on the 2-core development machine, shipped snapshot.
"""

from __future__ import annotations

#: Most workloads in one plan (benchmarks/bench_workloads.py: 200 services plan in ~1 minute at ~0.5 GB, 500 in ~3
#: minutes at ~1 GB on 2 cores; a breaker's 2,000 ran out of memory at 7 GB before the limit).
MAX_WORKLOADS = 500
#: Most replicas one workload may ask to keep running (min_replicas, --min-replicas): the exact enumeration's
#: states grow with the square of the floor (optimizer.planning.exact.hourly_table: (m+1)^2 classes); one 7B service
#: at --time-limit 20: 2 replicas planned in 7.6 s, 20 in 40 s, 100 still ran at 120 s, 100,000 past 600 s.
MAX_REPLICAS = 1_000
#: Most demand blocks of one serving workload (an inline ``demand:`` list's length, ``--blocks``): every block is a
#: column of variables per candidate (optimizer.planning.size_guard); 8,760 is a month in 5-minute bins (730 h x 12).
MAX_DEMAND_BLOCKS = 8_760
#: Most offer rows a plan may read (after its providers, regions and GPUs filter them): the shipped snapshot has 7,160
#: and the largest --catalog measured has 500,000 (README "Your own offers CSV": parsed in 4.8 s); each row is then
#: sized for every workload.
MAX_OFFER_ROWS = 500_000
#: Most candidates (offer rows a workload fits, before pruning) summed over the plan's workloads: a 7B service fits
#: 3,300-4,300 of the snapshot's 7,160 rows, so MAX_WORKLOADS such services (~2 million; benchmarks/bench_workloads.py:
#: 500 workloads at ~1 GB) pass, and so does every row for every one of 500 workloads (3.6 million).
MAX_CANDIDATES = 5_000_000
