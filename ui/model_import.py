"""Graph page section: import an ONNX model or build a transformer/CNN, then review the estimated costs.

:func:`render_model_import` draws (every widget keyed, prefix ``mi_``):

* the catalogue kind the latencies are estimated for and the inventory (accelerators of that kind + CPU
  cores);
* an ``.onnx`` uploader (with dimension binding and optional coarsening into layers) and a
  model builder form (GPT or Llama-style transformer, ResNet-like CNN);
* once a model is loaded this way, an editable table of its estimated per-node costs, applied
  only when "Apply edits" is pressed (the editor's source frame stays fixed meanwhile, see the
  ``st.data_editor`` note in the ecosystem notes).

Everything numeric comes from :mod:`placement`; a loaded model becomes the current graph
through :func:`ui.state.set_graph` (source ``"model:<name>"``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

import placement
from placement.modelling.builders import CnnConfig, cnn_graph, transformer_graph
from placement.modelling.cost_table import EDITABLE_COLUMNS, apply_cost_rows, cost_rows
from placement.modelling.onnx import MAX_DIM, MAX_ONNX_BYTES, import_onnx, symbolic_dims
from placement.modelling.pricing import cost_source, devices_for, price_graph
from placement.modelling.training import training_graph
from placement.perf.hardware import ACCELERATORS
from placement.perf.transformer import Norm, TransformerSpec
from ui import guard, state, worker

SOURCE_PREFIX = "model:"
_REPORT = "_mi_report"  # (graph digest, list of lines) describing the last import/build
_TABLE = "_mi_table"  # (graph digest, DataFrame): the editor's fixed source frame
_TABLE_VERSION = "_mi_table_version"
_ERROR = "_mi_error"

#: Catalogue kinds, the H100 first (the selectbox's default).
ACCELERATOR_KINDS = ("H100", *(k for k in ACCELERATORS if k != "H100"))


def _start(key: str, default: Any) -> Any:
    """The ``value=`` of widget ``key``: its current value, else ``default`` (the state is not written).

    Invariant: a widget's browser component starts from the server's value. A value put into
    ``st.session_state`` before the widget is created reaches the browser in that run only; a
    component the browser mounts afresh later starts from the widget's ``value=`` and sends it
    back with the next rerun. Without ``value=`` that was ``min_value``: under load (reruns
    landing while a run is in progress) "Build model" and "Import ONNX model" now and then read
    0 accelerators and 0 TFLOP/s ("fp16_flops must be a positive finite number (got 0.0)").
    """
    return st.session_state.get(key, default)


def _device_form() -> None:
    state.init_widget("mi_kind", ACCELERATOR_KINDS[0])  # the selectbox's own default (first option)
    cols = st.columns(3)
    cols[0].selectbox(
        "Device kind for the estimates",
        ACCELERATOR_KINDS,
        key="mi_kind",
        help="Latencies come from the performance model's kernels on this catalogue kind (the reference), on "
        "one CPU core and on the other catalogue kinds (kept per kind in the graph, for mixed inventories).",
    )
    cols[1].number_input(
        "Accelerators", min_value=0, max_value=64, step=1, value=_start("mi_accelerators", 4), key="mi_accelerators"
    )
    cols[2].number_input("CPU cores", min_value=0, max_value=64, step=1, value=_start("mi_cpus", 1), key="mi_cpus")
    st.caption(
        "Matrix products and convolutions by shape (GEMM efficiency of the perf model), fused attention, other "
        "operators as bytes at the achievable memory bandwidth; edges as bytes over the kind's link. "
        "Times in milliseconds; the catalogue's figures and prices: docs/catalogue-and-pricing.md."
    )


def _kinds() -> list[str]:
    """The chosen kind first, then the other catalogue kinds (every kind priced, for mixed inventories)."""
    kind = str(st.session_state["mi_kind"])
    return [kind, *(k for k in ACCELERATOR_KINDS if k != kind)]


def _load(problem: placement.Problem, name: str, lines: list[str]) -> None:
    state.set_graph(problem, name, source=f"{SOURCE_PREFIX}{name}")
    state.use_file_devices()  # the import form chose these devices: they apply even over the user's own
    st.session_state[_REPORT] = (problem.graph.digest, lines)
    st.session_state[_TABLE] = (problem.graph.digest, pd.DataFrame(cost_rows(problem.graph)))
    st.session_state[_TABLE_VERSION] = st.session_state.get(_TABLE_VERSION, 0) + 1
    st.session_state.pop(_ERROR, None)


def _devices() -> placement.Devices:
    return devices_for({str(st.session_state["mi_kind"]): int(st.session_state["mi_accelerators"])},
                       int(st.session_state["mi_cpus"]))  # fmt: skip


def import_model(
    data: bytes,
    name: str,
    kinds: list[str],
    dims: dict[str, int],
    default_dim: int,
    coarsen_depth: int | None,
    training: bool,
    devices: placement.Devices,
) -> tuple[Any, placement.Problem]:
    """The ONNX import of ``data`` (its report, and the problem on ``devices``): a worker process's task."""
    report = import_onnx(data, name, kinds=kinds, dims=dims, default_dim=default_dim, coarsen_depth=coarsen_depth)
    graph = price_graph(training_graph(report.graph), kinds) if training else report.graph
    return report, placement.Problem(graph, devices)


def _import_onnx_clicked() -> None:
    uploaded = st.session_state.get("mi_onnx_upload")
    if uploaded is None:
        st.session_state[_ERROR] = "Choose an .onnx file first."
        return
    if uploaded.size > MAX_ONNX_BYTES:
        st.session_state[_ERROR] = (
            f"{uploaded.name}: file is {uploaded.size:,} bytes, over the {MAX_ONNX_BYTES:,}-byte limit"
        )
        return
    try:
        depth = int(st.session_state["mi_onnx_depth"])
        dims = {
            name: int(st.session_state[_dim_key(k)])
            for k, name in enumerate(_uploaded_dims())
            if _dim_key(k) in st.session_state
        }
        report, problem = worker.run(  # parsing, shape inference and coarsening: in a worker process
            import_model,
            uploaded.getvalue(),
            uploaded.name,
            _kinds(),
            dims,
            int(st.session_state["mi_onnx_dim"]),
            depth or None,
            bool(st.session_state["mi_onnx_training"]),
            _devices(),
        )
    except Exception as exc:  # noqa: BLE001 - a callback runs outside the page guard: one line, no traceback
        st.session_state[_ERROR] = guard.summary(exc)
        return

    def ideals(value):
        return f"{value:,}" if value is not None else "over the cap"

    lines = [f"{report.nodes_before} operators, {ideals(report.ideals_before)} ideals"]
    if depth:
        lines.append(
            f"coarsened (depth {depth}): {len(report.graph.nodes)} nodes, {ideals(report.ideals_after)} ideals"
        )
    if problem.graph.is_training:
        lines.append(
            f"training graph: {len(problem.graph.nodes)} nodes (a backward node per forward node, priced by its "
            "kernels' backward)"
        )
    lines += list(report.notes)
    _load(problem, uploaded.name, lines)


def _build_clicked() -> None:
    ss = st.session_state
    try:
        granularity = ss["mi_granularity"]
        training = bool(ss["mi_training"])
        if ss["mi_model"] == "ResNet-like CNN":
            try:
                blocks = tuple(int(x) for x in str(ss["mi_cnn_blocks"]).replace(" ", "").split(",") if x)
            except ValueError:
                raise placement.InvalidGraphError(
                    f"blocks per stage must be integers separated by commas (got {ss['mi_cnn_blocks']!r})"
                ) from None
            config = CnnConfig(
                blocks=blocks,
                width=int(ss["mi_cnn_width"]),
                image=int(ss["mi_cnn_image"]),
                batch=int(ss["mi_batch"]),
                dtype=ss["mi_dtype"],
            )
            graph = cnn_graph(config, _kinds(), granularity, training)
            problem = placement.Problem(graph, _devices())
        else:
            llama = ss["mi_model"].startswith("Llama")
            spec = TransformerSpec(
                layers=int(ss["mi_layers"]),
                hidden=int(ss["mi_hidden"]),
                heads=int(ss["mi_heads"]),
                seq_length=int(ss["mi_seq"]),
                vocab=int(ss["mi_vocab"]),
                swiglu=llama,
                norm=Norm.RMSNORM if llama else Norm.LAYERNORM,
                rope=llama,
                bias=not llama,
                dropout=not llama,
                tied_embeddings=not llama,
                name=f"{'Llama' if llama else 'GPT'} {int(ss['mi_layers'])}x{int(ss['mi_hidden'])}",
            )
            graph = transformer_graph(
                spec,
                _kinds(),
                micro_batch=int(ss["mi_batch"]),
                dtype=ss["mi_dtype"],
                granularity=granularity,
                training=training,
            )
            problem = placement.Problem(graph, _devices())
    except Exception as exc:  # noqa: BLE001 - a callback runs outside the page guard: one line, no traceback
        st.session_state[_ERROR] = guard.summary(exc)
        return
    ideals = state.ideal_count(problem.graph)
    lines = [
        f"{len(problem.graph.nodes)} nodes, "
        + (f"{ideals:,} ideals" if ideals is not None else f"over {state.IDEALS_CAP:,} ideals")
    ]
    _load(problem, problem.graph.name, lines)


def _dim_key(position: int) -> str:
    """Widget key of the value of the uploaded model's ``position``-th symbolic dimension."""
    return f"mi_onnx_dim_{position}"


def _uploaded_dims() -> tuple[str, ...]:
    """Symbolic input dimension names of the chosen .onnx file (empty when none or unreadable)."""
    uploaded = st.session_state.get("mi_onnx_upload")
    if uploaded is None or uploaded.size > MAX_ONNX_BYTES:
        return ()
    seen = st.session_state.get("_mi_onnx_dims")
    file_key = (uploaded.file_id, uploaded.name, uploaded.size)
    if seen is None or seen[0] != file_key:
        try:
            names = symbolic_dims(uploaded.getvalue(), uploaded.name)
        except placement.PlacementError:
            names = ()  # the import button reports the error
        for key in [k for k in st.session_state if str(k).startswith("mi_onnx_dim_")]:
            del st.session_state[key]  # another model: its dimensions start again from the default
        seen = (file_key, names)
        st.session_state["_mi_onnx_dims"] = seen
    return seen[1]


def _onnx_form() -> None:
    state.init_widget("mi_onnx_depth", 0)  # equal to the widget's own default (min_value)
    state.init_widget("mi_onnx_training", False)
    st.file_uploader(
        f"ONNX model (at most {MAX_ONNX_BYTES // 2**20} MB; tensors must be inside the file)",
        type=["onnx"],
        key="mi_onnx_upload",
        max_upload_size=MAX_ONNX_BYTES // 2**20,
    )
    names = _uploaded_dims()
    if names:  # one value per symbolic dimension: batch and sequence are separate
        st.caption("Symbolic input dimensions of this model (each gets its own value):")
        dim_cols = st.columns(min(len(names), 4))
        for k, name in enumerate(names):
            value = _start(_dim_key(k), int(_start("mi_onnx_dim", 1)))
            dim_cols[k % len(dim_cols)].number_input(
                f"Dimension '{name}'", min_value=1, step=1, value=value, key=_dim_key(k)
            )
    cols = st.columns(3)
    cols[0].number_input(
        "Value of any other symbolic dimension"
        if names
        else "Value of symbolic dimensions (shown per name once a model is chosen)",
        min_value=1,
        max_value=MAX_DIM,
        step=1,
        value=_start("mi_onnx_dim", 1),
        key="mi_onnx_dim",
    )
    cols[1].number_input(
        "Merge into layers: name components (0 = keep operators)",
        min_value=0,
        max_value=20,
        step=1,
        key="mi_onnx_depth",
        help="Nodes whose names share their first N components (split on '/' and '.') become one "
        "node; e.g. 4 merges '/bert/encoder/layer.0/...' by layer.",
    )
    cols[2].checkbox("Training graph (backward nodes)", key="mi_onnx_training")
    st.button("Import ONNX model", key="mi_onnx_import", on_click=_import_onnx_clicked, type="primary")


def _builder_form() -> None:
    # Choices start at the widgets' own defaults (first option, unchecked), so the browser agrees.
    for key, value in {
        "mi_model": "GPT transformer",
        "mi_dtype": "bf16",
        "mi_granularity": "operator",
        "mi_training": False,
    }.items():
        state.init_widget(key, value)
    defaults = {
        "mi_layers": 12,
        "mi_hidden": 768,
        "mi_heads": 12,
        "mi_seq": 1024,
        "mi_vocab": 50257,
        "mi_batch": 1,
        "mi_cnn_blocks": "3,4,6,3",
        "mi_cnn_width": 64,
        "mi_cnn_image": 224,
    }
    values = {key: _start(key, value) for key, value in defaults.items()}
    cols = st.columns(4)
    cols[0].selectbox("Model", ("GPT transformer", "Llama-style transformer", "ResNet-like CNN"), key="mi_model")
    cols[1].selectbox("Data type", ("bf16", "fp16", "fp32", "fp8"), key="mi_dtype")
    cols[2].radio("Granularity", ("operator", "layer"), key="mi_granularity", horizontal=True)
    cols[3].checkbox("Training graph (backward nodes)", key="mi_training")
    cols = st.columns(5)
    if st.session_state["mi_model"] == "ResNet-like CNN":
        cols[0].text_input("Blocks per stage", value=values["mi_cnn_blocks"], key="mi_cnn_blocks")
        cols[1].number_input("Base width", min_value=1, step=1, value=values["mi_cnn_width"], key="mi_cnn_width")
        cols[2].number_input("Image size", min_value=32, step=1, value=values["mi_cnn_image"], key="mi_cnn_image")
    else:
        cols[0].number_input("Layers", min_value=1, max_value=512, step=1, value=values["mi_layers"], key="mi_layers")
        cols[1].number_input("Hidden size", min_value=1, step=1, value=values["mi_hidden"], key="mi_hidden")
        cols[2].number_input("Heads", min_value=1, step=1, value=values["mi_heads"], key="mi_heads")
        cols[3].number_input("Sequence length", min_value=1, step=1, value=values["mi_seq"], key="mi_seq")
        st.number_input("Vocabulary", min_value=1, step=1, value=values["mi_vocab"], key="mi_vocab")
    cols[4].number_input("Batch", min_value=1, step=1, value=values["mi_batch"], key="mi_batch")
    st.button("Build model", key="mi_build", on_click=_build_clicked, type="primary")


def _editor_key() -> str:
    return f"mi_costs_{st.session_state.get(_TABLE_VERSION, 0)}"


def _edited_rows() -> list[dict]:
    """The source frame with the editor's pending edits (its ``edited_rows`` state) applied."""
    frame = st.session_state[_TABLE][1].copy()
    edits = (st.session_state.get(_editor_key()) or {}).get("edited_rows", {})
    rows = frame.to_dict("records")
    for position, changes in edits.items():
        rows[int(position)].update({column: value for column, value in changes.items() if column in EDITABLE_COLUMNS})
    return rows


def _apply_clicked() -> None:
    problem = state.base_problem()
    table = st.session_state.get(_TABLE)
    if problem is None or table is None or table[0] != problem.graph.digest:
        return
    try:
        graph = apply_cost_rows(problem.graph, _edited_rows())
    except Exception as exc:  # noqa: BLE001 - a callback runs outside the page guard: one line, no traceback
        st.session_state[_ERROR] = guard.summary(exc)
        return
    name = state.current_graph_name()
    name = name if name.endswith(" (edited)") else f"{name} (edited)"
    report = st.session_state.get(_REPORT, (None, []))[1]
    _load(placement.Problem(graph, state.current_devices()), name, list(report) + ["costs edited by hand"])


def _cost_table() -> None:
    problem = state.base_problem()
    table = st.session_state.get(_TABLE)
    if problem is None or table is None or table[0] != problem.graph.digest:
        return
    if not state.current_graph_source().startswith(SOURCE_PREFIX):
        return
    st.markdown("**Estimated costs per node** (edit latencies or weights, then apply before solving)")
    st.caption(f"Costs: {cost_source(problem.graph)}")
    report = st.session_state.get(_REPORT)
    if report and report[0] == problem.graph.digest:
        for line in report[1]:
            st.caption(line)
    frame = table[1]
    disabled = [c for c in frame.columns if c not in EDITABLE_COLUMNS]
    st.data_editor(frame, key=_editor_key(), hide_index=True, disabled=disabled, num_rows="fixed")
    st.button(
        "Apply edits",
        key="mi_apply",
        on_click=_apply_clicked,
        help="Make the edited latencies and sizes the current graph (the estimates table restarts from them).",
    )


def render_model_import() -> None:
    """The model import section of the Graph page (ONNX upload, builders, editable cost table)."""
    with st.expander(
        "Import a model: ONNX file or model builder (perf-model cost estimates)",
        expanded=state.current_graph_source().startswith(SOURCE_PREFIX),
    ):
        _device_form()
        tab_onnx, tab_build = st.tabs(["ONNX file", "Model builder"])
        with tab_onnx:
            _onnx_form()
        with tab_build:
            _builder_form()
        error = st.session_state.get(_ERROR)
        if error:
            st.error(f"{error} — the previous graph stays loaded.")
        _cost_table()
