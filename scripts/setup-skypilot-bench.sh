#!/usr/bin/env bash
# SkyPilot 0.14.1, offline, for benchmarks/bench_skypilot.py (issue 25: one-workload `gpuopt recommend` against
# SkyPilot's optimizer on the same question). Nothing here touches the project's venv or the user's ~/.sky:
#
#   .venv-sky/   its own venv: PyPI skypilot[aws]==0.14.1 (the aws extra, boto3, only because the AWS branch of
#                `sky launch --dryrun` creates an EC2 client; the optimizer alone runs on the plain package)
#   .sky-home/   the HOME SkyPilot runs under (its ~/.sky), made here:
#     .sky/catalogs/v8/{aws,gcp,azure,lambda}/vms.csv
#                  the real skypilot-catalog rows gpuopt ships as inputs (pricing_cache/data/inputs/, byte copies of
#                  shared/data/catalogs/, see their PROVENANCE.md): GPU rows only, a subset of regions; the files
#                  of one cloud are concatenated, identical rows once. Azure is the v6 file (the newest upstream).
#     .sky/catalogs/v8/common/accelerators.csv
#                  which clouds list each AcceleratorName, derived from those vms.csv files (upstream derives it
#                  from all its catalogs the same way)
#     .sky/catalogs/v8/{aws,gcp}/images.csv
#                  the image tags 0.14.1 asks for (read from its source), with PLACEHOLDER image ids: a dryrun
#                  only writes them into a cluster YAML it never uses; the optimizer never reads them
#     .sky/catalogs/v8/gcp/accelerator_quota_mapping.csv, aws/instance_quota_mapping.csv
#                  headers only (no quota code known: SkyPilot then skips its quota check, as it does for a GPU
#                  missing from the upstream table)
#     .sky/config.yaml  allowed_clouds: AWS, GCP, Azure, Lambda (the providers gpuopt is asked to plan on)
#     seed_offline.py   run after every API server start (bench_skypilot.py does): writes the enabled-clouds
#                  cache (the server's boot-time `sky check` finds no credentials and empties it) and the
#                  kv-cache entry of each placeholder AMI's root device (SkyPilot's own default, /dev/sda1), which
#                  SkyPilot caches for a day after one EC2 DescribeImages call; without it each AWS dryrun
#                  retries an EC2 client with no credentials for ~45 s.
#
# SkyPilot downloads a missing catalog file from GitHub and refreshes a downloaded one every few hours; a file
# with no .meta/<file>.md5 counts as edited by the user and is never replaced, so none is written here.
# Run it again to rebuild .sky-home (the venv is kept). Needs rsync (sky launch refuses to start without it):
# installed with apt-get when missing and running as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
VENV="$ROOT/.venv-sky"
SKY_HOME="$ROOT/.sky-home"
INPUTS="$ROOT/pricing_cache/data/inputs"
py="${SKY_PYTHON:-python3}"

if ! command -v rsync >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        (apt-get install -y -q rsync || (apt-get update -q && apt-get install -y -q rsync)) >&2
    else
        echo "setup-skypilot-bench: rsync is missing (sky launch needs it): apt-get install rsync" >&2
        exit 1
    fi
fi

if [ ! -x "$VENV/bin/sky" ]; then
    "$py" -m venv "$VENV"
    "$VENV/bin/pip" install -q "skypilot[aws]==0.14.1" 2>&1 | grep -v "^WARNING: Location" >&2 || true
fi
"$VENV/bin/python" -c "import sky, sys; assert sky.__version__ == '0.14.1', sky.__version__" \
    || { echo "setup-skypilot-bench: skypilot 0.14.1 did not install in $VENV" >&2; exit 1; }

if [ -d "$SKY_HOME/.sky/api_server" ]; then  # this benchmark's API server, if one was left running
    HOME="$SKY_HOME" "$VENV/bin/sky" api stop >/dev/null 2>&1 || true
fi
rm -rf "$SKY_HOME"
mkdir -p "$SKY_HOME/.sky"
cat > "$SKY_HOME/.sky/config.yaml" <<'EOF'
# benchmarks/bench_skypilot.py: the clouds gpuopt plans on in that benchmark (repr names, as `sky check` stores them)
allowed_clouds: [AWS, GCP, Azure, Lambda]
EOF

HOME="$SKY_HOME" INPUTS="$INPUTS" "$VENV/bin/python" - <<'EOF'
import csv, os
import sky.clouds.aws as aws_cloud
import sky.clouds.gcp as gcp_cloud
from sky.skylet import constants

cat = os.path.expanduser(os.path.join("~/.sky/catalogs", constants.CATALOG_SCHEMA_VERSION))
inputs = os.environ["INPUTS"]

def merge(cloud, files):
    rows, seen, header = [], set(), None
    for name in files:
        with open(os.path.join(inputs, name), newline="") as fh:
            r = csv.reader(fh)
            h = next(r)
            assert header is None or h == header, (name, h, header)
            header = h
            for row in r:
                if tuple(row) not in seen:
                    seen.add(tuple(row))
                    rows.append(row)
    os.makedirs(os.path.join(cat, cloud), exist_ok=True)
    with open(os.path.join(cat, cloud, "vms.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"  {cloud}/vms.csv: {len(rows)} rows from {', '.join(files)}")
    return [dict(zip(header, row)) for row in rows]

vms = {
    "AWS": merge("aws", ["aws_vms_v8_gpu_all_regions.csv", "aws_vms_v8_gpu_us-east-1_us-west-2.csv"]),
    "GCP": merge("gcp", ["gcp_vms_v8_gpu_more.csv"]),  # the three-region GCP file is a subset of this one
    "Azure": merge("azure", ["azure_vms_v6_gpu_NC_ND_NV_us.csv"]),
    "Lambda": merge("lambda", ["lambda_vms_v8_gpu_us-east-1.csv", "lambda_vms_v8_gpu_rest.csv"]),
}

# common/accelerators.csv: AcceleratorName -> the clouds listing it (upstream's format: a Python list literal)
names = {}
for cloud, rows in vms.items():
    for row in rows:
        if (row.get("AcceleratorName") or "").strip():
            names.setdefault(row["AcceleratorName"].strip(), set()).add(cloud)
os.makedirs(os.path.join(cat, "common"), exist_ok=True)
with open(os.path.join(cat, "common", "accelerators.csv"), "w", newline="") as fh:
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(["AcceleratorName", "Clouds"])
    for n in sorted(names):
        w.writerow([n, repr(sorted(names[n]))])
print(f"  common/accelerators.csv: {len(names)} accelerators")

# images.csv: every skypilot: tag this version's AWS and GCP code asks for, placeholder ids (see the header)
def tags(module):
    return sorted({v for k, v in vars(module).items()
                   if k.startswith("_DEFAULT_") and k.endswith("IMAGE_ID") and isinstance(v, str)
                   and v.startswith("skypilot:")})
head = ["Tag", "Region", "OS", "OSVersion", "ImageId", "CreationDate", "BaseImageId"]
aws_regions = sorted({row["Region"] for row in vms["AWS"]})
with open(os.path.join(cat, "aws", "images.csv"), "w", newline="") as fh:
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(head)
    for t in tags(aws_cloud):
        for region in aws_regions:
            w.writerow([t, region, "ubuntu", "22.04", "ami-00000000000000000", "", ""])
with open(os.path.join(cat, "gcp", "images.csv"), "w", newline="") as fh:
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(head)
    for t in tags(gcp_cloud):  # GCP images are global: empty Region, as upstream
        w.writerow([t, "", "ubuntu", "22.04", "projects/placeholder/global/images/offline-benchmark", "", ""])
print(f"  aws/images.csv, gcp/images.csv: placeholder ids for {tags(aws_cloud)} and {tags(gcp_cloud)}")

with open(os.path.join(cat, "gcp", "accelerator_quota_mapping.csv"), "w") as fh:
    fh.write("Accelerator,OnDemandInstanceCode,SpotInstanceCode\n")
with open(os.path.join(cat, "aws", "instance_quota_mapping.csv"), "w") as fh:
    fh.write("InstanceType,OnDemandInstanceCode,SpotInstanceCode\n")
EOF

cat > "$SKY_HOME/seed_offline.py" <<'EOF'
"""Run with .venv-sky's python and HOME=.sky-home after each SkyPilot API server start (bench_skypilot.py does).

Marks the allowed clouds enabled in SkyPilot's state db (the boot-time `sky check` empties that cache: no
credentials here) and caches the placeholder AMIs' root device name (SkyPilot's default) for 30 days.
Prints the enabled clouds."""
import csv, os, time

from sky import check, global_user_state, skypilot_config
from sky.adaptors import aws
from sky.catalog import common as catalog_common
from sky.clouds import cloud as sky_cloud
from sky.utils.db import kv_cache

ws = skypilot_config.get_active_workspace()
allowed = check._get_workspace_allowed_clouds(ws)
global_user_state.set_allowed_clouds(allowed, ws)
global_user_state.set_enabled_clouds(allowed, sky_cloud.CloudCapability.COMPUTE, ws)
profile = aws.get_workspace_profile()
with open(catalog_common.get_catalog_path("aws/images.csv"), newline="") as fh:
    for row in csv.DictReader(fh):
        kv_cache.add_or_update_cache_entry(
            f"aws:ami:root_device_name:{profile}:{row['Region']}:{row['ImageId']}", "/dev/sda1",
            time.time() + 30 * 86400)
print(",".join(str(c) for c in check.get_cached_enabled_clouds_or_refresh(sky_cloud.CloudCapability.COMPUTE)))
EOF

HOME="$SKY_HOME" AWS_EC2_METADATA_DISABLED=true SKYPILOT_DISABLE_USAGE_COLLECTION=1 \
    "$VENV/bin/python" "$SKY_HOME/seed_offline.py" | sed 's/^/  enabled clouds: /'
echo "SkyPilot $("$VENV/bin/python" -c 'import sky; print(sky.__version__)') in $VENV, HOME $SKY_HOME"
echo "next: .venv/bin/python benchmarks/bench_skypilot.py"
