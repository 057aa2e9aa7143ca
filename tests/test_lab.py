"""Run the notebooks the way a learner does: JupyterLab in Chromium.

Starts JupyterLab on 127.0.0.1 with a token and fresh settings, opens a
chapter, waits for the kernel to be idle, runs all cells from the Run menu
and checks that the kernel's outputs (text and the figure) appear.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tools.project import ROOT

pytestmark = [pytest.mark.xdist_group("lab"), pytest.mark.slow]

CHAPTER = "chapters/01_looking_things_up.ipynb"
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle'] >> visible=true"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1; yields (base_url, token)."""
    home = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"))
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    # render every cell (JupyterLab 4 otherwise detaches cells scrolled out of view)
    notebook = home / "settings" / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    # and never save: the notebooks opened are the book's own sources (a slow
    # run once lived long enough for JupyterLab to autosave kernel metadata
    # into two chapters)
    docmanager = home / "settings" / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
    log = open(home / "lab.log", "w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter-lab")), "--no-browser",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
         "--ServerApp.port_retries=0"] + (["--allow-root"] if os.geteuid() == 0 else []),
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("JupyterLab did not start:\n" + (home / "lab.log").read_text())
            time.sleep(0.5)
    yield base, token
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def sessions(lab) -> list[dict]:
    """The Jupyter server's sessions (its REST API)."""
    base, token = lab
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
        return json.load(r)


def kernel_connected(lab, path: str) -> bool:
    """The Jupyter server has a session for `path` whose kernel is idle and
    has a client connected (the page's)."""
    return any(s.get("path", "").endswith(path) and s.get("kernel")
               and s["kernel"].get("execution_state") == "idle"
               and s["kernel"].get("connections", 0) >= 1 for s in sessions(lab))


def open_notebook(browser, lab, path: str):
    """Open `path` in JupyterLab; returns (context, page, blocked requests)."""
    base, token = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    blocked: list[str] = []

    def route(r):
        if urlparse(r.request.url).hostname == "127.0.0.1" or \
                r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    # a fresh workspace per test, so tabs from an earlier test are not restored
    workspace = secrets.token_hex(4)
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?token={token}")
    page.wait_for_selector(".jp-Notebook", timeout=90_000)
    # JupyterLab may ask which kernel to start (under load it did, even after
    # the toolbar showed the kernel idle); take the notebook's own (python3).
    # The kernel is ready when the server has it idle with the page connected
    # to it. (The test used to wait 10 s for a dialog that mostly never came,
    # leaving a core idle.)
    select = page.locator(".jp-Dialog button:has-text('Select')")
    deadline = time.monotonic() + 90
    while not kernel_connected(lab, path):
        assert time.monotonic() < deadline, \
            f"no kernel connected to {path} in 90 s; sessions: {sessions(lab)}"
        if select.is_visible():
            select.click()
        time.sleep(0.2)
    page.wait_for_selector(IDLE, timeout=90_000)
    return context, page, blocked


def run_all_cells(page, timeout_ms: int = 120_000) -> None:
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    # the kernel goes busy, then idle again when the last cell has finished
    page.wait_for_function(
        """() => { const cells = [...document.querySelectorAll('.jp-CodeCell')];
                   return cells.length > 0 && cells.every(c => {
                     const p = c.querySelector('.jp-InputPrompt');
                     return p && /\\[\\d+\\]/.test(p.textContent); }); }""",
        timeout=timeout_ms)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


def test_chapter_runs_in_jupyterlab_and_shows_kernel_output(browser, lab):
    context, page, blocked = open_notebook(browser, lab, CHAPTER)
    try:
        try:
            run_all_cells(page)
        except Exception:
            page.screenshot(path=str(ROOT / "_build" / "lab-failure.png"))
            raise
        outputs = page.locator(".jp-OutputArea-output")
        assert outputs.count() > 0, "no output appeared after Run All Cells"
        text = " ".join(outputs.all_inner_texts())
        assert "KeyError" in text and "10.0" in text, text[:500]
        images = page.locator(".jp-OutputArea-output img")
        assert images.count() >= 1, "the figure did not appear"
        assert images.first.evaluate("i => i.naturalWidth") > 0
        errors = page.locator(".jp-OutputArea-output[data-mime-type*='stderr'],"
                              ".jp-OutputArea-output[data-mime-type*='error']")
        assert errors.count() == 0, errors.all_inner_texts()
        print(f"\n[lab] {CHAPTER}: {outputs.count()} outputs, {images.count()} figure(s), "
              f"{len(blocked)} requests outside 127.0.0.1 blocked")
    finally:
        context.close()


@pytest.mark.parametrize("chapter, name", [("chapters/05_scaling.ipynb", "d_k"),
                                           ("chapters/11_positions.ipynb", "offset")])
def test_explorer_slider_updates_the_figure_live_in_jupyterlab(browser, lab, chapter, name):
    context, page, blocked = open_notebook(browser, lab, chapter)
    try:
        try:
            run_all_cells(page)
            widget = page.locator(".jp-OutputArea-output .widget-vbox").first
            widget.wait_for(timeout=60_000)
        except Exception:
            page.screenshot(path=str(ROOT / "_build" / "lab-failure.png"))
            raise
        widget.scroll_into_view_if_needed()
        image = widget.locator("img").first
        label = widget.locator(".widget-readout").first
        image.wait_for(timeout=30_000)
        before_label = label.inner_text()
        before_pixels = image.screenshot()
        handle = widget.locator(".noUi-handle").first
        handle.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([el, old]) => el.innerText !== old",
                               arg=[label.element_handle(), before_label], timeout=30_000)
        # the kernel redraws the figure; wait until the picture itself changes
        deadline = time.monotonic() + 30
        while image.screenshot() == before_pixels:
            assert time.monotonic() < deadline, "the figure did not change after the slider moved"
            time.sleep(0.3)
        print(f"\n[lab] {name} explorer ({chapter}): slider {before_label} -> "
              f"{label.inner_text()}, "
              f"figure redrawn by the kernel; {len(blocked)} requests outside 127.0.0.1")
    finally:
        context.close()
