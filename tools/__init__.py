"""The book's tools, by role; run each from the repository root as a module.

- `tools.build`: the strict HTML build of both editions (`python -m tools.build`)
  and, with `--translations`, the update of the Chinese catalogues;
- `tools.bench`: what the book costs to build, run and read (`python -m tools.bench`);
- `tools.glossary`: the glossary's reader and the linker of first uses
  (`python -m tools.glossary`);
- `tools.sphinx`: the book's Sphinx extensions (`_config.yml` loads them);
- `tools.project`: what tools and tests share (paths, configuration, the
  local server and Chromium).

The tests import them as the package `tools` (pytest's `pythonpath = ["."]`
in pyproject.toml).
"""
