#!/usr/bin/env bash
# Set up (venv, packages with the export extra, Chromium), lint and type-check, and run every test, the slow and
# browser ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser --export
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -ra "$@"
