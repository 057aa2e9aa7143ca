"""The book's tools (build, bench, glossary links, Sphinx extensions).

Run them from the repository root as modules (`python -m tools.build_book`);
the tests import them as the package `tools` (pytest's `pythonpath = ["."]`
in pyproject.toml). What tools and tests share lives in `tools.project`.
"""
