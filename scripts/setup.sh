#!/usr/bin/env bash
# Create .venv with every Python package the project needs (idempotent).
# With --browser, also install Debian's Chromium for the real-browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
# Optional extra (CPU torch, megatron-core, deepspeed) for the export round-trip tests.
.venv/bin/python -m pip install -q -r requirements-export.txt
.venv/bin/python -m pip install -q --no-deps -e .
# Compile the numba DP kernels now (cached beside the source, placement/exact/__pycache__), so that the
# first solve in the app and the CLI takes about a second instead of a minute or more.
PYTHONPATH=. .venv/bin/python scripts/warm_kernels.py
