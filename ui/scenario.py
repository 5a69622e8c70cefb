"""The scenario in the URL and in scenario cards (a reload keeps the settings).

* :func:`sync_url` writes the current scenario (graph, devices, latency multipliers, method,
  objective, time limit, memory model, page settings such as the schedule, the picked plan) into ``st.query_params``; it runs
  at the start of every page run and after every change made through :mod:`ui.state`.
* :func:`restore_from_url` applies the URL's scenario on a session's first run, so a shared link
  (or a reload) opens the same view.
* :func:`render_scenario_card` offers the link, a "scenario card" JSON download and an upload
  for cards (the graph travels inline when it was uploaded).

Uploaded graphs are referred to by digest; the server keeps the most recent ones
(:data:`UPLOADS_KEPT`) so that a link to one works in another browser while the server runs.
"""

from __future__ import annotations

from collections import OrderedDict
from urllib.parse import urlencode

import streamlit as st

import placement
from placement.errors import label, quote
from placement.pipeline.schedule import ALL_SCHEDULES
from placement.scenario import (
    QUERY_KEYS,
    Scenario,
    parse_scenario,
    scenario_from_query,
    scenario_to_json,
    scenario_to_query,
)
from placement.scenario_plan import plan_from_result, plan_result
from placement.solve import METHODS
from ui import guard, state, transformer, worker

#: Widget keys of page settings carried by a scenario (their widgets persist across page switches).
SETTINGS_KEYS = (
    "timeline_schedule",
    "timeline_microbatches",
    "timeline_optimizer",
    "timeline_recompute",
    "timeline_plan",
)
#: What each carried setting's widget accepts (the Timeline page's widgets): a link or card with
#: another value is refused in one line instead of breaking the page (issue 27).
SETTINGS_ALLOWED: dict[str, tuple] = {
    "timeline_schedule": tuple(ALL_SCHEDULES),
    "timeline_microbatches": (int, 1, 64),
    "timeline_optimizer": (float, 0.0, 8.0),
    "timeline_recompute": (False, True),
    "timeline_plan": ("current plan", "memory-aware plan"),
}
#: Settings whose widget may be empty (the optimizer multiplier: empty = the graph's mixed-precision Adam).
SETTINGS_NULLABLE = frozenset({"timeline_optimizer"})
#: Settings that carry the memory model and the currency (Devices page; every page uses them).
MODEL_KEYS = ("mm_training", "mm_schedule", "mm_microbatches", "mm_optimizer", "mm_recompute", "currency")
#: Widgets that show the memory model and currency: dropped on a restore so that they show the scenario's.
_MODEL_WIDGETS = (
    "dev_mm_kind",
    "dev_mm_schedule",
    "dev_mm_microbatches",
    "dev_mm_optimizer",
    "dev_mm_recompute",
    "dev_currency",
)
UPLOADS_KEPT = 32
_ERROR = "_ui_scenario_error"
_RESTORED = "_ui_scenario_restored"


@st.cache_resource(show_spinner=False)
def _uploads() -> OrderedDict:
    """Uploaded graphs by digest, most recent last (shared by the sessions of this server)."""
    return OrderedDict()


def remember_upload(problem: placement.Problem, name: str) -> None:
    """Keep an uploaded graph so a link naming its digest can open it (bounded, oldest dropped)."""
    store = _uploads()
    store[problem.graph.digest] = (name, problem)
    store.move_to_end(problem.graph.digest)
    while len(store) > UPLOADS_KEPT:
        store.popitem(last=False)


def _setting(key: str):
    return st.session_state.get(key)


def current_scenario(inline: bool = False) -> Scenario | None:
    """The scenario now in force (``inline``: carry the graph when it is not a sample)."""
    problem = state.base_problem()
    if problem is None:
        return None
    source = state.current_graph_source()
    graph = source if source.startswith("sample:") else f"upload:{problem.graph.digest}"
    settings = {}
    for key in SETTINGS_KEYS:
        value = _setting(key)
        if isinstance(value, (str, int, float, bool)):
            settings[key] = value
    settings.update(_model_settings())
    settings.update(transformer.settings())  # the transformer scenario (tf_* keys)
    return Scenario(
        graph=graph,
        devices=state.current_devices(),
        method=state.current_method(),
        objective=state.current_objective(),
        time_limit=min(max(state.current_time_limit(), 1.0), 3600.0),
        latency_rules=state.latency_rules(),
        settings=settings,
        graph_name=state.current_graph_name(),
        inline_graph=problem.graph if inline and not graph.startswith("sample:") else None,
        plan=_picked_plan(),
    )


def _picked_plan():
    """The plan picked on a page (Tradeoffs, Compare, Plan view) as a scenario carries it; None without one."""
    picked = state.selected_plan()
    if picked is None:
        return None
    from placement.solve import recomputing_devices

    problem, result, name = picked
    devices = problem.devices if problem.devices != state.current_devices() else None
    try:
        return plan_from_result(result, name, devices, recomputing_devices(result))
    except placement.PlacementError:  # a label or split a scenario cannot carry: the link opens a fresh solve
        return None


def _model_settings() -> dict:
    """The memory model and currency as scenario settings (the default optimizer, None, is left out)."""
    model = state.current_memory_model()
    out = {
        "mm_training": model.training,
        "mm_schedule": model.schedule,
        "mm_microbatches": model.microbatches,
        "mm_recompute": model.recompute,
        "currency": state.current_currency(),
    }
    if model.optimizer_multiplier is not None:
        out["mm_optimizer"] = float(model.optimizer_multiplier)
    return out


def _apply_model_settings(settings: dict, source: str) -> None:
    """Set the memory model and currency a scenario carries (scenarios from before issue 26 carry none)."""
    if not any(key in settings for key in MODEL_KEYS):
        return
    try:
        model = placement.MemoryModel(
            training=settings.get("mm_training", False),
            schedule=settings.get("mm_schedule", "1f1b"),
            microbatches=settings.get("mm_microbatches", 8),
            optimizer_multiplier=settings.get("mm_optimizer"),
            recompute=settings.get("mm_recompute", "none"),
        )
        if "currency" in settings:
            state.set_currency(str(settings["currency"]))
    except placement.PlacementError as exc:
        raise placement.InvalidScenarioError(f"{source}: {exc}") from None
    state.set_memory_model(model)
    for key in _MODEL_WIDGETS:
        st.session_state.pop(key, None)


def sync_url() -> None:
    """Write the current scenario into the URL's query parameters (only when they differ)."""
    scenario = current_scenario()
    if scenario is None or st.session_state.get(_RESTORED) is None:
        return  # before the first restore: keep the link the user opened
    now = {key: st.query_params.get(key) for key in st.query_params}
    wanted = scenario_to_query(scenario)
    if {key: value for key, value in now.items() if key in QUERY_KEYS} != wanted:
        for key in QUERY_KEYS:  # other parameters (e.g. Streamlit's "embed") stay
            if key not in wanted and key in st.query_params:
                del st.query_params[key]
        st.query_params.update(wanted)


def apply_scenario(scenario: Scenario, source: str = "link") -> None:
    """Make ``scenario`` the view: load its graph, then its devices, multipliers, method and settings.

    Raises :class:`placement.PlacementError` (one line) when its graph cannot be found or a
    setting does not fit the graph; nothing is changed then.
    """
    if scenario.is_sample:
        by_label = {state.sample_label(path): path for path in state.sample_files()}
        if scenario.sample_label not in by_label:
            raise placement.InvalidScenarioError(f"{source}: no sample graph named {quote(scenario.sample_label)}")
        problem = placement.load_problem(by_label[scenario.sample_label])
        name, graph_source = scenario.sample_label, scenario.graph
    elif scenario.inline_graph is not None:
        problem = placement.Problem(scenario.inline_graph, scenario.devices)
        name = scenario.graph_name or f"upload {scenario.inline_graph.digest}"
        graph_source = f"upload:{name}"
        remember_upload(problem, name)
    else:
        kept = _uploads().get(scenario.digest)
        if kept is None:
            raise placement.InvalidScenarioError(
                f"{source}: the uploaded graph {scenario.digest} is not on this server (any more); "
                "upload the graph or its scenario card"
            )
        name, problem = kept
        graph_source = f"upload:{name}"
    # validate before changing anything (pattern matching: in a worker process, see ui/worker.py)
    graph = worker.run(worker.scaled_graph, problem.graph, scenario.latency_rules)
    if scenario.method not in METHODS:  # the Placement page would fall back silently
        raise placement.InvalidScenarioError(
            f"{source}: method {quote(scenario.method, 40)} is not one of {', '.join(METHODS)}"
        )
    for key, value in scenario.settings:
        _check_setting(key, value, source)
    try:  # the devices and multipliers must fit the graph (no load overflows), also before any change
        placement.Problem(graph, scenario.devices)
    except placement.PlacementError as exc:
        raise placement.InvalidScenarioError(f"{source}: {exc}") from None
    picked = None
    if scenario.plan is not None:  # its split must fit the graph and its devices, also before any change
        plan_problem = placement.Problem(graph, scenario.plan.devices or scenario.devices)
        picked = (plan_problem, plan_result(scenario.plan, plan_problem, source), scenario.plan.label)
    settings = dict(scenario.settings)
    carried = transformer.read_settings(settings, source)  # validated (raises) before anything changes
    _apply_model_settings(settings, source)  # validated (raises) before the graph changes
    state.set_graph(problem, name, source=graph_source)
    state.set_devices(scenario.devices)
    if scenario.devices == problem.devices:
        state.use_file_devices()
    state.set_latency_rules(scenario.latency_rules)
    state.set_method(scenario.method)
    state.set_objective(scenario.objective)
    state.set_time_limit(scenario.time_limit)
    for key, value in scenario.settings:
        if key in SETTINGS_KEYS:
            st.session_state[key] = value
    # Widgets that mirror the method and objective follow the scenario.
    for key in ("pl_method", "pl_objective", "pl_time_limit", "cmp_objective"):
        st.session_state.pop(key, None)
    transformer.apply_settings(carried)
    if picked is not None:  # last: loading the graph and memory model drop any picked plan
        state.set_selected_plan(*picked)


def _check_setting(key: str, value, source: str) -> None:
    allowed = SETTINGS_ALLOWED.get(key)
    if allowed is None or (value is None and key in SETTINGS_NULLABLE):
        return
    if allowed and isinstance(allowed[0], type):
        kind, low, high = allowed
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and (kind is float or float(value).is_integer()) and low <= value <= high:
            return
        rule = f"{'an integer' if kind is int else 'a number'} from {low:g} to {high:g}"
    else:
        if any(value == choice and type(value) is type(choice) for choice in allowed):
            return
        rule = "one of " + ", ".join(quote(choice) if isinstance(choice, str) else str(choice) for choice in allowed)
    raise placement.InvalidScenarioError(
        f"{source}: setting {quote(key)} must be {rule} (got {label(repr(value), 60)})"
    )


def restore_from_url() -> bool:
    """On a session's first run, apply the URL's scenario; True when a graph was loaded.

    A bad link loads nothing and leaves a one-line message for :func:`show_restore_error`.
    """
    if st.session_state.get(_RESTORED) is not None:
        return False
    st.session_state[_RESTORED] = True
    params = {key: st.query_params.get(key) for key in st.query_params if key in QUERY_KEYS}
    if "graph" not in params:
        return False
    try:
        apply_scenario(scenario_from_query(params), "link")
    except placement.PlacementError as exc:
        st.session_state[_ERROR] = f"{exc} — the link's settings were not applied."
        return False
    return True


def mark_restored() -> None:
    """From now on the URL follows the state (also for sessions that never restored one)."""
    st.session_state[_RESTORED] = True


def show_restore_error() -> None:
    """Show (once) why the opened link could not be applied."""
    message = st.session_state.pop(_ERROR, None)
    if message:
        st.error(guard.markdown_safe(message))


def share_link(scenario: Scenario) -> str:
    """The link to ``scenario`` on this server (the page's own address with the scenario's parameters)."""
    try:
        base = str(st.context.url or "").split("?")[0]
    except Exception:  # noqa: BLE001 - no browser context (tests)
        base = ""
    return f"{base}?{urlencode(scenario_to_query(scenario))}"


def render_scenario_card() -> None:
    """The "share this view" section: the link, the card download and a card upload."""
    scenario = current_scenario(inline=True)
    if scenario is None:
        return
    st.subheader("Share this view")
    st.caption(
        "The address bar always holds this view (graph, devices, inventory, multipliers, method, memory "
        "model, schedule and microbatches, the picked plan, and the page): copy it, or download a scenario "
        "card (the same but the page). A card carries an uploaded graph inline."
    )
    st.code(share_link(current_scenario()), language=None, wrap_lines=True)
    col_down, col_up = st.columns(2)
    with col_down:
        st.download_button(
            "Download scenario card",
            scenario_to_json(scenario),
            file_name="scenario.json",
            mime="application/json",
            key="scenario_download",
        )
    with col_up:
        uploaded = st.file_uploader(
            f"Upload a scenario card (at most {placement.MAX_FILE_BYTES // 2**20} MiB)",
            type=["json"],
            key="scenario_upload",
            max_upload_size=state.UPLOAD_LIMIT_MB,
        )
        if uploaded is not None:
            seen = (uploaded.file_id, uploaded.name, uploaded.size)
            if st.session_state.get("_scenario_upload_seen") != seen:
                st.session_state["_scenario_upload_seen"] = seen
                st.session_state.pop("_scenario_upload_error", None)
                try:
                    if uploaded.size > placement.MAX_FILE_BYTES:
                        raise placement.InvalidScenarioError(
                            f"{uploaded.name}: file is {uploaded.size:,} bytes, over the "
                            f"{placement.MAX_FILE_BYTES:,}-byte limit"
                        )
                    card = parse_scenario(uploaded.getvalue(), uploaded.name)
                    apply_scenario(card, uploaded.name)
                except placement.PlacementError as exc:
                    st.session_state["_scenario_upload_error"] = str(exc)
                else:
                    st.session_state["_scenario_upload_ok"] = (
                        f"Scenario card {uploaded.name} applied: {state.current_graph_name()} on "
                        f"{state.describe_devices(state.current_devices())}; memory model "
                        f"{state.current_memory_model().describe()}."
                    )
                    st.rerun()
            error = st.session_state.get("_scenario_upload_error")
            if error:
                st.error(f"{guard.markdown_safe(error)} — the current view stays.")
        applied = st.session_state.get("_scenario_upload_ok")
        if applied and uploaded is not None:
            st.success(applied, icon=":material/check_circle:")
