"""Helpers for the real-browser test: a throwaway Jupyter server and a headless Chromium.

The server runs this interpreter (so the venv's kernel and packages), listens on 127.0.0.1
on a free port, and keeps every piece of configuration, data, runtime state and settings in
a temporary directory so the user's own Jupyter setup is neither read nor touched.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = 120.0  # seconds; JupyterLab's first start on 2 cores takes 20-40 s

# Front-end settings for a quiet, deterministic page: no news/update toasts, the
# notebook's kernel started without a "Select Kernel" dialog, and every cell attached
# to the DOM (windowing would detach the cells scrolled out of view).
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
    },
    "@jupyterlab/apputils-extension/sessionDialogs.jupyterlab-settings": {
        "skipKernelRestartDialog": True,
    },
}


@dataclass
class JupyterServer:
    app: str  # "lab" or "notebook"
    base_url: str  # http://127.0.0.1:PORT
    token: str
    root_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def notebook_url(self, name: str) -> str:
        path = "lab/tree" if self.app == "lab" else "notebooks"
        reset = "&reset" if self.app == "lab" else ""  # ignore any saved workspace
        return f"{self.base_url}/{path}/{name}?token={self.token}{reset}"

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_profile(home: Path) -> dict[str, str]:
    """Create the temporary Jupyter directories; return the environment that points at them."""
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_DATA_DIR": home / "data",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "workspaces",
        "IPYTHONDIR": home / "ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    for name, values in USER_SETTINGS.items():
        target = dirs["JUPYTERLAB_SETTINGS_DIR"] / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    # A python3 kernelspec that names this interpreter, on JUPYTER_PATH, which is searched
    # before every other place: no other python3 kernel (system, user, venv) can be picked.
    kernel = home / "path" / "kernels" / "python3"
    kernel.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    (kernel / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOKEN"}
    env.update({k: str(v) for k, v in dirs.items()})
    env["JUPYTER_PATH"] = str(home / "path")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _server_command(app: str, port: int, token: str, root_dir: Path) -> list[str]:
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    root_flag = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    # Nothing may go to the network: no news feed, no update check, no PyPI listing
    # (Notebook 7 has none of these traits and refuses unknown ones).
    offline = [
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ] if app == "lab" else []  # fmt: skip
    return [
        sys.executable, "-m", module, *root_flag, *offline,
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.terminals_enabled=False",
        "--MappingKernelManager.default_kernel_name=python3",
    ]  # fmt: skip


def _wait_until_up(server: JupyterServer, timeout: float) -> None:
    status = f"{server.base_url}/api/status?token={server.token}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"jupyter {server.app} exited with {server.process.returncode}:\n"
                + server.log_tail()
            )
        try:
            with urllib.request.urlopen(status, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise TimeoutError(
        f"jupyter {server.app} did not answer in {timeout:.0f} s:\n" + server.log_tail()
    )


def wait_for_kernel(server: JupyterServer, timeout: float = START_TIMEOUT) -> None:
    """Wait until a kernel is idle with a browser connected (the notebook page is ready)."""
    url = f"{server.base_url}/api/kernels?token={server.token}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                kernels = json.load(response)
        except urllib.error.HTTPError as exc:
            # jupyter_server answers 500 while a kernel is half started (its last_activity
            # is still None): ask again.
            if exc.code < 500:
                raise
            time.sleep(0.5)
            continue
        if any(k["execution_state"] == "idle" and k["connections"] > 0 for k in kernels):
            return
        time.sleep(0.5)
    raise TimeoutError(f"no kernel became ready in {timeout:.0f} s:\n" + server.log_tail())


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (it shuts its kernels down), then kill its process group."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # two SIGINTs: jupyter's "shut down?" prompt
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
    # Kernels run in the server's session (started with start_new_session): end stragglers.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@contextmanager
def jupyter_server(
    app: str, root_dir: Path, home: Path, timeout: float = START_TIMEOUT
) -> Iterator[JupyterServer]:
    """Run ``jupyter lab`` or ``jupyter notebook`` on ``root_dir`` until the block ends."""
    env = _write_profile(home)
    port = free_port()
    token = os.urandom(16).hex()
    log_path = home / f"jupyter-{app}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            _server_command(app, port, token, root_dir),
            cwd=root_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = JupyterServer(app, f"http://127.0.0.1:{port}", token, root_dir, process, log_path)
    try:
        _wait_until_up(server, timeout)
        yield server
    finally:
        _stop(process)


def execute_notebook(path: Path, timeout: int = 180) -> None:
    """Run a notebook in place with nbclient in a kernel of this interpreter, then save it.

    No widget state is stored in the file (``store_widget_state=False``), as JupyterLab
    and Notebook 7 save by default; the kernel is shut down afterwards.
    """
    import tempfile

    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as specs:
        kernel_dir = Path(specs) / "oxe-test-python"
        kernel_dir.mkdir()
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
        (kernel_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        km = KernelManager(
            kernel_name="oxe-test-python",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[specs], ensure_native_kernel=False),
        )
        client = NotebookClient(
            nb, km=km, timeout=timeout, allow_errors=False, store_widget_state=False,
            resources={"metadata": {"path": str(path.parent)}},
        )  # fmt: skip
        try:
            client.execute()
        finally:
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    # The file names the usual kernel, as a notebook saved from the front end does.
    nb.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python",
    }  # fmt: skip
    nbformat.write(nb, path)


def trust_notebook(path: Path, home: Path) -> None:
    """Sign a notebook for the server profile in ``home`` (see :func:`jupyter_server`).

    A notebook the user saved from JupyterLab or Notebook 7 is trusted (signed with the
    user's secret); one written by nbclient is not until signed like this.
    """
    import nbformat
    from nbformat.sign import NotebookNotary

    data_dir = home / "data"  # JUPYTER_DATA_DIR of the server started with this home
    data_dir.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(path, as_version=4)
    NotebookNotary(data_dir=str(data_dir)).sign(nb)


# -- driving the notebook page ---------------------------------------------------------
ALL_CELLS_RAN = """() => {
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .map(e => e.textContent.trim());
  return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""


class Steps:
    """Screenshots numbered in the order taken, so a failure shows how far the test got."""

    def __init__(self, page: Any, directory: Path) -> None:
        self.page = page
        self.directory = directory
        self.count = 0

    def shot(self, name: str, widget: Any = None, focus: Any = None) -> None:
        """The page (scrolled to ``focus``), and the ``widget`` alone when given."""
        self.count += 1
        path = self.directory / f"{self.count:02d}-{name}.png"
        if focus is not None:
            focus.scroll_into_view_if_needed()
        self.page.screenshot(path=str(path))
        if widget is not None:
            widget.screenshot(path=str(path.with_name(path.stem + "-widget.png")))


def run_all_cells(page: Any) -> None:
    """Run → Run All Cells, as a user would; accept a "Select Kernel" dialog if one shows."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    started = page.locator(".jp-CodeCell .jp-InputArea-prompt", has_text=re.compile(r"\[[\d*]+\]"))
    accept = page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True)
    started.or_(accept).first.wait_for()
    if accept.is_visible():
        accept.click()


PAGE_TIMEOUT_MS = 60_000  # one step in the page (a click, a drawing)
RUN_TIMEOUT_MS = 150_000  # every cell of a test notebook, first kernel start included


def set_dark_theme(page: Any) -> None:
    """Settings → Theme → JupyterLab Dark, as a user would, and wait until it applies."""
    page.locator(".lm-MenuBar-item", has_text="Settings").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel", has_text="JupyterLab Dark").first.click()
    page.wait_for_function(
        "() => document.body.dataset.jpThemeLight === 'false'", timeout=PAGE_TIMEOUT_MS
    )


def check_notebook_in_browser(
    browser: Any,
    tmp_path: Path,
    notebook: Path,
    artifacts: Path,
    check: Any,
    app: str = "lab",
) -> None:
    """Open ``notebook`` (already written under ``tmp_path / "root"``) in JupyterLab or
    Notebook 7 at 1400×900, run every cell as a user would, then ``check(page, steps,
    figures)``. Screenshots (also of a failure), the browser console, the figures the
    check records and the server's log go to ``artifacts`` (emptied first)."""
    import shutil

    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    with jupyter_server(app, notebook.parent, tmp_path / "home") as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.add_locator_handler(
            page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True),
            lambda button: button.click(),
        )
        console: list[str] = []
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        steps = Steps(page, artifacts)
        figures: dict[str, Any] = {}
        try:
            page.goto(server.notebook_url(notebook.name))
            page.wait_for_selector(".jp-Notebook .jp-CodeCell")
            wait_for_kernel(server)
            run_all_cells(page)
            page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_TIMEOUT_MS)
            check(page, steps, figures)
        except Exception:
            steps.shot("failure")
            raise
        finally:
            (artifacts / "browser-console.log").write_text("\n".join(console), encoding="utf-8")
            (artifacts / "figures.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
            page.close()
            (artifacts / f"jupyter-{app}.log").write_text(server.log_tail(200_000))


def write_notebook(path: Path, sources: list[str]) -> Path:
    """A notebook of code cells with these sources, never run, on the default kernel."""
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": source, "outputs": [],
             "execution_count": None}
            for source in sources
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                    "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


#: The fill graphviz wrote for the box of the node named ``name`` in an explorer.
FILL_OF = """([explorer, name]) => {
  const g = [...explorer.querySelectorAll('.oxe-graph-stage g.oxe-kind-node')]
    .find(g => g.querySelector('title').textContent.split('\\n')[0] === name);
  if (!g) return null;
  const shape = g.querySelector('path, polygon');
  return shape ? shape.getAttribute('fill') : null;
}"""
