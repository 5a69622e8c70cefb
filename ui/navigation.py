"""The app's pages, in sidebar order: one list that ``app.py`` (navigation) and the home page (links) read."""

#: The pages in sidebar order: (file, title, icon, url path, what it shows); the first is the default page.
PAGES = (
    ("app_pages/01_Home.py", "Home", ":material/home:", "home", "what the tool does, the current graph and devices"),
    (
        "app_pages/02_Graph.py",
        "Graph",
        ":material/account_tree:",
        "Graph",
        "choose a sample or upload a graph; see its DAG, nodes and statistics",
    ),
    (
        "app_pages/03_Devices.py",
        "Devices",
        ":material/memory:",
        "Devices",
        "accelerators, CPU cores, memory, bandwidth and speed, presets, inventory",
    ),
    (
        "app_pages/04_Placement.py",
        "Placement",
        ":material/splitscreen:",
        "Placement",
        "the optimal split, per-device load and memory, downloads",
    ),
    (
        "app_pages/05_Meeting_summary.py",
        "Meeting summary",
        ":material/summarize:",
        "Meeting_summary",
        "one printable screen: layout, time per batch, memory, cost, what more cards are worth",
    ),
    (
        "app_pages/06_Timeline.py",
        "Timeline",
        ":material/timeline:",
        "Timeline",
        "the pipeline schedule and memory over time",
    ),
    (
        "app_pages/07_Tradeoffs.py",
        "Tradeoffs",
        ":material/show_chart:",
        "Tradeoffs",
        "time per sample against devices, memory and cost",
    ),
    (
        "app_pages/08_Compare.py",
        "Compare",
        ":material/compare_arrows:",
        "Compare",
        "every method on the current graph and devices",
    ),
    (
        "app_pages/09_Purchase.py",
        "Plan a purchase",
        ":material/shopping_cart:",
        "Purchase",
        "the cheapest configuration for a speed, what more cards are worth, the cost/speed frontier",
    ),
    (
        "app_pages/10_Uncertainty.py",
        "Uncertainty",
        ":material/casino:",
        "Uncertainty",
        "latency error bars: Monte Carlo of time per sample, out-of-memory risk and bottlenecks",
    ),
    (
        "app_pages/11_Plan_view.py",
        "Plan view",
        ":material/dashboard:",
        "Plan_view",
        "graph, loads, Gantt and memory of one plan, linked; compare two plans",
    ),
    (
        "app_pages/12_Parallel_plan.py",
        "Parallel plan",
        ":material/grid_view:",
        "Parallel_plan",
        "data x tensor x pipeline parallelism with recomputation, up to 1024 devices (Piper's model)",
    ),
    (
        "app_pages/13_Teaching.py",
        "Teaching",
        ":material/school:",
        "Teaching",
        "step through the DP, why a plan is optimal, beat the solver",
    ),
)


def page_file(title: str) -> str:
    """The file of the page titled ``title`` (``"app_pages/03_Devices.py"`` for ``"Devices"``).

    Tests and scripts find pages by title, so renumbering the files breaks nothing. Raises
    ``KeyError`` naming the known titles for an unknown one.
    """
    for path, name, *_ in PAGES:
        if name == title:
            return path
    raise KeyError(f"no page titled {title!r}; pages: {', '.join(page[1] for page in PAGES)}")
