"""The glossary: `terms` reads glossary.md and finds where chapters use (and
link) its terms; `python -m tools.glossary` lists the first uses that are not
links yet, and with `--write` links them (`__main__`)."""
