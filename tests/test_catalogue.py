"""The hardware catalogue: one data file holds every accelerator's figures (and one CPU core's), dated prices."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from placement.errors import InvalidDevicesError
from placement.perf.hardware import ACCELERATORS, CATALOGUE_FILE, GB, GIB, accelerator, cpu_core, load_catalogue

ROOT = Path(__file__).resolve().parent.parent
#: The H100's dense bf16 peak (TFLOP/s) and HBM bandwidth (TB/s), as a table or code would write them.
H100_FIGURES = re.compile(r"989\.4|989e12|\b3\.35\b|3\.35e12")


def test_one_file_holds_the_h100_figures():
    holders = []
    for folder in ("placement", "ui", "app_pages"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".md", ".toml", ".csv", ".yaml"):
                if H100_FIGURES.search(path.read_text(encoding="utf-8", errors="replace")):
                    holders.append(path.relative_to(ROOT).as_posix())
    assert holders == ["placement/perf/catalogue.json"]


def test_catalogue_entries_read_in_bytes_and_dated_prices():
    data = json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))
    h100 = ACCELERATORS["H100"]
    assert (h100.bf16_tflops, h100.hbm_bytes_per_s, h100.memory_bytes) == (989.4, 3.35e12, 80 * GIB)
    assert (h100.nvlink_bytes_per_s, h100.nic_bytes_per_s, h100.pcie_bytes_per_s) == (450 * GB, 50 * GB, 64 * GB)
    assert ACCELERATORS["H200"].memory_bytes == 141 * GB
    assert set(ACCELERATORS) == {e["name"] for e in data["accelerators"]}
    for acc in ACCELERATORS.values():
        assert acc.usd_per_hour > 0 and acc.price_date == data["price_date"] and acc.fraction_source
    assert re.fullmatch(r"\d{4}-\d{2}", data["price_date"])
    assert accelerator("h100-sxm") is h100


def test_cpu_core_entry():
    cpu = cpu_core()
    assert cpu.name == "cpu"
    assert cpu.fp32_tflops == pytest.approx(0.192) and cpu.hbm_bytes_per_s == pytest.approx(12e9)
    assert cpu.usd_per_hour > 0
    with pytest.raises(InvalidDevicesError):
        accelerator("cpu")  # a CPU core is not an accelerator kind


def test_a_broken_catalogue_is_one_line(tmp_path):
    data = json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))
    data["accelerators"][0]["hbm_tb_per_s"] = "fast"
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidDevicesError, match=r"^catalogue.json: 'V100': hbm_tb_per_s must be a number"):
        load_catalogue(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InvalidDevicesError, match="not a hardware catalogue"):
        load_catalogue(path)


def test_docs_table_matches_the_catalogue():
    text = (ROOT / "docs" / "catalogue-and-pricing.md").read_text(encoding="utf-8")
    for acc in ACCELERATORS.values():
        row = next(line for line in text.splitlines() if line.startswith(f"| {acc.name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[1]) == acc.fp32_tflops and float(cells[6]) * 1e12 == acc.hbm_bytes_per_s, acc.name
        assert float(cells[-1]) == acc.usd_per_hour and float(cells[-3]) == acc.matmul_fraction, acc.name
