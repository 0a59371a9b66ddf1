"""Memory and time of the keyless AWS refresh (issue 29: "bounded memory < 500 MB") on a region file of real size.

AWS's per-region EC2 price list CSV is hundreds of MB (every instance type, operating system, tenancy, license and
term). This script writes one of ``--mb`` MB in the public format -- the GPU rows of tests/test_aws_bulk.py's
fixture (p5.48xlarge us-east-1: the shipped on-demand and RI quotes) among filler rows of non-GPU types (m5.large at
its 2021 list price, as in tests/fixtures/aws/AmazonEC2_bulk_sample.derived.csv) --, serves it with a Savings Plans
file on 127.0.0.1, runs ``gpuopt.api.prices_refresh(providers=["aws"], aws_source="bulk")`` for that region into a
temporary cache, and prints the wall time, the bytes read and the process's peak resident memory
(``resource.getrusage``, ru_maxrss). Filler rows are not prices anyone plans on: they are there for their size.

    python benchmarks/bench_aws_bulk.py [--mb 400]
"""

from __future__ import annotations

import argparse
import csv
import http.server
import io
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))


def write_csv(path: Path, mb: int) -> int:
    import test_aws_bulk as t

    head = t.ec2_csv("us-east-1")
    filler = io.StringIO()
    w = csv.writer(filler, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i in range(200):
        w.writerow(t._row(f"M5SKU{i:011d}", "6YS6EN2CT7", "JRTCKXETXF", "OnDemand", "Hrs", "0.0960000000",
                          "m5.large", "us-east-1", gpu=""))
    block = filler.getvalue().encode()
    with open(path, "wb") as fh:
        fh.write(head.encode())
        while fh.tell() < mb * 2**20:
            fh.write(block)
        return fh.tell()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=400, help="size of the region's EC2 CSV, MB (default 400)")
    args = ap.parse_args(argv)
    import test_aws_bulk as t

    tmp = Path(tempfile.mkdtemp(prefix="bench-aws-bulk-"))
    os.environ["GPUOPT_CACHE_DIR"] = str(tmp / "cache")
    csv_path = tmp / "index.csv"
    size = write_csv(csv_path, args.mb)
    sp = t.sp_json("us-east-1").encode()
    ec2_index = (f'{{"regions": {{"us-east-1": {{"regionCode": "us-east-1", "currentVersionUrl": '
                 f'"{t.EC2_V}/us-east-1/index.json"}}}}}}').encode()
    sp_index = f'{{"regions": [{{"regionCode": "us-east-1", "versionUrl": "{t.SP_V}/us-east-1/index.json"}}]}}'.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path.endswith("/us-east-1/index.csv"):
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                with open(csv_path, "rb") as fh:
                    while chunk := fh.read(1 << 20):
                        self.wfile.write(chunk)
                return
            body = {"/offers/v1.0/aws/AmazonEC2/current/region_index.json": ec2_index,
                    "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json": sp_index,
                    f"{t.SP_V}/us-east-1/index.json": sp}.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    from gpuopt import api

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    s = api.prices_refresh(providers=["aws"], regions=["us-east-1"], aws_source="bulk", timeout_s=60, max_attempts=1,
                           endpoints={"aws_bulk": f"http://127.0.0.1:{srv.server_address[1]}"})
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    srv.shutdown()
    (aws,) = s.providers
    print(f"EC2 CSV {size / 2**20:,.0f} MB streamed: status {aws.status}, {aws.rows_by_region} offers, "
          f"{wall:.1f} s ({size / 2**20 / wall:,.0f} MB/s)")
    print(f"peak resident memory {peak:,.0f} MB (before the refresh {rss0:,.0f} MB: imports and the shipped "
          f"snapshot); goal < 500 MB")
    return 0 if aws.status == "refreshed" and peak < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
