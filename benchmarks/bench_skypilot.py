"""gpuopt against SkyPilot's optimizer on the same one-workload questions (issue 25), measured in the same run.

    ./scripts/setup-skypilot-bench.sh            # once: SkyPilot 0.14.1 in .venv-sky, offline, HOME .sky-home
    .venv/bin/python benchmarks/bench_skypilot.py   # prints a table, writes benchmarks/last_results_skypilot.json

Target (issue 25): one-workload ``gpuopt recommend`` end to end <= 0.5x the time SkyPilot's optimizer takes on the
same question (``sky launch --dryrun`` answers its own question in about 5 s).

Each question is "the cheapest on-demand instance with N x GPU among AWS, GCP, Azure and Lambda":

* SkyPilot: a task with ``Resources(accelerators='L4:1')``, optimized for cost over the enabled clouds, timed two ways:
  ``sky launch --dryrun -y --gpus L4:1 'echo ok'`` (the CLI, wall time of the process, against a local API server
  that is already up: the server's own start is timed once and reported apart), and the in-process
  ``sky.optimizer.Optimizer.optimize(dag, quiet=True)`` call (a warm worker process of .venv-sky: catalogs loaded by
  one untimed call first).
* gpuopt: ``gpuopt recommend --gpu L4 --pricing on_demand --provider aws --provider gcp --provider azure --provider
  lambda --model meta-llama/Llama-2-7b-hf --tokens-per-second 50 --horizon 1 --no-explain --format json`` from an
  empty folder on the shipped snapshot (an empty price cache), and the same question in-process
  (``gpuopt.api.recommend``, warm). 50 tokens/s of Llama-2-7B is one replica on one GPU, so the plan is one
  instance of the cheapest offer that holds one such GPU: the same question. 8 x H100 asks for Llama-3.1-405B in
  fp8 (405 GB of weights: only an 8-GPU H100 node holds it).

Each is run once untimed (warm-up, reported as ``first_s``), then 3 times alternating the tools (the order flips
every round), best and median kept; ratios are gpuopt / SkyPilot of the same statistic. What each tool chose
(instance, region, USD/h) is reported: both read SkyPilot-catalog rows, but gpuopt prefers a dated published
quote over a catalog row and refuses rows it finds wrong, so their prices can differ (said in ``notes``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks.phases import git_state  # noqa: E402

SKY_VENV = ROOT / ".venv-sky"
SKY_HOME = ROOT / ".sky-home"
SKY = SKY_VENV / "bin" / "sky"
SKY_PY = SKY_VENV / "bin" / "python"
SEED = SKY_HOME / "seed_offline.py"
OUT = HERE / "last_results_skypilot.json"
PROVIDERS = ["aws", "gcp", "azure", "lambda"]
TARGET_RATIO = 0.5

# (label, SkyPilot accelerators, gpuopt options)
QUESTIONS = [
    ("1 x L4", "L4:1", {"gpu": "L4", "model": "meta-llama/Llama-2-7b-hf"}),
    ("1 x A10G", "A10G:1", {"gpu": "A10G", "model": "meta-llama/Llama-2-7b-hf"}),
    ("1 x A100-80GB", "A100-80GB:1", {"gpu": "A100-80GB", "model": "meta-llama/Llama-2-7b-hf"}),
    ("8 x H100", "H100:8", {"gpu": "H100", "model": "meta-llama/Llama-3.1-405B", "precision": "fp8"}),
]
COMMON = {"pricing": "on_demand", "tokens_per_second": 50.0, "horizon": 1}

# The in-process SkyPilot worker (run by .venv-sky's python): one JSON question per stdin line, one JSON answer per
# stdout line prefixed with RESULT (SkyPilot prints its own status lines on stdout too).
_SKY_WORKER = r"""
import json, sys, time
import sky
from sky import optimizer
from sky.utils.common import OptimizeTarget
for line in sys.stdin:
    acc = json.loads(line)["accelerators"]
    t0 = time.perf_counter()
    task = sky.Task(run="echo ok")
    task.set_resources(sky.Resources(accelerators=acc))
    with sky.Dag() as dag:
        dag.add(task)
    dag = optimizer.Optimizer.optimize(dag, minimize=OptimizeTarget.COST, quiet=True)
    wall = time.perf_counter() - t0
    r = dag.tasks[0].best_resources
    out = {"wall_s": wall, "cloud": str(r.cloud), "instance": r.instance_type, "region": r.region, "zone": r.zone,
           "usd_per_hour": round(r.get_cost(3600), 6)}
    print("RESULT " + json.dumps(out), flush=True)
"""


# ------------------------------------------------------------------------------------------------- helpers
def _stats(times: list[float]) -> dict:
    return {"best_s": round(min(times), 3), "median_s": round(statistics.median(times), 3), "runs": len(times),
            "all_s": [round(t, 3) for t in times]}


def _ratio(a: dict, b: dict, key: str) -> float | None:
    return round(a[key] / b[key], 3) if a.get(key) and b.get(key) else None


def sky_env() -> dict[str, str]:
    env = dict(os.environ)
    env["HOME"] = str(SKY_HOME)  # SkyPilot's ~/.sky is .sky-home/.sky: never the user's
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # boto3 never asks the instance metadata address for credentials
    env["SKYPILOT_DISABLE_USAGE_COLLECTION"] = "1"
    env["PATH"] = f"{SKY_VENV / 'bin'}:{env.get('PATH', '')}"
    for k in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(k, None)
    env["COLUMNS"] = "200"
    return env


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CHOSEN = re.compile(r"^\s*(\S+) \(([^)]*)\)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+([\d.]+)\s")


def parse_dryrun(out: str) -> dict | None:
    """The chosen row of ``sky launch --dryrun``'s 'Considered resources' table."""
    for line in _ANSI.sub("", out).splitlines():
        if "\u2714" in line:
            m = _CHOSEN.match(line)
            if m:
                where = m.group(2)
                return {"cloud": m.group(1), "instance": m.group(3), "where": where,
                        "usd_per_hour": float(m.group(4))}
    return None


def gpuopt_argv(opts: dict) -> list[str]:
    exe_dir = Path(sys.executable).parent
    base = [str(exe_dir / "gpuopt")] if (exe_dir / "gpuopt").exists() else [sys.executable, "-m", "gpuopt.cli"]
    argv = base + ["recommend", "--gpu", opts["gpu"], "--model", opts["model"], "--pricing", COMMON["pricing"],
                   "--tokens-per-second", str(COMMON["tokens_per_second"]), "--horizon", str(COMMON["horizon"])]
    for p in PROVIDERS:
        argv += ["--provider", p]
    if "precision" in opts:
        argv += ["--precision", opts["precision"]]
    return argv + ["--no-explain", "--format", "json"]


def gpuopt_choice(doc: dict) -> dict:
    lines = doc.get("lines") or []
    return {"status": doc.get("status"),
            "lines": [{"provider": ln["provider"], "instance": ln["instance_type"], "region": ln["region"],
                       "count": ln["count"], "usd_per_hour": ln["usd_per_hour"], "gpu_count": ln["gpu_count"],
                       "precision": ln.get("precision"), "source": ln.get("source")} for ln in lines]}


# ------------------------------------------------------------------------------------------ the API server
SKY_API = "http://127.0.0.1:46580"  # SkyPilot's local API server (its default address)


def server_running() -> bool:
    """Is a local API server answering? (``sky api info`` would start one.)"""
    import urllib.request

    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
        with opener.open(SKY_API + "/api/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def wait_boot_check(since: float, timeout_s: float = 300.0) -> str:
    """Wait for the server's boot-time ``sky check`` (it empties the enabled-clouds cache: no credentials here)."""
    db = SKY_HOME / ".sky" / "api_server" / "requests.db"
    deadline = time.time() + timeout_s
    status = "unknown"
    while time.time() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
                row = c.execute("select status, created_at from requests where request_id = ?",
                                ("skypilot-server-on-boot-check",)).fetchone()
            if row:
                status = row[0]
                if row[0] in ("SUCCEEDED", "FAILED", "CANCELLED") and (row[1] or 0) >= since - 5:
                    return status
        except sqlite3.Error:
            pass
        time.sleep(1.0)
    return f"timeout ({status})"


def seed(env) -> str:
    p = subprocess.run([str(SKY_PY), str(SEED)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"seeding SkyPilot's state failed:\n{p.stderr[-2000:]}")
    return p.stdout.strip().splitlines()[-1]


# ---------------------------------------------------------------------------------------------- the runs
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each measurement (default 3)")
    ap.add_argument("--keep-server", action="store_true", help="leave the SkyPilot API server this run started up")
    args = ap.parse_args()

    if not (SKY.exists() and SKY_PY.exists() and SEED.exists()):
        print("SkyPilot is not set up for this benchmark: run scripts/setup-skypilot-bench.sh first")
        sys.exit(1)

    env = sky_env()
    sky_version = subprocess.run([str(SKY_PY), "-c", "import sky; print(sky.__version__)"], env=env,
                                 capture_output=True, text=True).stdout.strip()
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "git": git_state(ROOT),
                 "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                 "loadavg_start": [round(x, 2) for x in os.getloadavg()], "skypilot": sky_version,
                 "target": f"gpuopt end to end <= {TARGET_RATIO}x SkyPilot on the same question", "questions": []}

    started = False
    t0 = time.time()
    if not server_running():
        p = subprocess.run([str(SKY), "api", "start"], env=env, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"sky api start failed:\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
        started = True
        res["sky_api_start_s"] = round(time.time() - t0, 2)
        res["sky_boot_check"] = wait_boot_check(t0)
        res["sky_api_ready_s"] = round(time.time() - t0, 2)
    res["sky_enabled_clouds"] = seed(env)
    how = f"started in {res['sky_api_start_s']} s" if started else "already up"
    print(f"SkyPilot {sky_version}: API server {how}, enabled clouds {res['sky_enabled_clouds']}", flush=True)

    worker = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache, cwd = os.path.join(tmp, "cache"), os.path.join(tmp, "cwd")
            os.makedirs(cache)
            os.makedirs(cwd)
            genv = dict(os.environ)
            genv["GPUOPT_CACHE_DIR"] = cache  # an empty cache: the shipped snapshot
            genv.pop("GPUOPT_MAX_PRICE_AGE_DAYS", None)
            os.environ["GPUOPT_CACHE_DIR"] = cache  # the in-process runs too
            from gpuopt import api

            worker = subprocess.Popen([str(SKY_PY), "-c", _SKY_WORKER], env=env, cwd=str(SKY_HOME),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True, bufsize=1)

            def run_gpuopt_cli(q):
                t = time.perf_counter()
                p = subprocess.run(gpuopt_argv(q[2]), cwd=cwd, env=genv, capture_output=True, text=True)
                wall = time.perf_counter() - t
                if p.returncode != 0:
                    raise SystemExit(f"gpuopt failed on {q[0]}:\n{p.stderr[-2000:]}")
                return wall, gpuopt_choice(json.loads(p.stdout))

            def run_gpuopt_api(q):
                o = q[2]
                t = time.perf_counter()
                r = api.recommend(gpus=[o["gpu"]], model=o["model"], precision=o.get("precision"),
                                  pricing=[COMMON["pricing"]], tokens_per_second=COMMON["tokens_per_second"],
                                  horizon=COMMON["horizon"], providers=PROVIDERS, explain=False, cwd=cwd)
                wall = time.perf_counter() - t
                return wall, gpuopt_choice(r.to_dict())

            def run_sky_cli(q):
                argv = [str(SKY), "launch", "--dryrun", "-y", "--gpus", q[1], "echo ok"]
                t = time.perf_counter()
                p = subprocess.run(argv, cwd=str(SKY_HOME), env=env, capture_output=True, text=True, timeout=600)
                wall = time.perf_counter() - t
                out = p.stdout + p.stderr
                if p.returncode != 0 or "Dryrun finished" not in out:
                    raise SystemExit(f"sky launch --dryrun failed on {q[0]} (rc {p.returncode}):\n"
                                     f"{_ANSI.sub('', out)[-2500:]}")
                return wall, parse_dryrun(out)

            def run_sky_optimize(q):
                worker.stdin.write(json.dumps({"accelerators": q[1]}) + "\n")
                worker.stdin.flush()
                while True:
                    line = worker.stdout.readline()
                    if not line:
                        raise SystemExit(f"the SkyPilot optimizer worker died on {q[0]}")
                    if line.startswith("RESULT "):
                        d = json.loads(line[7:])
                        return d.pop("wall_s"), d

            tools = [("gpuopt_cli", run_gpuopt_cli), ("sky_dryrun_cli", run_sky_cli),
                     ("gpuopt_inprocess", run_gpuopt_api), ("sky_optimize_inprocess", run_sky_optimize)]
            rows = {q[0]: {"question": q[0], "sky_accelerators": q[1],
                           "gpuopt_argv": " ".join(gpuopt_argv(q[2])[1:]),
                           "sky_argv": f"sky launch --dryrun -y --gpus {q[1]} 'echo ok'",
                           **{k: {"times": []} for k, _ in tools}} for q in QUESTIONS}
            # warm-up: each measurement once, untimed in the statistics (reported as first_s)
            for q in QUESTIONS:
                for key, fn in tools:
                    wall, choice = fn(q)
                    rows[q[0]][key]["first_s"] = round(wall, 3)
                    rows[q[0]][key]["chose"] = choice
                print(f"  warm-up {q[0]}: " + ", ".join(f"{k} {rows[q[0]][k]['first_s']} s" for k, _ in tools),
                      flush=True)
            for rnd in range(args.repeat):
                order = tools if rnd % 2 == 0 else [tools[1], tools[0], tools[3], tools[2]]
                for q in QUESTIONS:
                    for key, fn in order:
                        wall, choice = fn(q)
                        rows[q[0]][key]["times"].append(wall)
                        if choice != rows[q[0]][key]["chose"]:
                            rows[q[0]][key].setdefault("other_choices", []).append(choice)
                print(f"  round {rnd + 1}/{args.repeat} done (load {os.getloadavg()[0]:.2f})", flush=True)
    finally:
        if worker is not None:
            worker.stdin.close()
            worker.wait(timeout=60)
        if started and not args.keep_server:
            subprocess.run([str(SKY), "api", "stop"], env=env, capture_output=True, text=True, timeout=300)

    for q in QUESTIONS:
        row = rows[q[0]]
        for key, _ in tools:
            row[key].update(_stats(row[key].pop("times")))
        g, s, gi, so = row["gpuopt_cli"], row["sky_dryrun_cli"], row["gpuopt_inprocess"], row["sky_optimize_inprocess"]
        row["ratio_cli_vs_dryrun"] = {"best": _ratio(g, s, "best_s"), "median": _ratio(g, s, "median_s")}
        row["ratio_cli_vs_sky_optimize"] = {"best": _ratio(g, so, "best_s"), "median": _ratio(g, so, "median_s")}
        row["ratio_inprocess_vs_sky_optimize"] = {"best": _ratio(gi, so, "best_s"),
                                                  "median": _ratio(gi, so, "median_s")}
        gl = (g["chose"]["lines"] or [{}])[0]
        sc = so["chose"] or {}  # the optimizer's exact choice (the dryrun's table rounds USD/h to cents)
        row["dryrun_agrees_with_optimize"] = (s["chose"] or {}).get("instance") == sc.get("instance")
        row["same_answer"] = (gl.get("instance") == sc.get("instance") and gl.get("region") == sc.get("region")
                              and abs(float(gl.get("usd_per_hour") or 0) - float(sc.get("usd_per_hour") or 0)) < 1e-3)
        row["meets_target"] = (row["ratio_cli_vs_dryrun"]["median"] or 9) <= TARGET_RATIO
        res["questions"].append(row)
    res["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    med = [r["ratio_cli_vs_dryrun"]["median"] for r in res["questions"]]
    med_opt = [r["ratio_cli_vs_sky_optimize"]["median"] for r in res["questions"]]
    res["summary"] = {"ratio_cli_vs_dryrun_median_of_questions": round(statistics.median(med), 3),
                      "ratio_cli_vs_dryrun_worst": max(med),
                      "ratio_cli_vs_sky_optimize_median_of_questions": round(statistics.median(med_opt), 3),
                      "meets_target_all": all(r["meets_target"] for r in res["questions"])}
    res["notes"] = [
        "sky_dryrun_cli: `sky launch --dryrun` against a local API server already up (its start is sky_api_start_s, "
        "once); SkyPilot runs offline: catalogs from gpuopt's SkyPilot-format inputs, clouds marked enabled in its "
        "state db, placeholder image ids, the placeholder AMI's root device cached "
        "(see scripts/setup-skypilot-bench.sh).",
        "Prices: both tools read the same skypilot-catalog rows, but gpuopt takes a dated published quote over a "
        "catalog row and refuses rows it finds wrong (e.g. GCP a2-ultragpu A100-80GB rows priced with the DWS "
        "Flex-start SKU in the catalog: SkyPilot picks them, gpuopt reports them in pricing_cache/data/skipped.csv).",
    ]
    OUT.write_text(json.dumps(res, indent=1) + "\n")

    # ------------------------------------------------------------------------------------------------ table
    print(f"\n{res['date']}  git {res['git']}  cpus {res['cpus']}  load {res['loadavg_start']} -> {res['loadavg_end']}"
          f"  SkyPilot {sky_version}")
    hdr = (f"{'question':<14} {'gpuopt CLI':>15} {'sky dryrun':>15} {'ratio':>11} {'gpuopt api':>15} "
           f"{'sky optimize':>15} {'cli/opt':>11} {'api/opt':>11}")
    print(hdr + "\n" + "-" * len(hdr))
    for r in res["questions"]:
        def bm(k):
            return f"{r[k]['best_s']:.2f}/{r[k]['median_s']:.2f}"

        def rt(k):
            return f"{r[k]['best']:.2f}/{r[k]['median']:.2f}"
        print(f"{r['question']:<14} {bm('gpuopt_cli'):>15} {bm('sky_dryrun_cli'):>15} {rt('ratio_cli_vs_dryrun'):>11} "
              f"{bm('gpuopt_inprocess'):>15} {bm('sky_optimize_inprocess'):>15} {rt('ratio_cli_vs_sky_optimize'):>11} "
              f"{rt('ratio_inprocess_vs_sky_optimize'):>11}")
    print("(seconds and ratios: best/median of", args.repeat, "runs, gpuopt / SkyPilot)")
    print(f"\n{'question':<14} {'gpuopt chose':<58} {'SkyPilot chose':<52}")
    for r in res["questions"]:
        gl = (r["gpuopt_cli"]["chose"]["lines"] or [{}])[0]
        sc = r["sky_optimize_inprocess"]["chose"] or {}
        gtxt = (f"{gl.get('provider')} {gl.get('region')} {gl.get('instance')} x{gl.get('count')} "
                f"${gl.get('usd_per_hour')}/h")
        stxt = (f"{sc.get('cloud')} {sc.get('zone') or sc.get('region')} {sc.get('instance')} "
                f"${sc.get('usd_per_hour')}/h"
                + ("" if r["dryrun_agrees_with_optimize"] else " (dryrun chose otherwise)"))
        print(f"{r['question']:<14} {gtxt:<58} {stxt:<52}{'' if r['same_answer'] else '  (differ)'}")
    s = res["summary"]
    print(f"\ngpuopt CLI / sky launch --dryrun, median over questions: {s['ratio_cli_vs_dryrun_median_of_questions']}"
          f" (worst {s['ratio_cli_vs_dryrun_worst']}; target <= {TARGET_RATIO}: "
          f"{'met' if s['meets_target_all'] else 'NOT met'} on every question)")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
