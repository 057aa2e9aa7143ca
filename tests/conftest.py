"""Shared fixtures: the chapter list, the strictly built book, a local HTTP
server for it, and headless Chromium (Debian's package, driven by playwright)."""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync", "--disable-quic"]
IN_CI = os.environ.get("CI") == "true"


def toc_files() -> list[str]:
    """Every file named in _toc.yml, in reading order, without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


def chapter_notebooks() -> list[Path]:
    return sorted((ROOT / "chapters").glob("*.ipynb"))


def require_chromium() -> str:
    """Path of Chromium; skip (fail in CI) with install advice when it is missing."""
    path = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    if path:
        return path
    message = ("Chromium is not installed, so the browser tests cannot run. Install "
               "Debian's package: `sudo apt-get update && sudo apt-get install -y "
               "chromium` (or set CHROMIUM=/path/to/chrome).")
    if IN_CI:
        pytest.fail(message + " CI=true, so this is a failure, not a skip.")
    pytest.skip(message)


@pytest.fixture(scope="session")
def built_book(testrun_uid) -> Path:
    """Build the book strictly once per test run, even if several pytest-xdist
    workers ask for it (a file lock makes the others wait); return _build/html."""
    from filelock import FileLock
    (ROOT / "_build").mkdir(exist_ok=True)
    done = ROOT / "_build" / f".built-{testrun_uid}"
    with FileLock(str(ROOT / "_build" / ".build.lock")):
        if not done.exists():
            for old in (ROOT / "_build").glob(".built-*"):
                old.unlink()
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py")],
                                  cwd=ROOT, capture_output=True, text=True)
            done.write_text(str(proc.returncode) + "\n" + proc.stdout + proc.stderr)
    returncode, _, output = done.read_text().partition("\n")
    if returncode != "0":
        tail = "\n".join(output.splitlines()[-60:])
        pytest.fail(f"the strict book build failed:\n{tail}", pytrace=False)
    return ROOT / "_build" / "html"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def book_server(built_book):
    """Serve the built book on 127.0.0.1 at a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium under playwright."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS,
                              headless=True)
        yield b
        b.close()
