"""The book's Sphinx extensions, loaded by `_config.yml` (``sphinx:
local_extensions``) as `tools.sphinx.<name>`: `download` (the .ipynb button
downloads), `a11y` (Chinese font subset, accessible names, favicon), `i18n`
(what the Chinese edition needs) and `math` (KaTeX errors fail the build)."""
