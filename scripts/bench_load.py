"""Many browser sessions at once against ``streamlit run app.py``: the same answers, the memory given back.

Starts the app headless on a free port, then for each N (default 1, 5, 10, 20) opens N headless Chromium pages
at once, each on a shared link to the Placement page with the contiguous integer program (``ip``, 30 s limit) on
``throughput/layer/bert24_training`` and its own accelerator count (2 to 6), and waits for each page's Status.
Per round it prints: the status of every session, p50 / p95 seconds from opening the page to the result, CPU
seconds per session of the server process alone and of the server with its workers, and the peak resident
memory of the server tree. After the last round it closes every page and prints the tree's memory at the start
and 60 s later (``--settle``). ``--hostile`` adds a round that uploads a generated 200,000-node graph (42 MB,
under the upload cap) on the Graph page and records the error shown and the tree's peak memory. "The start" is the tree after the first session,
once its resident memory holds still for 5 s (the workers warm up in the background).

Usage: ``python scripts/bench_load.py [--sessions 1 5 10 20] [--settle 60] [--hostile]`` (Linux: reads /proc;
needs Playwright and /usr/bin/chromium). It prints the machine's load average beside each round: on a shared
machine the numbers move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAPH = "sample:throughput/layer/bert24_training"
CHROMIUM = "/usr/bin/chromium"
TICK = os.sysconf("SC_CLK_TCK")


def _devices(count: int) -> str:
    kind = {"name": "accelerator", "count": count, "memory": 17185374208.0, "speed": 1.0, "bandwidth": 1.0}
    plain = {"accelerators": [kind | {"price_per_hour": 0.0}], "bandwidth": 1.0, "cpu_bandwidth": None}
    return json.dumps(plain | {"cpu_price_per_hour": 0.0, "cpus": 1, "overlap": False})


def _link(base: str, count: int) -> str:
    query = {"graph": GRAPH, "devices": _devices(count), "method": "ip", "limit": "30"}
    return f"{base}/Placement?{urllib.parse.urlencode(query)}"


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _tree(root: int) -> list[int]:
    """``root`` and every live descendant (by parent links in /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def cpu_seconds(root: int) -> tuple[float, float]:
    """CPU seconds of ``root`` alone and of its tree (live descendants, plus the children it has reaped)."""
    own = tree = 0.0
    for pid in _tree(root):
        fields = _stat(pid)
        if fields is None:
            continue
        used = (int(fields[11]) + int(fields[12])) / TICK
        tree += used
        if pid == root:
            own = used
            tree += (int(fields[13]) + int(fields[14])) / TICK
    return own, tree


def rss_mb(root: int) -> float:
    """Resident memory of ``root``'s tree in MB."""
    total = 0
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e6


def quiet_rss_mb(root: int, window: float = 5.0, tolerance_mb: float = 2.0, limit: float = 90.0) -> float:
    """The tree's resident MB once it changes by less than ``tolerance_mb`` over ``window`` s (at most ``limit`` s):
    the solve workers warm up (imports, kernels) in the background after they start."""
    deadline = time.monotonic() + limit
    before = rss_mb(root)
    while time.monotonic() < deadline:
        time.sleep(window)
        now = rss_mb(root)
        if abs(now - before) < tolerance_mb:
            return now
        before = now
    return before


def breakdown(root: int) -> str:
    """Resident MB of the server process and of each of its descendants (the worker processes)."""
    sizes = []
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/statm") as handle:
                sizes.append(int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6)
        except (OSError, ValueError, IndexError):
            continue
    if not sizes:
        return "gone"
    return f"server {sizes[0]:.0f} MB, workers " + ", ".join(f"{mb:.0f}" for mb in sizes[1:]) + " MB"


class PeakWatch:
    """The tree's peak resident memory while in use (sampled every 0.5 s in a thread)."""

    def __init__(self, root: int) -> None:
        self.root, self.peak, self.stop = root, 0.0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            self.peak = max(self.peak, rss_mb(self.root))

    def __enter__(self) -> PeakWatch:
        self.peak = rss_mb(self.root)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def start_server(log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true", f"--server.port={port}"]
    command += ["--server.address=127.0.0.1", "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().decode().strip() == "ok":
                    return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"the server did not become healthy: {log.read_text()[-2000:]}")


def _status(page) -> str | None:
    """The Placement page's Status metric, an error box's first words, or None while neither is shown."""
    for metric in page.locator('[data-testid="stMetric"]').all():
        text = metric.inner_text()
        if text.startswith("Status"):
            return text.split("\n")[-1].strip()
    errors = page.locator('[data-testid="stAlertContentError"]')
    if errors.count():
        return "error: " + errors.first.inner_text()[:80]
    return None


def run_round(browser, url: str, n: int, server: int, timeout: float) -> dict:
    """Open ``n`` pages at once and wait for each one's status."""
    cpu_before = cpu_seconds(server)
    with PeakWatch(server) as watch:
        contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(n)]
        pages, opened = [], []
        for i, context in enumerate(contexts):
            page = context.new_page()
            opened.append(time.monotonic())
            page.goto(_link(url, 2 + i % 5), wait_until="commit")
            pages.append(page)
        done: dict[int, tuple[float, str]] = {}
        deadline = time.monotonic() + timeout
        while len(done) < n and time.monotonic() < deadline:
            for i, page in enumerate(pages):
                if i not in done and (status := _status(page)) is not None:
                    done[i] = (time.monotonic() - opened[i], status)
            time.sleep(0.2)
        for context in contexts:
            context.close()
    cpu_after = cpu_seconds(server)
    times = sorted(seconds for seconds, _ in done.values())
    statuses = [done[i][1] if i in done else "no answer" for i in range(n)]
    return {
        "n": n,
        "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
        "p50": statistics.median(times) if times else None,
        "p95": times[min(len(times) - 1, int(0.95 * len(times)))] if times else None,
        "server_cpu": (cpu_after[0] - cpu_before[0]) / n,
        "tree_cpu": (cpu_after[1] - cpu_before[1]) / n,
        "peak_mb": watch.peak,
        "load": os.getloadavg()[0],
    }


def hostile_round(browser, url: str, server: int) -> dict:
    """Upload a generated 200,000-node graph on the Graph page; the error shown and the tree's peak memory."""
    nodes = [
        {"name": f"block{i // 8}/op{i % 8}", "id": i, "supportedOnFpga": 1, "cpuLatency": 1.5, "fpgaLatency": 0.25}
        | {"isBackwardNode": 0, "colorClass": i, "size": 1000.0}
        for i in range(200_000)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.5} for i in range(199_999)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "huge.json"
        path.write_text(json.dumps({"maxFPGAs": 4, "maxCPUs": 1, "nodes": nodes, "edges": edges}))
        size_mb = path.stat().st_size / 1e6
        with PeakWatch(server) as watch:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(f"{url}/Graph")
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(path))
            started = time.monotonic()
            error = page.locator('[data-testid="stAlertContentError"]').first
            error.wait_for(timeout=120_000)
            took, text = time.monotonic() - started, error.inner_text()
            context.close()
    return {"size_mb": size_mb, "seconds": took, "error": text[:160], "peak_mb": watch.peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="*", default=[1, 5, 10, 20])
    parser.add_argument("--settle", type=float, default=60.0, help="seconds after the last page closes")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a round waits for its answers")
    parser.add_argument("--hostile", action="store_true", help="add the 200,000-node upload round")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - only for this benchmark

    with tempfile.TemporaryDirectory() as folder:
        server, url = start_server(Path(folder) / "server.log")
        try:
            with sync_playwright() as play:
                browser = play.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                warm = run_round(browser, url, 1, server.pid, args.timeout)  # the first session warms the server
                start_mb = quiet_rss_mb(server.pid)  # once the workers have finished warming up
                print(f"warm-up session: {warm['statuses']}, {warm['p50']:.1f} s; server tree {start_mb:.0f} MB")
                print(f"  at the start: {breakdown(server.pid)}")
                print("| N | statuses | p50 s | p95 s | server CPU s/session | tree CPU s/session | peak MB | load |")
                print("|---|---|---|---|---|---|---|---|")
                for n in args.sessions:
                    row = run_round(browser, url, n, server.pid, args.timeout)
                    statuses = ", ".join(f"{count} {status}" for status, count in row["statuses"].items())
                    p50 = f"{row['p50']:.1f}" if row["p50"] is not None else "-"
                    p95 = f"{row['p95']:.1f}" if row["p95"] is not None else "-"
                    print(
                        f"| {n} | {statuses} | {p50} | {p95} | {row['server_cpu']:.2f} | {row['tree_cpu']:.2f} "
                        f"| {row['peak_mb']:.0f} | {row['load']:.1f} |",
                        flush=True,
                    )
                if args.hostile:
                    hostile = hostile_round(browser, url, server.pid)
                    print(
                        f"hostile upload ({hostile['size_mb']:.1f} MB): error shown {hostile['seconds']:.1f} s after the "
                        f"file was set, server tree peak {hostile['peak_mb']:.0f} MB: {hostile['error']!r}"
                    )
                browser.close()
            closed_mb = rss_mb(server.pid)
            time.sleep(args.settle)
            settled_mb = rss_mb(server.pid)
            change = (settled_mb - start_mb) / start_mb
            print(
                f"server tree: {start_mb:.0f} MB at the start, {closed_mb:.0f} MB when the last page closed, "
                f"{settled_mb:.0f} MB {args.settle:g} s later ({change:+.0%} of the start)"
            )
            print(f"  {args.settle:g} s later: {breakdown(server.pid)}")
        finally:
            server.terminate()
            server.wait(timeout=120)


if __name__ == "__main__":
    main()
