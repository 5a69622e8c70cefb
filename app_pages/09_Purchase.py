"""Plan a purchase: direct answers for a capacity-planning meeting.

Every candidate inventory (0 to owned + the most one may buy of each kind) is solved exactly
with the DP (:mod:`placement.explore.purchase`); the answers pick from those exact optima.
"""

import pandas as pd
import streamlit as st

from placement import PlacementError, viz
from placement.explore.purchase import (
    cheapest_under,
    fastest_within,
    price_frontier,
    purchase_options,
    today,
    worth_of_more,
)
from ui import guard, state, transformer_view
from ui import purchase as pu

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

UNIT = state.time_unit()


def _catalogue(devices) -> tuple[dict[str, int], dict[str, float]]:
    """What may be bought: per kind, how many more cards and the price per hour of one (an editable table)."""
    st.subheader("What may be bought")
    st.caption(
        "Per kind: how many more cards you could buy, and the price per hour of one card. Add kinds you "
        "do not own yet on the Devices page with count 0."
    )
    source_key = "_pu_catalogue_source"
    if st.session_state.get(source_key, (None,))[0] != state.devices_version():
        st.session_state[source_key] = (state.devices_version(), pu.catalogue_frame(devices))
    version, frame = st.session_state[source_key]
    edited = st.data_editor(
        frame,
        key=f"pu_catalogue_{version}",
        hide_index=True,
        num_rows="fixed",
        column_config={
            "kind": st.column_config.TextColumn("kind", disabled=True),
            "owned": st.column_config.NumberColumn("owned", disabled=True),
            "most to buy": st.column_config.NumberColumn(
                "most to buy", min_value=0, max_value=pu.MAX_MOST_TO_BUY, step=1, required=True
            ),
            "price/hour": st.column_config.NumberColumn("price/hour", min_value=0.0, format="%.2f", required=True),
        },
    )
    extra, prices = pu.read_catalogue(edited)
    if not any(prices.values()):
        st.info("Every price is 0: enter prices per hour above to compare costs (times are exact either way).")
    return extra, prices


def _candidates(problem, extra, prices, memory_model):
    """Every candidate inventory solved exactly (on the button; kept in the session): (key, options)."""
    devices = problem.devices
    method, method_options = memory_model.method_for("dp")
    key = (
        state.problem_key(problem),
        tuple(sorted(extra.items())),
        tuple(sorted(prices.items())),
        memory_model,
    )
    stored = st.session_state.get("_pu_options")
    total = pu.candidate_count(devices, extra)
    col_run, col_note = st.columns([1, 3], vertical_alignment="center")
    run = col_run.button("Solve every candidate", key="pu_run", type="primary")
    col_note.caption(f"{total:,} candidate inventories, each solved exactly with the DP.")
    if run:
        bar = st.progress(0.0, text="Solving the candidate inventories...")

        def progress(done: int, count: int) -> None:
            if count:
                bar.progress(done / count, text=f"Solved {done} of {count} candidate inventories")

        try:
            options = purchase_options(problem, extra, prices, method=method, progress=progress, **method_options)
        except PlacementError as exc:
            bar.empty()
            st.error(str(exc))
            st.stop()
        bar.empty()
        stored = (key, options)
        st.session_state["_pu_options"] = stored
    if stored is None:
        st.info("Press **Solve every candidate** to answer the questions below.")
        st.stop()
    if stored[0] != key:
        st.caption(
            "The graph, devices or the table changed since the candidates were solved: press "
            "Solve every candidate to refresh."
        )
    return stored


def _question(devices, options, feasible, stored_key):
    """The cheapest configuration for a speed, or the fastest for a budget; returns the answer (or None)."""
    st.subheader("Cheapest configuration for a speed, or the fastest for a budget")
    modes = {"time": f"Cheapest under a time per sample ({UNIT})", "budget": "Fastest within a price per hour"}
    state.init_widget("pu_mode", "time")
    mode = st.radio("Question", list(modes), format_func=modes.get, key="pu_mode", horizontal=True)
    fastest = min(o.time_per_sample for o in feasible)
    now = today(options, devices)
    answer = None
    if mode == "time":
        # Default target: today's time per sample (the question is "what reaches today's speed cheaper, or
        # faster"); comparisons allow the rounding of the 6 digits shown (TARGET_TOLERANCE).
        default_target = now.time_per_sample if now is not None and now.ok else fastest
        state.sync_widgets("pu_target_source", {"pu_target": float(f"{default_target:.6g}")}, stored_key)
        target = st.number_input(f"Time per sample at most ({UNIT})", min_value=0.0, format="%.6g", key="pu_target")
        answer = cheapest_under(options, target)
        if answer is None:
            st.warning(f"No candidate reaches {target:.6g} {UNIT} per sample; the fastest takes {fastest:.6g} {UNIT}.")
    else:
        state.init_widget("pu_budget", float(max(o.price_per_hour for o in feasible)))
        budget = st.number_input("Price per hour at most", min_value=0.0, format="%.4g", key="pu_budget")
        answer = fastest_within(options, budget)
        if answer is None:
            cheapest = min(o.price_per_hour for o in feasible)
            st.warning(
                f"No candidate with a plan costs at most {state.money(budget)} per hour; the cheapest costs "
                f"{state.money(cheapest)}."
            )
    if answer is not None:
        buy = " + ".join(f"{n} x {k.name}" for n, k in zip(answer.added, devices.accelerators) if n)
        per_million = answer.cost_per_sample * 1e6
        st.success(
            f"**{answer.label}**: {answer.time_per_sample:.6g} {UNIT} per sample, "
            f"{state.money(answer.price_per_hour)} per hour, {state.money(per_million)} per million samples. "
            + (f"Buy {buy}." if buy else "Nothing to buy: today's cards suffice."),
            icon=":material/check_circle:",
        )
    if now is not None and now.ok:
        st.caption(
            f"Today ({now.label}): {now.time_per_sample:.6g} {UNIT} per sample, {state.money(now.price_per_hour)} "
            f"per hour, {state.money(now.cost_per_sample * 1e6)} per million samples."
        )
    return answer


def _worth(problem, prices, memory_model) -> None:
    """What more cards of one kind are worth."""
    devices = problem.devices
    method, method_options = memory_model.method_for("dp")
    st.subheader("What more cards are worth")
    names = [k.name for k in devices.accelerators]
    col_kind, col_n = st.columns(2)
    state.init_widget("pu_worth_kind", names[0])
    if st.session_state["pu_worth_kind"] not in names:
        st.session_state["pu_worth_kind"] = names[0]
    kind = col_kind.selectbox("Kind", names, key="pu_worth_kind")
    state.init_widget("pu_worth_n", 1)
    more = col_n.number_input("How many more cards", min_value=0, max_value=pu.MAX_MORE, step=1, key="pu_worth_n")
    with st.spinner(f"Solving with {int(more)} more {kind}..."):
        try:
            worth = worth_of_more(problem, kind, int(more), prices=prices, method=method, **method_options)
        except PlacementError as exc:
            st.error(str(exc))
            worth = None
    if worth is not None:
        st.info(worth.sentence, icon=":material/add_shopping_cart:")


def _frontier(options, feasible, answer) -> None:
    """The cost and speed frontier of the candidates."""
    st.subheader("Cost and speed frontier")
    front = price_frontier(options)
    st.caption(
        f"{len(front)} of {len(feasible)} candidate inventories with a plan are on the frontier "
        f"(no other is both cheaper and faster); {len(options) - len(feasible)} have no plan that fits."
    )
    st.plotly_chart(viz.purchase_figure(options, front=front, answer=answer, time_unit=UNIT), key="pu_chart")
    with st.expander("Frontier", expanded=True):
        st.dataframe(pd.DataFrame(viz.purchase_rows(front, UNIT)), key="pu_front", hide_index=True)
    with st.expander(f"Every candidate ({len(options)})", expanded=False):
        st.dataframe(pd.DataFrame(viz.purchase_rows(options, UNIT)), key="pu_all", hide_index=True)


def main() -> None:
    """Draw the page."""
    st.title("Plan a purchase")
    transformer_view.purchase_section()  # the session's transformer scenario (ui/transformer.py)
    problem = state.current_problem()
    devices = problem.devices
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    state.cost_source_caption()
    memory_model = state.current_memory_model()
    st.caption(
        state.time_unit_note() + f" Prices are per hour per card in {state.current_currency()}; a configuration's "
        "price is that of all its cards and CPU cores, idle ones included (as on Devices and Placement); cost per "
        f"sample = price per hour x time per sample. Memory model: {memory_model.describe()} (Devices page)."
    )
    if not devices.accelerators:
        st.warning(
            "The inventory has no accelerator kind: add one on the Devices page (a kind you do not own "
            "yet can have count 0)."
        )
        st.stop()
    extra, prices = _catalogue(devices)
    stored = _candidates(problem, extra, prices, memory_model)
    options = stored[1]
    feasible = [o for o in options if o.ok]
    if not feasible:
        st.error("No candidate inventory has a plan that fits: allow more cards or cards with more memory.")
        st.stop()
    answer = _question(devices, options, feasible, stored[0])
    _worth(problem, prices, memory_model)
    _frontier(options, feasible, answer)


if __name__ != "__mp_main__":
    main()
