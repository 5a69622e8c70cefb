"""Entry point of the what-if explorer: page config, the default graph and the navigation, once.

Run with ``streamlit run app.py``. The pages live in ``app_pages/`` and are listed explicitly in
:data:`ui.navigation.PAGES` and shown through ``st.navigation``. The folder is deliberately not named ``pages/``:
Streamlit auto-discovers a ``pages/`` folder for any URL opened directly (a shared link), and that
mode skips this file (no page config, no named navigation). Pages neither set the page config nor
load the default graph; each still guards itself (``ui.guard.run_page``).
"""

import streamlit as st

from ui import guard, startup
from ui.navigation import PAGES


def main() -> None:
    """Set the page config, load the default graph, and run the page picked in the sidebar."""
    st.set_page_config(page_title="Device placement explorer", page_icon=":material/account_tree:", layout="wide")
    guard.run(_route)  # one-line errors on every page (and while loading the graph), never a traceback


#: Headline numbers and their labels wrap instead of being cut with an ellipsis (issue 26: "18.376..."
#: at 1400 px, "18...." at 1024 px); a style-only st.html takes no room on the page.
_NO_CLIPPING = """<style>
[data-testid="stMetricValue"] { font-size: clamp(1.4rem, 2.6vw, 2.25rem) !important; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] p {
  white-space: normal !important; text-overflow: clip !important; overflow-wrap: break-word;
}
</style>"""


def _route() -> None:
    """Load the default graph (or the one the link names) and run the page picked in the sidebar."""
    st.html(_NO_CLIPPING)
    startup.ensure_default_graph()
    pages = [
        st.Page(path, title=title, icon=icon, url_path=None if first else url, default=first)
        for first, (path, title, icon, url, _) in zip([True] + [False] * len(PAGES), PAGES)
    ]
    st.navigation(pages).run()


# Process-pool workers (sweeps) re-import the running script as __mp_main__: draw nothing there.
if __name__ != "__mp_main__":
    main()
