#!/usr/bin/env bash
# Set up (venv, packages, Chromium) and run every test, the slow and browser ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
exec .venv/bin/python -m pytest -q -ra "$@"
