#!/usr/bin/env bash
# Set up (venv, packages with the export extra, Chromium), lint and type-check, build the docs (a broken link or
# anchor fails it), and run every test, the slow and browser ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser --export
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/mkdocs build --strict --quiet --site-dir site
exec .venv/bin/python -m pytest -q -ra "$@"
