"""The docs' command-line reference is generated from the parsers: regenerating it must give the committed page."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_matches_the_parsers():
    page = ROOT / "docs" / "reference" / "cli.md"
    assert page.read_text(encoding="utf-8") == _generator().render(), (
        "docs/reference/cli.md is stale: run PYTHONPATH=. python scripts/gen_cli_docs.py"
    )


def test_cli_reference_lists_every_subcommand_and_flag():
    from placement.cli_args import build_parser

    text = _generator().render()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, child in sub.choices.items():
        assert f"## {name}\n" in text
        for action in child._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text, f"{name} {flag} missing from the CLI reference"


def test_check_mode_reports_a_stale_page(tmp_path):
    gen = _generator()
    stale = tmp_path / "cli.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert gen.main(["--check", "--output", str(stale)]) == 1
    assert gen.main(["--output", str(stale)]) == 0
    assert gen.main(["--check", "--output", str(stale)]) == 0
