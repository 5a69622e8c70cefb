"""AppTest of the Parallel plan page's section "Launchable layout (transformer training)" (ui/launch_plan.py),
and plain tests of its figures (placement/viz/perf.py). Numbers shown are recomputed here with the search."""

from __future__ import annotations

import pytest

from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import megatron_command
from placement.perf.layout import Layout, Recompute, Schedule, stage_layers
from placement.perf.pp_layout import pipeline_layout_string
from placement.perf.predict import predict
from placement.perf.search import search
from placement.perf.transformer import MODELS
from placement.viz import perf as viz_perf
from ui.navigation import page_file

from .apptest_helpers import goto, start

PAGE = page_file("Parallel plan")
pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def _open():
    at = start(timeout=180)
    at.session_state["md_curve_on"] = False  # the Piper section's device curve is not under test here
    goto(at, PAGE)
    return at


def _texts(at, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


def test_figures_are_plain_functions():
    m = {"a": {"weights": 2 * 2**30, "activations": 2**30, "total": 3 * 2**30}, "b": {"weights": 2**30, "total": 2**30}}
    fig = viz_perf.memory_figure(m, capacity=4 * 2**30)
    assert [t.name for t in fig.data] == ["weights", "activations"] and list(fig.data[0].y) == [2.0, 1.0]
    tfig = viz_perf.time_figure({"x": {"compute": 1.0, "tp_comm": 0.0}})
    assert [t.name for t in tfig.data] == ["compute"]


@pytest.mark.slow
def test_section_shows_the_optimum_and_a_pasted_layout():
    at = _open()
    assert "Launchable layout (transformer training)" in _texts(at, "header")
    model = MODELS["llama3-70b"]
    cluster = Cluster(ACCELERATORS["H100"], 64, 8)
    plan = search(model, cluster, 1024, "megatron").plan
    assert any(s.startswith("Optimal in the model perf-") for s in _texts(at, "success"))
    shown = {m.label: m.value for m in at.metric}
    assert shown["iteration"].startswith(f"{plan.iteration_seconds:.3f} s")
    assert any("--tensor-model-parallel-size" in c for c in _texts(at, "code"))
    assert " ".join(megatron_command(model, plan.layout)) in _texts(at, "code")
    # the band, and where this run is outside the calibration runs (listed in an expander)
    outside = plan.prediction.outside_calibration
    assert outside and any(f"outside them in {len(outside)} properties" in c for c in _texts(at, "caption"))
    assert any(f"- {outside[0]}" in md.value for md in at.markdown)

    published = Layout(tensor=8, pipeline=4, data=2, virtual_stages=5, global_batch=1024, sequence_parallel=True,
                       zero_stage=1, recompute=Recompute.SELECTIVE)  # fmt: skip
    at.text_area(key="lp_paste").set_value("torchrun pretrain_gpt.py " + " ".join(megatron_command(model, published)))
    at.run()
    assert not at.exception and not at.error
    table = at.dataframe[-1].value
    assert list(table["layout"]) == ["optimum", "pasted"]
    assert table["iteration s"].iloc[1] == pytest.approx(predict(model, cluster, published).iteration_seconds)
    assert table["iteration s"].iloc[0] <= table["iteration s"].iloc[1]
    assert table["properties outside the calibration runs"].iloc[1] == len(
        predict(model, cluster, published).outside_calibration
    )

    at.text_area(key="lp_paste").set_value("--num-layers 80 --hidden-size 8192 --num-attention-heads 64 "
                                           "--seq-length 8192 --tensor-model-parallel-size 3")  # fmt: skip
    at.run()
    assert not at.exception
    errors = _texts(at, "error")
    assert len(errors) == 1 and errors[0].startswith("pasted command:") and "\n" not in errors[0]

    at.selectbox(key="lp_framework").set_value("torchtitan")
    at.run()
    assert not at.exception and any("torchtitan" in s for s in _texts(at, "success"))
    commands = [c.value for c in at.code]
    assert not any("Error" in c for c in commands), commands  # ui/guard shows an escaped exception as code
    titan = search(model, cluster, 1024, "torchtitan").plan
    if titan.layout.schedule is Schedule.ZBV:  # no Megatron-LM download
        assert any("Megatron-LM has no flag" in c for c in _texts(at, "caption"))
    else:  # the same layout as Megatron-LM flags too
        assert any("--tensor-model-parallel-size" in c for c in commands)
    assert any(c.startswith("torchrun --nnodes=") and c.endswith("--job.config_file torchtitan.toml") for c in commands)
    assert any("torchtitan 0.2.2 JobConfig" in c and c.endswith(": ok") for c in _texts(at, "caption")), commands

    # Llama 3 8B at s = 8192 on 8 L4s: the optimum is a free split; the section lists every rank's layers and the
    # command carries --pipeline-model-parallel-layout
    model = MODELS["llama3-8b"]
    cluster = Cluster(ACCELERATORS["L4"], 8, 8)
    plan = search(model, cluster, 256, "megatron").plan
    assert plan.layout.free_split
    counts = stage_layers(model, plan.layout)
    at.selectbox(key="lp_framework").set_value("megatron")
    at.selectbox(key="lp_model").set_value("llama3-8b")
    at.selectbox(key="lp_gpu").set_value("L4")
    at.number_input(key="lp_gpus").set_value(8)
    at.number_input(key="lp_batch").set_value(256)
    at.run()
    assert not at.exception and all(e.startswith("pasted command:") for e in _texts(at, "error"))  # (still pasted)
    flag = f"--pipeline-model-parallel-layout {pipeline_layout_string(model, plan.layout)}"
    assert any(flag in m and " / ".join(map(str, counts)) in m for m in _texts(at, "markdown"))
    assert " ".join(megatron_command(model, plan.layout)) in _texts(at, "code")
    assert flag in " ".join(megatron_command(model, plan.layout))
    table = next(d.value for d in at.dataframe if "layers" in d.value.columns)
    assert list(table["layers"]) == list(counts) and (table["GiB"] <= 22.36).all()
