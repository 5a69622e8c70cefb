"""The Devices page's forms (ui.devices_form) as plain functions, without Streamlit."""

import math
from dataclasses import replace

import pandas as pd
import pytest

import placement
from placement import AcceleratorKind, Devices, MemoryModel
from placement.model import MAX_DEVICE_COUNT
from ui import devices_form as form

GIB = 2**30
FILE = Devices(
    accelerators=(AcceleratorKind("V100", 4, memory=16.01 * GIB, speed=1.0), AcceleratorKind("T4", 2, memory=8 * GIB)),
    cpus=1,
)


def test_widget_values_round_trip_to_the_same_devices():
    shown = form.widget_values(FILE)
    assert shown["dev_count"] == 4 and shown["dev_memory_limited"] and shown["dev_cpu_pays"] is False
    assert form.devices_from_widgets(FILE, shown, shown) == FILE  # the exact bytes are kept (16.01 GiB)


def test_devices_from_widgets_changes_the_first_kind_only():
    shown = form.widget_values(FILE)
    moved = dict(shown, dev_count=6, dev_memory_gib=32.0, dev_cpu_pays=True, dev_cpu_bandwidth=0.5)
    devices = form.devices_from_widgets(FILE, moved, shown)
    assert devices.accelerators[0] == AcceleratorKind("V100", 6, memory=32 * GIB, speed=1.0)
    assert devices.accelerators[1] == FILE.accelerators[1]
    assert devices.cpu_bandwidth == 0.5


def test_unlimited_memory_and_an_emptied_inventory():
    shown = form.widget_values(FILE)
    devices = form.devices_from_widgets(FILE, dict(shown, dev_memory_limited=False), shown)
    assert math.isinf(devices.accelerators[0].memory)
    empty = FILE.with_changes(accelerators=())
    values = form.widget_values(empty)
    assert values["dev_count"] == 0 and values["dev_memory_gib"] == form.DEFAULT_MEMORY_GIB
    assert form.devices_from_widgets(empty, values, values).accelerators == ()


def test_slider_bounds_hold_values_outside_the_usual_range():
    devices = FILE.with_changes(bandwidth=20.0)
    max_count, max_cpus, speed_range, bandwidth_range = form.slider_bounds(devices)
    assert 4 <= max_count <= MAX_DEVICE_COUNT and max_count >= 2 * 4
    assert speed_range == form.FACTOR_RANGE
    assert bandwidth_range == (0.05, 20.0)


def test_inventory_frame_round_trips():
    frame = form.inventory_frame(FILE)
    assert list(frame.columns) == list(form.INVENTORY_COLUMNS)
    assert form.kinds_from_frame(frame, tuple(FILE.accelerators)) == tuple(FILE.accelerators)


def test_kinds_from_frame_reads_an_added_row_and_refuses_a_row_without_speed():
    frame = form.inventory_frame(FILE)
    added = pd.concat(
        [frame, pd.DataFrame([{"name": "A100", "count": 2, "memory (GiB)": None, "speed": 2.0, "bandwidth": 1.0}])]
    )
    kinds = form.kinds_from_frame(added, tuple(FILE.accelerators))
    assert kinds[-1] == AcceleratorKind("A100", 2, memory=math.inf, speed=2.0, bandwidth=1.0)
    broken = pd.concat([frame, pd.DataFrame([{"name": "X", "count": 1, "bandwidth": 1.0}])])
    with pytest.raises(placement.InvalidDevicesError, match=r"inventory row 3 \(X\): enter a speed"):
        form.kinds_from_frame(broken, ())
    with pytest.raises(placement.InvalidDevicesError, match="inventory row 1: a name is required"):
        form.kinds_from_frame(pd.DataFrame([{"name": " ", "count": 1, "speed": 1.0, "bandwidth": 1.0}]), ())


def test_memory_model_widgets_round_trip():
    model = MemoryModel(training=True, schedule="gpipe", microbatches=4, optimizer_multiplier=2.0, recompute="always")
    assert form.memory_model_from_widgets(form.memory_model_values(model)) == model
    assert form.memory_model_from_widgets(form.memory_model_values(MemoryModel())) == MemoryModel()
    with pytest.raises(placement.PlacementError):
        form.memory_model_from_widgets(dict(form.memory_model_values(model), dev_mm_microbatches=0))


def test_rule_rows_count_matching_names():
    rows = form.rule_rows([("attention", 0.5), ("^fc", 2.0)], ["attention_1", "self_attention", "fc1", "x"])
    assert rows == [
        {"pattern": "attention", "factor": 0.5, "matching nodes": 2},
        {"pattern": "^fc", "factor": 2.0, "matching nodes": 1},
    ]


def test_catalogue_rows_list_every_kind_with_its_price_and_date():
    from placement.perf.hardware import ACCELERATORS

    rows = form.catalogue_rows()
    assert [row["kind"] for row in rows] == list(ACCELERATORS)
    h100 = next(row for row in rows if row["kind"] == "H100")
    assert h100["memory (GiB)"] == pytest.approx(ACCELERATORS["H100"].memory_bytes / GIB, abs=0.05)
    assert h100["USD per GPU-hour"] == ACCELERATORS["H100"].usd_per_hour > 0
    assert h100["price as of"] == ACCELERATORS["H100"].price_date != ""


def test_a_catalogue_kind_comes_with_memory_link_and_price_and_keeps_an_edited_kind():
    from placement.modelling.pricing import devices_for

    only = form.only_catalogue_kind(FILE, "H100", 8)
    assert only.cpus == FILE.cpus and [k.name for k in only.accelerators] == ["H100"]
    assert only.accelerators[0] == devices_for({"H100": 8}).accelerators[0]
    both = form.with_catalogue_kind(only, "A100", 4)
    expected = devices_for({"H100": 8, "A100": 4})  # the A100's link relative to the H100, the reference
    assert both.accelerators == expected.accelerators
    edited = both.with_kind("H100", speed=1.5, price_per_hour=9.0)
    recounted = form.with_catalogue_kind(edited, "H100", 16)  # an existing kind keeps what the user edited
    assert recounted.accelerators[0] == replace(edited.accelerators[0], count=16)
    assert recounted.accelerators[1:] == edited.accelerators[1:]


def test_a_measured_kind_replaces_the_kind_it_was_measured_on_and_goes_back():
    import json

    from placement.modelling.pricing import devices_for
    from placement.perf.hardware import ACCELERATORS
    from placement.perf.profile import profile_from_dict
    from placement.perf.profiled import measured_kind
    from tests.test_perf_profile import _data

    kind = form.read_profile("h100.json", json.dumps(_data()).encode())
    assert kind == measured_kind(profile_from_dict(_data())) and kind.name == "H100 (measured 2026-12-04)"
    catalogue = devices_for({"A100": 4, "H100": 8}, cpus=2).with_kind("H100", speed=1.5, price_per_hour=9.0)
    measured = form.with_measured_kind(catalogue, kind, 3)
    h100 = catalogue.accelerators[1]
    assert measured.accelerators == (catalogue.accelerators[0], replace(h100, name=kind.name, memory=80e9))
    assert measured.cpus == 2
    again = form.with_measured_kind(measured, kind, 3, previous=kind.name)  # a new upload replaces the old one
    assert again == measured
    back = form.without_measured_kind(measured, kind)
    assert back.accelerators == (catalogue.accelerators[0], replace(h100, memory=ACCELERATORS["H100"].memory_bytes))
    # without the catalogue kind in the inventory it is added with the count and the catalogue's link and price
    added = form.with_measured_kind(devices_for({"A100": 4}), kind, 3)
    assert added.accelerators[1] == replace(devices_for({"A100": 4, kind: 3}).accelerators[1])
    assert added.accelerators[1].price_per_hour == ACCELERATORS["H100"].usd_per_hour
    assert form.without_measured_kind(added, kind).accelerators == added.accelerators[:1] + (
        replace(added.accelerators[1], name="H100", memory=ACCELERATORS["H100"].memory_bytes),
    )
    note = form.profile_note(kind, "h100.json", True)
    assert "priced from the profile of NVIDIA H100 80GB HBM3 measured 2026-12-04T18:00:00Z (h100.json)" in note
    assert "calibration band (Megatron A100 runs) does not apply" in note and "\n" not in note
    assert "records no kernels" in form.profile_note(kind, "h100.json", True, has_kernels=False)
    assert "is not in the inventory" in form.profile_note(kind, "h100.json", False)


@pytest.mark.parametrize(
    "data, needle",
    [
        (b"{", "up.json: not valid JSON"),
        (b'{"format": "placement-device-profile/1", "device": []}', "up.json: device: must be an object, got list"),
        (b"x" * (2 * 1024 * 1024 + 1), "up.json: file is 2,097,153 bytes, over the 2,097,152-byte limit"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_file_and_field(data, needle):
    with pytest.raises(placement.InvalidDevicesError, match=needle.replace("[", r"\[")) as info:
        form.read_profile("up.json", data)
    assert "\n" not in str(info.value)
