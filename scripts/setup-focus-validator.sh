#!/usr/bin/env bash
# The FinOps Foundation's FOCUS validator (PyPI focus-validator 2.2.1, FOCUS 1.2 rules) for
# tests/test_focus_official.py, in its own venv .venv-focus (it needs Python >= 3.12; gpuopt does not).
# Prints the path of its focus-validator executable: export it as GPUOPT_FOCUS_VALIDATOR.
# Python: $FOCUS_PYTHON, else python3.12 on PATH, else pyenv's 3.12.x.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${FOCUS_PYTHON:-}"
if [ -z "$py" ]; then
    # a pyenv shim named python3.12 exists even when 3.12 is not the active version: it must run
    if python3.12 -c "pass" >/dev/null 2>&1; then
        py="$(python3.12 -c 'import sys; print(sys.executable)')"
    elif command -v pyenv >/dev/null 2>&1 && ls -d "$(pyenv root)"/versions/3.12.* >/dev/null 2>&1; then
        py="$(ls -d "$(pyenv root)"/versions/3.12.* | sort -V | tail -1)/bin/python"
    else
        echo "setup-focus-validator: no Python 3.12 found (set FOCUS_PYTHON)" >&2
        exit 1
    fi
fi
if [ ! -x .venv-focus/bin/focus-validator ]; then
    "$py" -m venv .venv-focus
    # focus-validator 2.2.1 pins numpy < 2 but not pyarrow, and pyarrow >= 22 needs numpy 2: pin pyarrow too
    .venv-focus/bin/pip install -q "focus-validator==2.2.1" "pyarrow==21.0.0" >&2
fi
echo "$PWD/.venv-focus/bin/focus-validator"
