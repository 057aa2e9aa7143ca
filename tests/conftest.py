"""Shared fixtures: the strictly built book, a local HTTP server for it, and
headless Chromium (Debian's package, driven by playwright). The book's files,
configuration, server and browser flags come from `tools.project`."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.project import CHROMIUM_ARGS, ROOT, find_chromium, serve

IN_CI = os.environ.get("CI") == "true"


def require_chromium() -> str:
    """Path of Chromium; skip (fail in CI) with install advice when it is missing."""
    path = find_chromium()
    if path:
        return path
    message = ("Chromium is not installed, so the browser tests cannot run. Install "
               "Debian's package: `sudo apt-get update && sudo apt-get install -y "
               "chromium` (or set CHROMIUM=/path/to/chrome).")
    if IN_CI:
        pytest.fail(message + " CI=true, so this is a failure, not a skip.")
    pytest.skip(message)


@pytest.fixture(scope="session")
def built_book(testrun_uid):
    """Build the book strictly once per test run, even if several pytest-xdist
    workers ask for it (a file lock makes the others wait); return _build/html."""
    from filelock import FileLock
    (ROOT / "_build").mkdir(exist_ok=True)
    done = ROOT / "_build" / f".built-{testrun_uid}"
    with FileLock(str(ROOT / "_build" / ".build.lock")):
        if not done.exists():
            for old in (ROOT / "_build").glob(".built-*"):
                old.unlink()
            proc = subprocess.run([sys.executable, "-m", "tools.build_book", "--all"],
                                  cwd=ROOT, capture_output=True, text=True)
            done.write_text(str(proc.returncode) + "\n" + proc.stdout + proc.stderr)
    returncode, _, output = done.read_text().partition("\n")
    if returncode != "0":
        tail = "\n".join(output.splitlines()[-60:])
        pytest.fail(f"the strict book build failed:\n{tail}", pytrace=False)
    return ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def book_server(built_book):
    """Serve the built book on 127.0.0.1 at a free port; yields the base URL."""
    with serve(built_book) as (url, _):
        yield url


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
