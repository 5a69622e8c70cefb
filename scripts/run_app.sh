#!/usr/bin/env bash
# Set up (venv, the base packages: no torch) and start the app; open the printed URL (default http://localhost:8501).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PORT="${PORT:-8501}"
echo "Starting the placement explorer at http://localhost:${PORT}"
exec .venv/bin/python -m streamlit run app.py --server.port "$PORT" --server.headless true \
  --browser.gatherUsageStats false "$@"
