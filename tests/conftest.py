"""Shared fixtures: the strictly built book, a local HTTP server for it, and
headless Chromium (Debian's package, driven by playwright). The book's files,
configuration, server and browser flags come from `tools.project`."""
from __future__ import annotations

import os

import pytest

from tools.project import CHROMIUM_ARGS, ROOT, find_chromium, serve

IN_CI = os.environ.get("CI") == "true"


def pytest_collection_modifyitems(config, items):
    """Longest work first: the browser surveys' tests (test_accessibility.py),
    then every xdist group, then the rest in collection order. With
    ``--dist loadgroup`` a group is one unit for one worker, and units are
    handed out in this order; a group left for the end (the catalogues'
    extraction, the JupyterLab tests) kept the other worker idle."""
    def rank(item) -> int:
        if item.nodeid.startswith("tests/test_accessibility.py"):
            return 0
        return 1 if item.get_closest_marker("xdist_group") else 2
    items.sort(key=rank)


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
    workers ask for it (tests/nbrun.py's build_once); return _build/html."""
    from nbrun import build_once
    ok, output = build_once(testrun_uid)
    if not ok:
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


@pytest.fixture(scope="session")
def surveyed(built_book, browser, testrun_uid):
    """surveyed(edition): tests/survey.py's visit of every page of one edition
    ("en" or "zh"), made once per test run and shared by the pytest-xdist
    workers through _build/.survey/ (tests/survey.py's `shared_survey`)."""
    from survey import shared_survey
    return lambda edition: shared_survey(browser, built_book, edition, testrun_uid)
