"""Meeting summary: the plan's layout, speed, memory, cost and what more cards are worth, on one screen.

The numbers are those of Devices and Placement for the same session (see :mod:`ui.meeting`).
"""

import streamlit as st

from ui import guard, meeting, state, transformer_view

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def main() -> None:
    """Draw the page."""
    st.title("Meeting summary")
    transformer_view.meeting_section()  # the session's transformer scenario (ui/transformer.py)
    problem = state.result_problem()
    with st.spinner("Solving..."):
        result = state.current_result(live=True)
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")
    state.cost_source_caption()
    if state.selected_plan() is not None:
        st.caption(f"Showing the picked plan: {state.selected_plan()[2]}.")
    if not result.ok or result.placement is None:
        st.error(f"**{result.status}** ({result.method}): {result.reason or 'no placement found'}")
        st.stop()
    samples, tokens, more = meeting.settings(problem.devices)
    summary = meeting.build_summary(problem, result, samples, tokens, more)
    meeting.headline(summary)
    meeting.download(summary)
    meeting.worth_section(summary)
    meeting.layout_section(summary)
    meeting.memory_section(summary)
    st.caption(state.time_unit_note() + f" Amounts in {state.current_currency()} (Devices page).")


if __name__ != "__mp_main__":
    main()
