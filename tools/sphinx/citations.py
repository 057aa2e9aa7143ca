"""Sphinx extension: author-year citations that tell apart two works by the
same authors in the same year, in both editions.

sphinxcontrib-bibtex's ``author_year`` reference style prints the year
field as it is, so Liu et al.'s two 2020 papers were both "Liu et al.,
2020", and so were the English and Chinese d2l releases (Zhang et al.,
2022). Writing ``year = {2020a}`` in references.bib fixed the text but broke
the alpha labels of the references page, which take the last two characters
of the year ("LJH+0a"). Here references.bib keeps plain years, and the
suffixes are computed once the bib files are read:

- works whose in-text author part (as the reference style renders it,
  "Liu et al.") and year are the same get "a", "b", ... in the order the
  references page lists them (the bibliography style's sorting);
- the reference style (``bibtex_reference_style``) and the bibliography
  style (``bibtex_default_style``) are both replaced by subclasses,
  registered as plugins the documented way (sphinxcontrib-bibtex's and
  pybtex's ``register_plugin``), that format each such entry with its year
  suffixed; labels are still made from the plain year ("LJH+20").

The bibliography style also prints a misc entry's date once: when its
``howpublished`` already gives the full date ("Medium, 1 March 2023"), the
year is not repeated after it.

:func:`year_suffixes` is the rule itself; tests/test_apparatus.py checks it
and the built pages. Runs after tools/sphinx/i18n_ui.py has set the Chinese
edition's styles, which these subclass.
"""
from __future__ import annotations

from dataclasses import dataclass
from string import ascii_lowercase

#: entry key -> its year with the suffix ("2020a"); filled at builder-inited
YEARS: dict[str, str] = {}

REFERENCING = "sphinxcontrib.bibtex.style.referencing"
FORMATTING = "pybtex.style.formatting"


def author_part(entry, reference_style) -> str:
    """The author part of an entry's in-text citation ("Liu et al.")."""
    template = reference_style.person.author_or_editor_or_title(full=False)
    return template.format_data({"entry": entry, "style": reference_style}).render_as("text")


def year_suffixes(entries, reference_style, bibliography_style) -> dict[str, str]:
    """key -> suffixed year, for the entries whose author part and year
    collide; the suffixes follow `bibliography_style`'s sorting."""
    groups: dict[tuple[str, str], list] = {}
    for entry in bibliography_style.sort(list(entries)):
        year = entry.fields.get("year")
        if year:
            groups.setdefault((author_part(entry, reference_style), year), []).append(entry)
    years = {}
    for (_, year), group in groups.items():
        if len(group) > 1:
            for letter, entry in zip(ascii_lowercase, group, strict=False):  # a-z suffice
                years[entry.key] = year + letter
    return years


def with_fields(entry, **changed):
    """A copy of a pybtex entry with some fields changed (None: dropped)."""
    from pybtex.database import Entry
    fields = {k: v for k, v in {**entry.fields, **changed}.items() if v is not None}
    copy = Entry(entry.type, fields=fields, persons=entry.persons)
    copy.key = entry.key
    return copy


class _SuffixedYear:
    """A reference-style template that formats the entry with its suffixed year."""

    def __init__(self, template):
        self.template = template

    def format_data(self, data):
        year = YEARS.get(data["entry"].key)
        if year:
            data = {**data, "entry": with_fields(data["entry"], year=year)}
        return self.template.format_data(data)


def _register_styles(app, config) -> None:
    if "sphinxcontrib.bibtex" not in app.extensions:
        return
    import pybtex.plugin
    from sphinxcontrib.bibtex.plugin import find_plugin, register_plugin

    reference_base = find_plugin(REFERENCING, config.bibtex_reference_style)

    @dataclass
    class Suffixed(reference_base):
        def inner(self, role_name):
            return _SuffixedYear(super().inner(role_name))

    name = f"{config.bibtex_reference_style}-suffixed"
    register_plugin(REFERENCING, name, Suffixed, force=True)
    config.bibtex_reference_style = name

    bibliography_base = pybtex.plugin.find_plugin(FORMATTING, config.bibtex_default_style)

    class SuffixedBibliography(bibliography_base):
        def format_entry(self, label, entry, bib_data=None):
            year = YEARS.get(entry.key)
            published = entry.fields.get("howpublished", "")
            if year:
                entry = with_fields(entry, year=year)
            elif entry.type == "misc" and entry.fields.get("year", "") in published:
                entry = with_fields(entry, year=None)       # the date is in howpublished
            return super().format_entry(label, entry, bib_data=bib_data)

    name = f"{config.bibtex_default_style}-suffixed"
    pybtex.plugin.register_plugin(FORMATTING, name, SuffixedBibliography, force=True)
    config.bibtex_default_style = name


def _compute_suffixes(app) -> None:
    """Once sphinxcontrib-bibtex has read the bib files (its builder-inited)."""
    if "sphinxcontrib.bibtex" not in app.extensions:
        return
    import pybtex.plugin
    domain = app.env.get_domain("cite")
    style = pybtex.plugin.find_plugin(FORMATTING, app.config.bibtex_default_style)()
    YEARS.clear()
    YEARS.update(year_suffixes(domain.bibdata.data.entries.values(),
                               domain.reference_style, style))


def setup(app):
    # after i18n_ui's config-inited handlers (priority 500), whose styles these wrap
    app.connect("config-inited", _register_styles, priority=600)
    app.connect("builder-inited", _compute_suffixes, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
