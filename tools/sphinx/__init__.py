"""The book's Sphinx extensions, loaded by `_config.yml` (``sphinx:
local_extensions``) as `tools.sphinx.<name>`: `download` (the .ipynb button
downloads), `a11y` (Chinese font subset, accessible names, favicon), `i18n`
(what the Chinese edition needs), `math` (KaTeX errors fail the build) and
`executed` (the pages that are not notebooks are read while the notebooks
execute)."""
