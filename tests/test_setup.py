"""The set-up scripts: the app needs the base only; the tests (and CI) install the export extra too."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "deepspeed", "megatron")


def pins(name: str) -> set[str]:
    lines = (ROOT / name).read_text().splitlines()
    return {re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower() for line in lines if line and not line.startswith("#")}


def test_the_base_requirements_hold_no_heavy_framework():
    assert not {p for p in pins("requirements.txt") if p.startswith(HEAVY)}
    assert {"torch", "deepspeed", "megatron-core"} <= pins("requirements-export.txt")


def test_run_app_installs_the_base_and_test_sh_the_export_extra():
    setup = (ROOT / "scripts/setup.sh").read_text()
    # The export extra is installed only under --export.
    assert re.search(r'if \[ "\$EXPORT" = 1 \]; then\n\s+\S+ -m pip install -q -r requirements-export\.txt', setup)
    assert setup.count("requirements-export.txt") == 2  # the comment and the guarded install
    assert "bash scripts/setup.sh\n" in (ROOT / "scripts/run_app.sh").read_text()
    assert "bash scripts/setup.sh --browser --export\n" in (ROOT / "scripts/test.sh").read_text()
    assert (ROOT / ".ci/run").read_text().strip().endswith("bash scripts/test.sh")


def test_the_distribution_installs_placement_only_and_onnx_tool_is_for_tests():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["placement*"]
    assert not any(d.startswith("onnx-tool") for d in project["project"]["dependencies"])
    assert any(d.startswith("onnx-tool") for d in project["project"]["optional-dependencies"]["test"])
    # Only tests import it.
    uses = re.compile(
        r"^\s*(import|from)\s+onnx_tool\b|import_module\(\"onnx_tool|importorskip\(\"onnx_tool", re.MULTILINE
    )
    assert not [p for p in (ROOT / "placement").rglob("*.py") if uses.search(p.read_text())]
    assert any(uses.search(p.read_text()) for p in (ROOT / "tests").glob("*.py"))
