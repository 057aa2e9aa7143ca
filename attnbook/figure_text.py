"""The text inside figures and explorers, in the Chinese edition.

The chapters draw their figures in English, with plain string literals, and
never call a translation function. When the book is built, the Chinese
edition's figures are drawn from the same figure objects in the same kernel:
`translated` swaps every piece of text in a figure for its translation, the
figure is rendered a second time, and the text is put back. So a number in a
figure is computed once and is the same in both editions, and the teaching
code reads as it always did.

The translations are gettext messages in ``locales/zh_CN/LC_MESSAGES/
figures.po``. The build (``tools/build``) hands them to the kernel as a JSON
file named by the environment variable ``ATTNBOOK_FIGURE_CATALOGUE`` (its
name is the constant `CATALOGUE_ENV`), with a font that has
their Chinese characters; without it (JupyterLab, a plain ``python``),
figures are drawn in English only.

A message is a figure's text with its numbers taken out (`template`): the
title ``"d_k = 64: entropy 2.71"`` is the message ``"d_k = {}: entropy {}"``,
so one translation serves every frame of an explorer; the numbers go back in
the order they came. Text between ``$`` signs is mathematics and is kept as
it is. Text without a Latin letter outside mathematics (a tick label
``0.25``) needs no translation.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

# matplotlib is imported when a figure is translated: the build's tools read
# this module's constants without paying for it
if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

__all__ = ["template", "needs_translation", "translate", "texts", "translated", "catalogue",
           "figure_bundle"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: Environment variable naming the build's JSON catalogue:
#: ``{"language": "zh_CN", "font": path, "messages": {msgid: msgstr}}``.
CATALOGUE_ENV = "ATTNBOOK_FIGURE_CATALOGUE"
#: What stands for a number in a message.
SLOT = "{}"

_MATH = re.compile(r"(\$[^$]*\$)")
# a number not glued to a word ("layer 2" yes, "word2vec" no): -3, 0.25, 1e-3, 1,024
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_LETTER = re.compile(r"[A-Za-z]")
# in a message outside mathematics: an escaped brace, or a number's slot
_BRACES = re.compile(r"(\{\{|\}\}|\{\})")


def _text(text, name: str = "text") -> str:
    """`text` if it is a string, else a TypeError naming `name`."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string (a figure's text), got "
                        f"{type(text).__name__} {text!r}")
    return text


def _figure(fig) -> None:
    """Raise a TypeError unless `fig` is a matplotlib Figure."""
    from matplotlib.figure import Figure
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")


def _messages(messages) -> None:
    """Raise a TypeError unless `messages` is a dict of str to str."""
    if not isinstance(messages, dict):
        raise TypeError(f"messages must be a dict {{message: translation}}, got "
                        f"{type(messages).__name__}")
    bad = [k for k, v in messages.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise TypeError(f"messages must map strings to strings; entry {bad[0]!r} maps to "
                        f"{type(messages[bad[0]]).__name__}")


def template(text: str) -> tuple[str, list[str]]:
    """`text` as a message with its numbers taken out, and the numbers.

    Parameters
    ----------
    text : str
        A figure's text, e.g. ``"d_k = 64: entropy 2.71"``.

    Returns
    -------
    message : str
        The text with each number outside ``$...$`` replaced by `SLOT`
        (``"{}"``),
        e.g. ``"d_k = {}: entropy {}"``, and each literal brace there
        doubled, as in ``str.format`` (``"set {}"`` is ``"set {{}}"``).
    numbers : list of str
        The numbers taken out, in order.
    """
    numbers: list[str] = []

    def take(match: re.Match) -> str:
        numbers.append(match.group(0))
        return SLOT

    parts = _MATH.split(_text(text))
    # odd parts are mathematics: kept as they are; elsewhere a literal brace is doubled
    message = "".join(p if i % 2 else _NUMBER.sub(take, p.replace("{", "{{")
                                                   .replace("}", "}}"))
                      for i, p in enumerate(parts))
    return message, numbers


def needs_translation(text: str) -> bool:
    """Whether `text` has words to translate.

    Parameters
    ----------
    text : str
        A figure's text.

    Returns
    -------
    bool
        True if it has a Latin letter outside mathematics (``$...$``).
    """
    return bool(_LETTER.search("".join(_MATH.split(_text(text))[::2])))


def translate(text: str, messages: dict[str, str]) -> str | None:
    """`text` in the catalogue's language, or None if its message is missing.

    Parameters
    ----------
    text : str
        A figure's text.
    messages : dict of str to str
        Message to translation; a translation has as many `SLOT` (``"{}"``) as its
        message, and the numbers go back into them in order.

    Returns
    -------
    str or None
        The translation with the numbers put back; `text` itself if it needs
        no translation; None if the catalogue lacks its message.
    """
    _messages(messages)
    if not needs_translation(text):
        return text
    message, numbers = template(text)
    translation = messages.get(message)
    if not translation:
        return None
    out, slots = [], 0
    for i, part in enumerate(_MATH.split(translation)):
        if i % 2:                                   # mathematics: as it is
            out.append(part)
            continue
        for piece in _BRACES.split(part):
            if piece == SLOT:
                out.append(numbers[slots] if slots < len(numbers) else "")
                slots += 1
            else:
                out.append({"{{": "{", "}}": "}"}.get(piece, piece))
    if slots != len(numbers):
        raise ValueError(f"the translation of {message!r} must have {len(numbers)} {SLOT} "
                         f"(one per number); got {translation!r}")
    return "".join(out)


@functools.cache
def catalogue() -> dict | None:
    """The build's catalogue, read once, its fonts registered with matplotlib.

    It takes no argument: the file is named by the environment variable
    ``ATTNBOOK_FIGURE_CATALOGUE`` (the constant `CATALOGUE_ENV`).

    Returns
    -------
    dict or None
        "messages" (message to translation), "fonts" (paths) and
        "families" (their family names); None when the variable is unset
        or empty.
    """
    path = os.environ.get(CATALOGUE_ENV, "")
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    from matplotlib import font_manager
    for font in data["fonts"]:
        font_manager.fontManager.addfont(font)
    data["families"] = [font_manager.FontProperties(fname=f).get_name() for f in data["fonts"]]
    return data


def _texts(fig: Figure) -> Iterator[Text]:
    """Every Text artist of `fig` with something in it, tick labels included."""
    from matplotlib.text import Text
    seen = set()
    for artist in fig.findobj(Text):
        if id(artist) not in seen and artist.get_text().strip():
            seen.add(id(artist))
            yield artist


@functools.cache
def _translating():
    """The class of tick-label formatters that pass another's labels through
    `swap` (made on first use, when matplotlib is imported anyway)."""
    from matplotlib.ticker import Formatter

    class _Translating(Formatter):
        def __init__(self, inner: Formatter, swap):
            self.inner, self.swap = inner, swap

        def __call__(self, x, pos=None):
            return self.swap(str(self.inner(x, pos)))

        def format_ticks(self, values):
            return [self.swap(str(s)) for s in self.inner.format_ticks(values)]

        def set_locs(self, locs):
            self.inner.set_locs(locs)

        def get_offset(self):
            return self.inner.get_offset()

        def set_axis(self, axis):
            self.axis = axis
    return _Translating


def _axes(fig: Figure):
    """Every x and y axis of `fig` (colour bars' included)."""
    for ax in fig.axes:
        yield ax.xaxis
        yield ax.yaxis


def texts(fig: Figure) -> list[str]:
    """The messages of every text in `fig` that needs translation.

    What the build extracts into figures.po. Tick labels are the ones of
    the figure's last drawing.

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    list of str
        Each message once, in the order the texts are found.
    """
    _figure(fig)
    out: dict[str, None] = {}
    for s in (t.get_text() for t in _texts(fig)):
        if needs_translation(s):
            out[template(s)[0]] = None
    return list(out)


@contextlib.contextmanager
def translated(fig: Figure, messages: dict[str, str], families: Sequence[str] = ()):
    """Show `fig` in the catalogue's language while the block runs.

    Every text and tick label is swapped for its translation
    (and given `families` as fallback fonts for characters the current font
    lacks); on leaving, everything is put back.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    messages : dict of str to str
        As for `translate`.
    families : sequence of str, optional
        Font families with the translation's characters.

    Returns
    -------
    context manager
        ``with translated(...) as missing``: `missing` is a dict whose keys
        are the messages the catalogue lacks (their text stays in English),
        filled in as the figure is drawn (tick labels are made then).
    """
    _figure(fig)
    _messages(messages)
    if isinstance(families, (str, bytes)) or not isinstance(families, Sequence) \
            or not all(isinstance(f, str) for f in families):
        raise TypeError(f"families must be a sequence of font family names (strings), "
                        f"got {type(families).__name__} {families!r}")
    missing: dict[str, None] = {}

    def swap(s: str) -> str:
        t = translate(s, messages)
        if t is None:
            missing[template(s)[0]] = None
            return s
        return t

    undo = []
    for artist in _texts(fig):
        text, fonts = artist.get_text(), artist.get_fontfamily()
        undo.append((artist, text, fonts))
        new = swap(text)
        artist.set_text(new)
        if not families:
            continue
        if "$" in new and not new.isascii():
            # mathtext draws the words around a formula in the text's first
            # font, without fallback: the translation's font has ASCII too
            artist.set_fontfamily([families[0]])
        else:
            artist.set_fontfamily([*fonts, *families])
    # tick labels are written by the axes' formatters at each drawing
    formatters = [(axis, axis.major.formatter, axis.minor.formatter) for axis in _axes(fig)]
    wrap = _translating()
    for axis, major, minor in formatters:
        axis.major.formatter, axis.minor.formatter = wrap(major, swap), wrap(minor, swap)
    try:
        yield missing
    finally:
        for artist, text, fonts in undo:
            artist.set_text(text)
            artist.set_fontfamily(fonts)
        for axis, major, minor in formatters:
            axis.major.formatter, axis.minor.formatter = major, minor


#: The mime types of the Chinese edition's renderings of an output, beside
#: the English 'image/png' and 'text/html' (tools/sphinx/i18n.py picks them
#: in the Chinese build; the English build ignores them).
TRANSLATED_PNG = "image/vnd.attnbook.zh+png"
TRANSLATED_HTML = "text/vnd.attnbook.zh+html"
#: Output metadata key: {"texts": messages the output's text needs,
#: "missing": those the catalogue lacked when it was drawn}.
METADATA_KEY = "attnbook/figure-text"


def figure_bundle(fig: Figure, render) -> tuple[dict, dict]:
    """A figure's display data in both editions: ``render(fig)`` (PNG bytes)
    in English and, with the build's catalogue, again in translation.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    render : callable
        ``render(fig)`` returns the figure as PNG bytes.

    Returns
    -------
    data : dict
        'image/png' and, with a catalogue, `TRANSLATED_PNG`
        (``"image/vnd.attnbook.zh+png"``, base64 text).
    metadata : dict
        Under `METADATA_KEY` (``"attnbook/figure-text"``), the figure's
        messages and the missing ones.
    """
    import base64
    _figure(fig)
    if not callable(render):
        raise TypeError(f"render must be a callable returning the figure's PNG bytes, got "
                        f"{type(render).__name__}")
    png = render(fig)
    if not isinstance(png, (bytes, bytearray)):
        raise TypeError(f"render(fig) must return PNG bytes, got {type(png).__name__}")
    data = {"image/png": base64.b64encode(png).decode()}
    found = catalogue()
    if found is None:
        return data, {}
    messages = texts(fig)          # after drawing: the tick labels are made
    with translated(fig, found["messages"], found["families"]) as missing:
        data[TRANSLATED_PNG] = base64.b64encode(render(fig)).decode()
    return data, {METADATA_KEY: {"texts": messages, "missing": list(missing)}}
