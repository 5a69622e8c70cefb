#!/usr/bin/env bash
# Create .venv with the packages the app and the tests need (requirements.txt) and the package itself
# (idempotent). Options, in any order:
#   --export   also the optional export extra (requirements-export.txt: CPU torch, megatron-core, deepspeed,
#              about 1 GB; requirements-export-nodeps.txt: torchtitan 0.2.2 and tyro, which its config manager
#              parses with, without their other dependencies) for the
#              round trips of exported plans through the frameworks' own parsers;
#   --browser  also Debian's Chromium for the real-browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
EXPORT=0
BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --export) EXPORT=1 ;;
    --browser) BROWSER=1 ;;
    *) echo "scripts/setup.sh: unknown option '$arg' (use --export and/or --browser)" >&2; exit 2 ;;
  esac
done
if [ "$BROWSER" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
if [ "$EXPORT" = 1 ]; then
  .venv/bin/python -m pip install -q -r requirements-export.txt
  .venv/bin/python -m pip install -q --no-deps -r requirements-export-nodeps.txt
fi
.venv/bin/python -m pip install -q --no-deps -e .
# Compile the numba DP kernels now (cached beside the source, placement/exact/__pycache__), so that the
# first solve in the app and the CLI takes about a second instead of a minute or more.
PYTHONPATH=. .venv/bin/python scripts/warm_kernels.py
