"""The README is tested (issue 32): every command and Python snippet in README.md runs here, extracted from the
file at collection time, so an edit to the README changes these tests.

What is extracted (``readme_items``):
- every line of every ```bash block (``\\`` continuations joined, ``&&`` chains split): one test per command, its id
  the README line number and the command's head (``L0085-gpuopt-recommend``);
- every ```python block: executed in a fresh namespace, in the same folder (no exception);
- every transcript block (a fenced block, not bash or python, whose first line starts with ``$ ``): each ``$ cat
  FILE`` writes the lines after it into FILE (what the transcript shows the file holds), each ``$ gpuopt ...`` runs
  and the lines after it are its (abridged) output, whose figures are compared.

The README's conventions, which the tests read:
- ``# exits N`` in a command's trailing comment: the exit code expected (else 0).
- ``# -> FIGURES`` in a command's trailing comment, or a comment line right after the command starting ``# ->``:
  figures the command prints. A figure is a dollar amount, a decimal number, or a whole number followed by a
  unit (days, GPUs, tokens/s, months, hours, instances, replicas); each must appear in the output (commas ignored).
  A plan stopped at its time limit (``NOT PROVEN OPTIMAL`` / ``time_limit``) is not compared: its figures are not
  the optimum (the test is skipped, saying so); nor is a transcript line the output says was not priced in the
  time it had (an alternative of a plan on a loaded machine: a warning names the figures left out).

Not run: the install and test commands (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install``,
``./scripts/setup-test-tools.sh``, ``python -m pytest``): they are exactly what CI itself runs on a clean checkout
(``.ci/run``), so a broken one fails CI before this file. They are counted, so no README command goes unaccounted.

How they run: ``gpuopt.cli.main(argv)`` in process (exit code from its SystemExit), all in one temporary folder
(files one command writes are read by later ones, as a user following the README would), with the price cache in
a temporary ``GPUOPT_CACHE_DIR``. Files a user would have are mapped to real files of the repository
(``PLACEHOLDERS``). No test reaches the network: every proxy variable points at a closed local port, so the AWS
refreshes and the quota read fail as they do offline (exit 3, one line, nothing written over the previous prices
or quota file: the id says ``offline``), and the Azure and GCP refreshes read recorded API pages from a server on
127.0.0.1 (``GPUOPT_AZURE_PRICES_URL``, ``GPUOPT_GCP_BILLING_URL``; id ``recorded``).

Time (this file must stay well under 5 minutes in CI, on 2 cores): a `recommend` command whose output the README
quotes no figure of runs with ``--no-explain`` (its id says ``no-explain``): the README's Performance section says
explanations dominate small plans (0.006 s to plan the 70B example, ~8 s to explain it) and that the bundled example
plan takes 45 s without them, 126 s with them. Such a command still parses, plans and prints as the README says;
the explanations are priced, with their figures compared, wherever the README quotes them (the 70B transcript, the
capacity-block example, the owned savings plan). One plan is solved once for every command that asks the same
question (``_memo_recommend``: the table, FOCUS and HTML outputs of the example plan). The README's own figure
for that plan (the Performance table's ``**45 s, optimal, $85,276.05** (`gpuopt recommend ...`)``) is compared
with that run. The example plan's ``--objective roi`` is the slowest test (~100 s: a full plan per Dinkelbach
step); no faster equivalent solves it (``--time-limit 10`` finds no plan).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIX = ROOT / "tests" / "fixtures"
HERE = ROOT / "tests" / "readme_fixtures"

# the install and test commands: what CI (.ci/run) runs itself on a clean checkout
CI_COMMANDS = ("python3 -m venv", ". .venv/bin/activate", "source .venv/bin/activate", "pip install",
               "./scripts/setup-test-tools.sh", "python -m pytest", "python3 -m pytest")

# The files the README names that a user would have, mapped to real files of this repository (copied into the
# test folder before the first command). Files a README command writes (owned.csv, new.json, quotas.csv ...) are
# not here: the commands make them. Parquet files and folders are written from the CSV named (same rows).
PLACEHOLDERS = {
    # an offers CSV of one's own (on-prem rates): the offers-CSV fixture of tests/test_providers_offers_csv.py
    "my_offers.csv": FIX / "offers" / "onprem_ok.csv",
    # a plan file: the bundled one-service example (`--print-workload > plan.yaml` later rewrites it)
    "plan.yaml": ROOT / "gpuopt" / "data" / "example_workload.yaml",
    # your quotas: the recorded quota CSV (the `gpuopt quotas` line cannot read AWS offline: it must leave it as it was)
    "quotas.csv": FIX / "quotas" / "quotas.csv",
    # a FOCUS export (CSV and Parquet) and last month's billing Parquet of the Python API: the synthetic FOCUS 1.0 export
    "focus_export.csv": FIX / "usage" / "synthetic_focus_1.0.csv",
    "focus_export.parquet": FIX / "usage" / "synthetic_focus_1.0.csv",
    "billing/2026-10.parquet": FIX / "usage" / "synthetic_focus_1.0.csv",
    # an AWS CUR 2.0 Parquet folder: the synthetic CUR 2.0 export, one Parquet file
    "cur2/part-0.parquet": FIX / "usage" / "synthetic_cur2.csv",
    # an Azure cost-details export and the warehouse's hourly table: the synthetic fixtures
    "azure_cost_details.csv": FIX / "usage" / "synthetic_azure_cost_details.csv",
    "hourly.csv": FIX / "usage" / "synthetic_hourly.csv",
    # a demand profile: the bundled chat profile
    "chat.csv": ROOT / "gpuopt" / "data" / "chat_daily.csv",
    # a local Hugging Face config.json: Llama-2-7B's, as published
    "my-model/config.json": FIX / "hf_configs" / "Llama-2-7b-hf" / "config.json",
    # a benchmark of one's own: calibration row 692 (NIM 1.8.0, 2x H100 TP2 FP8, 5000/500, concurrency 5)
    "my_bench.csv": HERE / "my_bench.csv",
    # files to import: the AWS bulk CSV sample, an Azure Retail Prices page, SkyPilot's Lambda catalog (us-east-1)
    "AmazonEC2.csv": FIX / "aws" / "AmazonEC2_bulk_sample.derived.csv",
    "prices.json": FIX / "azure" / "retail_eastus_page1.json",
    "vms.csv": ROOT / "pricing_cache" / "data" / "inputs" / "lambda_vms_v8_gpu_us-east-1.csv",
    # the Python API's offers file: the dated rows of the offers-CSV fixture (an import needs each row's as_of)
    "offers.csv": HERE / "offers.csv",
    # the README's commands run from the checkout's root: the bundled examples at their paths
    "gpuopt/data/example_plan.yaml": ROOT / "gpuopt" / "data" / "example_plan.yaml",
    "gpuopt/data/chat_daily.csv": ROOT / "gpuopt" / "data" / "chat_daily.csv",
    "gpuopt/data/example_workload.yaml": ROOT / "gpuopt" / "data" / "example_workload.yaml",
}
# Files copied from another the README's commands make, before the first command that reads them: last month's
# plan of the CI gate is, here, the same plan (so `--fail-above 5` passes, as a gate on an unchanged plan must).
COPIED = {"old.json": "new.json"}
# Commands that need the network. AWS (quotas, prices) has no local stand-in here: run offline, it must fail as
# documented (exit 3: a price source or the network failed; one line; the previous prices kept; id `offline`).
# Azure and GCP read recorded API pages from 127.0.0.1; the recordings hold a few regions (Azure eastus; GCP
# us-central1 and two more), so a refresh of every region refreshes those and fails the others, keeping their
# previous prices: exit 3 too (id `recorded`), with the recorded regions written.
OFFLINE = ("gpuopt quotas --provider aws", "gpuopt prices refresh")
LOCAL_PROVIDERS = ("azure", "gcp")

FIGURE = re.compile(r"\$\d[\d,]*(?:\.\d+)?|\d[\d,]*\.\d+|\d[\d,]*(?= ?(?:days?|GPUs?|tokens/s|months?|hours?|"
                    r"instances?|replicas?)\b)")
EXITS = re.compile(r"(?:^|\W)exits (\d)\b")


@dataclass
class Item:
    line: int          # README line number
    kind: str          # "cmd", "ci", "python", "cat"
    text: str          # the command, the Python source or the file's content
    comment: str = ""  # the trailing comment (commands)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (label of the output line, figure) quoted
    target: str = ""   # `$ cat FILE`: FILE

    @property
    def id(self) -> str:
        head = self.text.split("\n")[0] if self.kind != "cat" else f"cat {self.target}"
        words = [w for w in shlex.split(head, comments=True)[:3] if not w.startswith("-")] if self.kind != "python" else ["python"]
        tag = "-".join(words[:3]) or self.kind
        if self.kind == "cmd" and _offline(self.text):
            tag += "-offline" if _needs_aws(self.text) else "-recorded"
        if self.kind == "cmd" and _no_explain(self.text):
            tag += "-no-explain"
        return f"L{self.line:04d}-{re.sub(r'[^A-Za-z0-9_.]+', '-', tag)}"


def _split_comment(s: str) -> tuple[str, str]:
    """A shell line's command and its trailing comment (a ``#`` outside quotes after a blank)."""
    quote = None
    for i, ch in enumerate(s):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or s[i - 1].isspace()):
            return s[:i].rstrip(), s[i + 1:].strip()
    return s.rstrip(), ""


def figures_of(text: str) -> list[str]:
    """The figures quoted in ``text``: dollar amounts, decimals, whole numbers with a unit."""
    return FIGURE.findall(text)


def labelled_figures(out: list[str]) -> list[tuple[str, str]]:
    """The figures of a transcript's output lines, each with the label of its line (a line with ``—``: the words
    before its first parenthesis, e.g. ``Precision — with fp8 allowed for workload``; an indented line continues
    the line above)."""
    found, label = [], ""
    for ln in out:
        if ln and not ln[0].isspace():
            label = ln.split(" (")[0] if " — " in ln else ""
        found += [(label, f) for f in figures_of(ln)]
    return found


# an output line that says its figure was not computed in the time it had: the README's figure is not compared
NOT_COMPUTED = re.compile(r"not (priced|computed|proven)\b|not_computed|time_limit")


def readme_items(text: str) -> list[Item]:
    """Every command, Python block and transcript of the README, in order (see the module docstring)."""
    lines, items, i = text.splitlines(), [], 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        lang, j = fence[3:].strip(), i + 1
        while not lines[j].strip().startswith("```"):
            j += 1
        body = lines[i + 1:j]
        if lang == "bash":
            k = 0
            while k < len(body):
                start, s = k, body[k]
                while s.rstrip().endswith("\\"):
                    k += 1
                    s = s.rstrip()[:-1].rstrip() + " " + body[k].strip()
                k += 1
                cmd, comment = _split_comment(s)
                if not cmd.strip():
                    continue
                # a comment line right after the command starting with `# ->`: its printed figures
                after = body[k].strip() if k < len(body) else ""
                quoted = comment.partition("->")[2] if "->" in comment else ""
                if after.startswith("# ->"):
                    quoted += " " + after[4:]
                for part in cmd.split("&&"):
                    part = part.strip()
                    kind = "ci" if part.startswith(CI_COMMANDS) else "cmd"
                    items.append(Item(i + 2 + start, kind, part, comment, [("", f) for f in figures_of(quoted)]))
        elif lang == "python":
            items.append(Item(i + 2, "python", "\n".join(body)))
        elif body and body[0].startswith("$ "):
            k = 0
            while k < len(body):
                start, cmd = k, body[k][2:].strip()
                k += 1
                out = []
                while k < len(body) and not body[k].startswith("$ "):
                    out.append(body[k])
                    k += 1
                if cmd.startswith("cat "):
                    items.append(Item(i + 2 + start, "cat", "\n".join(out) + "\n", target=cmd[4:].strip()))
                else:
                    items.append(Item(i + 2 + start, "cmd", cmd, "", labelled_figures(out)))
        i = j + 1
    return items


ITEMS = readme_items(README.read_text(encoding="utf-8"))
FIGURED = {it.text for it in ITEMS if it.figures}  # commands the README quotes figures of (explained in full)


def _no_explain(cmd: str) -> bool:
    """A plan whose output the README quotes no figure of: run without explanations (module docstring, Time)."""
    return (cmd.startswith("gpuopt recommend") and "--print-workload" not in cmd and "--no-explain" not in cmd
            and cmd not in FIGURED)


def _offline(cmd: str) -> bool:
    """Does the command need the network (a cloud API)?"""
    return cmd.startswith(OFFLINE)


def _needs_aws(cmd: str) -> bool:
    """Does it call AWS (no recorded stand-in here)? `prices refresh` without --provider refreshes AWS too."""
    provs = re.findall(r"--provider (\S+)", cmd)
    return not provs or any(p not in LOCAL_PROVIDERS for p in provs)


# ------------------------------------------------------------------------------------------ the test folder
@pytest.fixture(scope="module")
def readme_env(tmp_path_factory):
    """One folder for the whole README (files made by one command are read by the next), its own price cache,
    the placeholders copied in, every proxy at a closed port, and a 127.0.0.1 server with the recorded Azure
    Retail Prices and GCP Billing Catalog pages."""
    import json

    import pandas as pd
    from pytest_httpserver import HTTPServer
    from werkzeug.wrappers import Response

    work, cache = tmp_path_factory.mktemp("readme"), tmp_path_factory.mktemp("readme-cache")
    for name, src in PLACEHOLDERS.items():
        dst = work / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.suffix == ".parquet":
            pd.read_csv(src, low_memory=False).to_parquet(dst, index=False)
        else:
            shutil.copyfile(src, dst)

    srv = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    srv.start()
    base = srv.url_for("/api/retail/prices")
    pages = {None: 1, "1000": 2, "2000": 3}
    docs = {}
    for skip, n in pages.items():
        doc = json.loads((FIX / "azure" / f"retail_eastus_page{n}.json").read_text())
        if doc.get("NextPageLink"):
            doc["NextPageLink"] = doc["NextPageLink"].replace("https://prices.azure.com:443/api/retail/prices", base)
        docs[skip] = doc
    def azure(request):  # the recorded eastus pages; no item for any other region
        doc = docs[request.args.get("$skip")] if "'eastus'" in request.args.get("$filter", "'eastus'") else \
            {"BillingCurrency": "USD", "Items": [], "NextPageLink": None, "Count": 0}
        return Response(json.dumps(doc), content_type="application/json")

    srv.expect_request("/api/retail/prices").respond_with_handler(azure)
    listing = json.loads((FIX / "gcp" / "skus_listing.json").read_text())
    srv.expect_request("/v1/services/6F81-5844-456A/skus").respond_with_handler(
        lambda request: Response(json.dumps({"skus": listing["skus"], "nextPageToken": ""}),
                                 content_type="application/json"))
    env = {
        "GPUOPT_CACHE_DIR": str(cache),
        "GPUOPT_AZURE_PRICES_URL": base,
        "GPUOPT_GCP_BILLING_URL": srv.url_for("/v1"),
        "KEY": "recorded-pages-key",  # the README's "$KEY"
        "COLUMNS": "200", "NO_COLOR": "1",
        # no test reaches the network: a proxy at a closed port refuses every connection but to 127.0.0.1
        **{v: "http://127.0.0.1:9" for v in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY")},
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        # no AWS or Azure credentials (the `finops` profile does not exist), no instance metadata lookups
        "AWS_SHARED_CREDENTIALS_FILE": str(work / "no-aws-credentials"), "AWS_CONFIG_FILE": str(work / "no-aws-config"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    unset = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AZURE_SUBSCRIPTION_ID",
             "GPUOPT_GCP_API_KEY", "GPUOPT_GCP_ACCESS_TOKEN", "GOOGLE_CLOUD_PROJECT", "GPUOPT_MAX_PRICE_AGE_DAYS")
    yield {"work": work, "env": env, "unset": unset}
    srv.clear()
    if srv.is_running():
        srv.stop()


@pytest.fixture
def in_readme_env(readme_env, monkeypatch):
    for k, v in readme_env["env"].items():
        monkeypatch.setenv(k, v)
    for k in readme_env["unset"]:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.chdir(readme_env["work"])
    import gpuopt.api

    _PLANS.setdefault("real", gpuopt.api.recommend)
    monkeypatch.setattr(gpuopt.api, "recommend", _memo_recommend)  # the CLI's api.recommend, for this test only
    return readme_env


_PLANS: dict = {}


def _memo_recommend(*args, **kwargs):
    """gpuopt.api.recommend, solved once per question: the commands that print one plan as a table, FOCUS and
    HTML ask it the same keywords (the output format is the CLI's, not the plan's)."""
    key = repr((args, sorted(kwargs.items())))
    if key not in _PLANS:
        _PLANS[key] = _PLANS["real"](*args, **kwargs)
    return _PLANS[key]


def run_gpuopt(cmd: str, env: dict) -> tuple[int, str, str]:
    """Run one README command line in process: ``gpuopt ARGS [> FILE]``. Returns (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from gpuopt.cli import main

    argv = shlex.split(os.path.expandvars(cmd))
    redirect = None
    if ">" in argv:
        at = argv.index(">")
        argv, redirect = argv[:at], argv[at + 1]
    assert argv[0] == "gpuopt", cmd
    args = argv[1:]
    if _no_explain(cmd):
        args.append("--no-explain")
    with CliRunner().isolation() as (out, err, _):
        try:
            main(args)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    if redirect:
        Path(redirect).write_text(stdout, encoding="utf-8")
    return code, stdout, stderr


def _norm(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", text)


def assert_figures(figures: list[str], output: str, what: str) -> None:
    """Each figure appears in the output (commas ignored; a whole number not inside a longer number)."""
    flat = _norm(output)
    missing = [f for f in figures
               if not re.search(r"(?<![\d.])" + re.escape(_norm(f)) + r"(?![\d])", flat)]
    assert not missing, f"{what}: the README quotes {missing}, not in the output:\n{output[-3000:]}"


# ------------------------------------------------------------------------------------------------- the tests
def test_every_readme_block_is_extracted():
    """No README command is silently skipped: every line of every bash block is a command, a comment, a
    continuation or blank, and every command is run here or named as one CI runs itself."""
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    in_bash, expected, prev_continues = False, 0, False
    for ln in lines:
        s = ln.strip()
        if s.startswith("```"):
            in_bash = s == "```bash"
            continue
        if in_bash and s and not s.startswith("#") and not prev_continues:
            expected += s.count("&&") + 1
        prev_continues = in_bash and s.endswith("\\")
    kinds = [it.kind for it in ITEMS]
    assert kinds.count("cmd") + kinds.count("ci") >= expected > 50
    assert kinds.count("python") == text.count("```python") >= 1
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # the commands not run here are CI's own
    assert all(it.text in ci for it in ITEMS if it.kind == "ci"), [it.text for it in ITEMS if it.kind == "ci"]
    assert all(it.text.startswith("gpuopt ") for it in ITEMS if it.kind == "cmd"), \
        [it.text for it in ITEMS if it.kind == "cmd" and not it.text.startswith("gpuopt ")]


@pytest.mark.parametrize("item", [it for it in ITEMS if it.kind in ("cmd", "cat", "python")], ids=lambda it: it.id)
def test_readme(item, in_readme_env):
    """One README command (its exit code, its quoted figures), Python block or `$ cat` file."""
    env = in_readme_env
    if item.kind == "cat":
        Path(item.target).write_text(item.text, encoding="utf-8")
        return
    if item.kind == "python":
        ns: dict = {"__name__": "readme"}
        exec(compile(item.text, f"README.md:{item.line}", "exec"), ns)  # noqa: S102 - the README's own snippet
        return
    for name, src in COPIED.items():
        if re.search(rf"(?<![\w.]){re.escape(name)}\b", item.text) and not Path(name).exists():
            shutil.copyfile(src, name)
    before = _snapshot_files(env["env"]["GPUOPT_CACHE_DIR"]) if _offline(item.text) else None
    quotas_before = Path("quotas.csv").read_bytes() if item.text.startswith("gpuopt quotas") else None
    code, out, err = run_gpuopt(item.text, env)
    m = EXITS.search(item.comment)
    expected = 3 if _offline(item.text) else int(m.group(1)) if m else 0
    assert code == expected, f"README line {item.line}: `{item.text}` exited {code}, expected {expected}\n" \
                             f"stdout:\n{out[-2000:]}\nstderr:\n{err[-2000:]}"
    if before is not None:  # one line says what failed
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    if before is not None and _needs_aws(item.text):  # AWS offline: nothing written, the previous prices kept
        after = _snapshot_files(env["env"]["GPUOPT_CACHE_DIR"])
        assert {k: v for k, v in after.items() if "aws" in Path(k).parts} == \
            {k: v for k, v in before.items() if "aws" in Path(k).parts}
    if before is not None and not _needs_aws(item.text):  # recorded pages: the recorded regions refreshed
        assert re.search(r"(azure|gcp) +│ partial", out), out
    if quotas_before is not None:
        assert Path("quotas.csv").read_bytes() == quotas_before
    if "Traceback" in err:
        pytest.fail(f"README line {item.line}: a traceback\n{err[-3000:]}")
    if item.figures:
        if re.search(r"NOT PROVEN OPTIMAL|\(time_limit|\"status\": \"time_limit\"", out):
            pytest.skip(f"the plan stopped at its time limit: the README's figures {[f for _, f in item.figures]} "
                        "are those of the proven optimum, not compared")
        lines = (out + err).splitlines()
        late = {lab for lab, _ in item.figures
                if lab and any(ln.startswith(lab) and NOT_COMPUTED.search(ln) for ln in lines)}
        assert_figures([f for lab, f in item.figures if lab not in late], out + err, f"README line {item.line}")
        if late:
            warnings.warn(f"README line {item.line}: {sorted(late)} not computed in the time the alternatives had "
                          f"(a loaded machine): their figures {[f for lab, f in item.figures if lab in late]} "
                          "were not compared")


def _snapshot_files(cache: str) -> dict:
    root = Path(cache)
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} \
        if root.exists() else {}


PERF = re.compile(r"\*\*[\d.]+ s, optimal, (\$[\d,]+\.\d\d)\*\* \(`(gpuopt recommend [^`]+)`")


@pytest.mark.parametrize("figure, cmd", PERF.findall(README.read_text(encoding="utf-8")) or [("", "")],
                         ids=lambda v: re.sub(r"[^A-Za-z0-9_.$]+", "-", v)[:60])
def test_readme_performance_figure(figure, cmd, in_readme_env):
    """The Performance section's `**N s, optimal, $X** (`gpuopt recommend ...`)`: that command plans $X (its
    time is this machine's, not compared)."""
    assert figure, "the README's Performance section quotes no `**N s, optimal, $X** (`gpuopt ...`)` figure"
    code, out, err = run_gpuopt(cmd + " --format json", in_readme_env)
    assert code == 0, err
    import json

    d = json.loads(out)
    if d["status"] != "optimal":
        pytest.skip(f"the plan ended {d['status']}: the README's {figure} is the proven optimum, not compared")
    assert f"${d['total_usd']:,.2f}" == figure


def test_extraction_rules_on_a_small_readme():
    """The rules the tests read the README by: continuations, `&&` chains, CI commands, `# exits N`, `# ->`
    figures on the line and on the comment line after it, transcripts and `$ cat`."""
    text = "\n".join([
        "```bash", "pip install -q -e . && gpuopt recommend \\", "    --budget 1   # exits 1",
        "# a comment line", "gpuopt diff a.json b.json --fail-above 5  # -> $1,234.50 total, 27.0 days, 256 GPUs, p5",
        "gpuopt estimate --list-models", "# -> 49 models, 3 x 8 in 2 days", "```",
        "```", "$ cat sp.csv", "a,b", "$ gpuopt recommend --owned sp.csv", "Targets — offline (batch): $9.50 over",
        "       -5 %, 2 months", "```",
    ])
    items = readme_items(text)
    assert [(it.line, it.kind, it.text) for it in items] == [
        (2, "ci", "pip install -q -e ."), (2, "cmd", "gpuopt recommend --budget 1"),
        (5, "cmd", "gpuopt diff a.json b.json --fail-above 5"), (6, "cmd", "gpuopt estimate --list-models"),
        (10, "cat", "a,b\n"), (12, "cmd", "gpuopt recommend --owned sp.csv")]
    assert EXITS.search(items[1].comment).group(1) == "1" and not EXITS.search(items[2].comment)
    assert [f for _, f in items[2].figures] == ["$1,234.50", "27.0", "256"]
    assert [f for _, f in items[3].figures] == ["2"]  # "49 models", "3 x 8": no unit of the list
    assert items[4].target == "sp.csv"
    assert items[5].figures == [("Targets — offline", "$9.50"), ("Targets — offline", "2")]
    assert_figures(["$1,234.50", "27.0"], "total $1234.50 over 27.0 days", "ok")
    with pytest.raises(AssertionError):
        assert_figures(["27.0"], "127.05 days", "a figure inside a longer number is not found")
