#!/usr/bin/env bash
# What the test suite needs beyond the project's own test extra (README "Run the tests"; .ci/run runs the same):
# - Debian's chromium, for tests/test_report_browser.py (the HTML reports in a headless browser); installed with
#   apt-get when missing (needs root, as on CI machines);
# - the FinOps Foundation's focus-validator 2.2.1 in its own Python 3.12 venv .venv-focus
#   (scripts/setup-focus-validator.sh), for tests/test_focus_official.py.
# Java (for the Spark tests, pyspark in local mode) is expected on the machine (Java 17).
# Each step is skipped when already done, so running this again costs a second.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
        echo "setup-test-tools: installing Debian's chromium (for the browser tests of the reports)" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    else
        echo "setup-test-tools: chromium is missing and this is not root: 'sudo apt-get install chromium'" >&2
    fi
fi
./scripts/setup-focus-validator.sh >/dev/null
