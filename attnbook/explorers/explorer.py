"""The `Explorer`: one figure, one parameter, a slider over its values.

Displayed in a live kernel (JupyterLab, VS Code, Colab) it is an ipywidgets
slider whose callback updates the artists of one matplotlib figure in place
and re-renders it; in the HTML book, a kernel-free slider over frames
rendered when the book was built. `steady_ticks` keeps tick labels one
width as the slider moves. The frames are encoded by `attnbook.explorers.png`.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colorbar import Colorbar
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, MaxNLocator

from .. import figure_text, plots
from .._checks import index_into
from . import png
from ._html import slider_html


def steady_ticks(target, smallest_top: float, nbins: int = 4) -> None:
    """Ticks at 1, 2 or 5 x 10^k on `target` (an Axis, or a Colorbar, which
    keeps its own locator and formatter), all labelled with the decimals that
    the smallest range over the frames, [0, smallest_top], needs. The labels
    keep one width as the slider moves, so the layout frozen at the first
    value fits every frame (with the default formatter, 0.05 became 0.075
    and ran off the figure)."""
    locator = MaxNLocator(nbins, steps=[1, 2, 5, 10])
    # a step is at least smallest_top / nbins >= 10**-decimals, so it is a
    # multiple of 10**-decimals and every label is exact
    decimals = max(0, int(np.ceil(-np.log10(smallest_top / nbins))))
    formatter = FormatStrFormatter(f"%.{decimals}f")
    if isinstance(target, Colorbar):
        target.locator, target.formatter = locator, formatter
    else:
        target.set_major_locator(locator)
        target.set_major_formatter(formatter)


def redrawn(dynamic: Sequence) -> list:
    """The artists a blitted frame draws over its background: each dynamic
    artist and, in its Axes, everything that a full drawing puts after it (the
    Axes' children in matplotlib's order: by zorder, then as added), such as
    outlines over a heatmap, the spines and the ticks; a full redraw would draw
    those on top, so leaving them in the background would hide them."""
    out, done, ids = [], set(), {id(a) for a in dynamic}
    for artist in dynamic:
        ax = getattr(artist, "axes", None)
        if ax is None or artist is ax:
            out.append(artist)
        elif id(ax) not in done:
            done.add(id(ax))
            order = sorted((a for a in ax.get_children() if a is not ax.patch),
                           key=lambda a: a.zorder)
            out += order[next(i for i, a in enumerate(order) if id(a) in ids):]
    return out


class Explorer:
    """One figure, one parameter, a list of values to slide over.

    The ``explore_*`` functions build one; displaying it shows a live slider
    in a Jupyter kernel and a kernel-free one in the HTML book. The first is
    in :doc:`/chapters/04_softmax_attention` (chapter 4).

    Parameters
    ----------
    name : str
        What the slider controls, shown beside it, e.g. ``"d_k"``.
    values : sequence, length n_values
        The parameter values, at least one.
    labels : sequence of str, length n_values
        How each value is shown.
    figure : matplotlib.figure.Figure
        The figure the slider redraws.
    update : callable
        ``update(index)`` changes the figure's artists in place to show
        ``values[index]``.
    index : int, optional
        The value shown first, in ``[0, n_values - 1]``. Default 0.
    description : str, optional
        What the figure shows: the start of every frame's alt text (see
        `frame_alt`). Default ``"Figure for <name>"``.
    dynamic : sequence of matplotlib artists, optional
        The artists `update` changes (whole Axes allowed). The live form
        draws everything else once and then redraws only these (blitting);
        empty means a full redraw on every move.
    describe : callable, optional
        ``describe(index)`` says in words what the frame for
        ``values[index]`` shows (its numbers), for its alt text: a string,
        or ``(words, data)`` where `data` (tokens and numbers, say) reads
        the same in every language and follows the words after a colon.
        Default: the figure's changing titles.

    Raises
    ------
    ValueError
        If values and labels are empty or of different lengths, or index is
        out of range.
    """

    def __init__(self, name: str, values: Sequence, labels: Sequence[str], figure: Figure,
                 update: Callable[[int], None], index: int = 0, description: str = "",
                 dynamic: Sequence = (), describe: Callable[[int], str] | None = None):
        for arg, text in (("name", name), ("description", description)):
            if not isinstance(text, str):
                raise TypeError(f"{arg} must be a string, got {type(text).__name__} {text!r}")
        for arg, seq in (("values", values), ("labels", labels), ("dynamic", dynamic)):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
                raise TypeError(f"{arg} must be a sequence, got {type(seq).__name__} {seq!r}")
        if len(values) != len(labels) or not len(values):
            raise ValueError(f"values and labels must be non-empty and of equal length; "
                             f"got {len(values)} values and {len(labels)} labels")
        if not isinstance(figure, Figure):
            raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
        for arg, fn in (("update", update), ("describe", describe)):
            if not callable(fn) and not (arg == "describe" and fn is None):
                raise TypeError(f"{arg} must be a function of the index, got "
                                f"{type(fn).__name__} {fn!r}")
        self.name, self.values, self.labels = name, list(values), list(labels)
        self.figure, self._update = figure, update
        self.description = description or f"Figure for {name}"
        self.dynamic = list(dynamic)
        self._describe = describe
        self.index = index_into(index, len(self.values))
        self.slider = None          # the ipywidgets SelectionSlider, once widget() built it
        self._image = None          # the ipywidgets Image under it
        self._box = None            # the VBox holding both
        self._canvas = None         # the Agg canvas the live form blits on
        self._background = None     # its pixels without the dynamic artists
        self._redrawn: list = []    # what a blitted frame draws: `redrawn(dynamic)`
        self._live_frames: dict[int, bytes] = {}   # live PNG per index, drawn on first visit
        self._update(self.index)
        self._freeze_layout()

    def _freeze_layout(self) -> None:
        """Lay the figure out once, then keep every panel where it is, so frames
        do not jump as labels change and every rendering of a frame is identical."""
        fig = self.figure
        fig.set_dpi(png.DPI)
        FigureCanvasAgg(fig).draw()
        fig.set_layout_engine("none")

    # -- state ---------------------------------------------------------------------------
    def show(self, index: int) -> None:
        """Redraw the figure's artists for ``values[index]`` (no new figure).

        Parameters
        ----------
        index : int
            In ``[0, n_values - 1]``.
        """
        self.index = index = index_into(index, len(self.values))
        self._update(index)

    @property
    def value(self):
        """The value shown now, ``values[index]``."""
        return self.values[self.index]

    # -- live form -----------------------------------------------------------------------
    def widget(self):
        """The live form: a SelectionSlider above the figure as an Image widget.

        Returns
        -------
        ipywidgets.VBox
            The slider and the image; built on the first call, the same
            object afterwards.
        """
        import ipywidgets as widgets
        if self._box is None:
            self.slider = widgets.SelectionSlider(
                options=list(zip(self.labels, range(len(self.values)), strict=True)),
                value=self.index, description=self.name, continuous_update=True,
                layout=widgets.Layout(width="32rem"),
                style={"description_width": "initial"})
            self._image = widgets.Image(value=self.render_live(), format="png")
            self.slider.observe(self._on_slide, names="value")
            self._box = widgets.VBox([self.slider, self._image])
        return self._box

    def _on_slide(self, change) -> None:
        self.show(change["new"])
        self._image.value = self.render_live()

    def render_live(self) -> bytes:
        """The current frame as a PNG image, as the live slider shows it.

        Returns
        -------
        bytes
            An RGB PNG of the figure at 72 dpi (`attnbook.explorers.png.DPI`).
        """
        frame = self._live_frames.get(self.index)
        if frame is not None:
            return frame
        fig = self.figure
        if not self.dynamic:
            frame = png.png_full_redraw(fig)
        else:
            if self._background is None:
                self._canvas = FigureCanvasAgg(fig)
                self._redrawn = redrawn(self.dynamic)
                for artist in self._redrawn:
                    artist.set_animated(True)
                self._canvas.draw()                       # everything that does not move
                self._background = self._canvas.copy_from_bbox(fig.bbox)
            self._canvas.restore_region(self._background)
            renderer = self._canvas.get_renderer()
            for artist in self._redrawn:
                artist.draw(renderer)
            frame = png.png_of_canvas(self._canvas)
        self._live_frames[self.index] = frame
        return frame

    def _static_mode(self) -> None:
        """Undo the live form's blitting set-up so a full draw shows every artist."""
        if self._background is not None:
            self._unblit()
            self._background = None

    def _blitter(self) -> Callable[[], bytes]:
        """Draw all but the dynamic artists once; return ``frame()``, which
        draws the dynamic artists as they are now over that and returns the
        palette PNG (the book's frames; a full drawing each without dynamic
        artists). End with `_unblit`."""
        fig = self.figure
        if not self.dynamic:
            return lambda: png.png_palette(fig)
        canvas = FigureCanvasAgg(fig)
        self._redrawn = redrawn(self.dynamic)
        for artist in self._redrawn:
            artist.set_animated(True)
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)

        def frame() -> bytes:
            canvas.restore_region(background)
            renderer = canvas.get_renderer()
            for artist in self._redrawn:
                artist.draw(renderer)
            return png.png_palette_of_canvas(canvas)
        return frame

    def _unblit(self) -> None:
        for artist in self._redrawn:
            artist.set_animated(False)

    # -- static form ---------------------------------------------------------------------
    def frames(self) -> list[bytes]:
        """Every value's frame as a PNG image, as the HTML book shows them.

        The figure is left showing the current index.

        Returns
        -------
        list of bytes, length n_values
            One PNG per value, in order.
        """
        return [frame for frame, _ in self._frames_with_alt()]

    def frame_alt(self) -> str:
        """The current frame's alt text: the description, the value, and what
        the frame shows: `describe`'s words, or else the figure's changing
        titles (which carry the frame's numbers), without a leading restatement
        of the value.

        Returns
        -------
        str
            E.g. ``"<description>. d_k = 8: score std 2.81 unscaled, 0.99 scaled"``.
        """
        value, shown = self._alt_parts()
        shown = [words + (f": {data}" if data else "") for words, data in shown]
        return f"{self.description}. {value}" + (": " + "; ".join(shown) if shown else "")

    def _readouts(self, tr=str) -> list[str]:
        """Each value's readout, "name = label", through `tr`; a name of several
        quantities ("layer, head = 2, 1") is one message, so that a translation
        can put each number where its language does ("第 2 层，第 1 个头")."""
        if ", " in self.name:
            return [tr(f"{self.name} = {lab}") for lab in self.labels]
        return [f"{tr(self.name)} = {tr(lab)}" for lab in self.labels]

    def _alt_parts(self) -> tuple[str, list[tuple[str, str]]]:
        """The current frame's value ("d_k = 8") and what it shows, in words."""
        value = f"{self.name} = {self.labels[self.index]}"
        if self._describe is not None:
            said = self._describe(self.index)
            return value, [said if isinstance(said, tuple) else (said, "")]
        else:
            fig = self.figure
            titles = {id(t) for t in (fig._suptitle, *(ax.title for ax in fig.axes))
                      if t is not None}
            shown = [a.get_text() for a in self.dynamic
                     if id(a) in titles and a.get_visible() and a.get_text().strip()]
            shown = [t.removeprefix(value).lstrip(":, ") if t.startswith(value) else t
                     for t in shown]
        return value, [(t, "") for t in shown if t]

    def _frames_with_alt(self, texts: dict | None = None) -> list[tuple[bytes, str]]:
        """(palette PNG, alt text) for every value; the figure is left as it
        was. Every frame's messages (`attnbook.figure_text.texts`, its alt
        text's too) are added to `texts` if given."""
        self._static_mode()
        current, out = self.index, []
        frame = self._blitter()
        try:
            for i in range(len(self.values)):
                self.show(i)
                out.append((frame(), self.frame_alt()))
                if texts is not None:
                    shown = self._alt_parts()[1]
                    texts.update(dict.fromkeys(figure_text.texts(self.figure)))
                    texts.update(dict.fromkeys(figure_text.template(t)[0] for t, _ in shown
                                               if figure_text.needs_translation(t)))
        finally:
            self._unblit()
        self.show(current)
        return out

    def _translated_frames(self, messages: dict[str, str], families: Sequence[str]):
        """(palette PNG, alt text) for every value with the figure's text in
        translation (`attnbook.figure_text`), laid out afresh for it; the
        figure is left as it was. Also returns the messages the catalogue lacks."""
        fig = self.figure
        self._static_mode()
        positions = [(ax, ax.get_position()) for ax in fig.axes]
        current, out, missing = self.index, [], {}

        def tr(text: str) -> str:
            found = figure_text.translate(text, messages)
            if found is None:
                missing[figure_text.template(text)[0]] = None
                return text
            return found

        description, labels = tr(self.description), self._readouts(tr)
        try:
            for i in range(len(self.values)):
                self.show(i)
                shown = self._alt_parts()[1]
                shown = [tr(words) + (f"：{data.replace('; ', '；')}" if data else "")
                         for words, data in shown]           # "; " lists as "；"
                alt = f"{description}。{labels[i]}" + ("：" + "；".join(shown) if shown else "")
                with figure_text.translated(fig, messages, families) as lacking:
                    if i == 0:   # lay the figure out for the translated text, freeze it
                        fig.set_layout_engine("constrained")
                        FigureCanvasAgg(fig).draw()
                        fig.set_layout_engine("none")
                        frame = self._blitter()
                    out.append((frame(), alt))
                    missing.update(lacking)
        finally:
            self._unblit()
        for ax, position in positions:
            ax.set_position(position)
        self.show(current)
        return out, tr(self.name), labels, list(missing)

    def to_html(self) -> str:
        """A self-contained, kernel-free slider over every pre-rendered frame.

        Returns
        -------
        str
            HTML: a slider, the current value, and an image that shows the
            frame of that value, each frame with its alt text.
        """
        labels = self._readouts()
        return self._html(self._frames_with_alt(), self.name, labels, self.description)

    def _html(self, frames: list[tuple[bytes, str]], name: str, labels: list[str],
              description: str) -> str:
        """The kernel-free slider (`attnbook.explorers._html.slider_html`)."""
        return slider_html(frames, name, labels, description, self.index)

    def _static_bundle(self) -> tuple[dict, dict]:
        """The book's form: the English slider and, with the build's catalogue
        (`attnbook.figure_text`), the Chinese edition's."""
        found = figure_text.catalogue()
        labels = self._readouts()
        texts = {figure_text.template(s)[0]: None for s in (
            self.name, self.description, *self.labels, *(labels if ", " in self.name else ()))
            if figure_text.needs_translation(s)} if found is not None else None
        data = {"text/html": self._html(self._frames_with_alt(texts), self.name, labels,
                                        self.description)}
        if found is None:
            return data, {}
        frames, name, labels, missing = self._translated_frames(found["messages"],
                                                                found["families"])
        data[figure_text.TRANSLATED_HTML] = self._html(
            frames, name, labels, figure_text.translate(self.description, found["messages"])
            or self.description)
        return data, {figure_text.METADATA_KEY: {"texts": list(texts), "missing": missing}}

    def _one_frame_html(self) -> str:
        """The current frame alone, as an inline image with the value beside it."""
        uri = "data:image/png;base64," + base64.b64encode(self.render_live()).decode()
        label = html.escape(f"{self.name} = {self.labels[self.index]}")
        return (f'<div class="attn-explorer-frame"><p>{label}</p>'
                f'<img src="{uri}" alt="{html.escape(self.frame_alt(), quote=True)}"></div>')

    def _repr_mimebundle_(self, include=None, exclude=None):
        """What Jupyter displays: only the form the front end will show.

        In the book's build (``ATTNBOOK_STATIC=1``, see
        `attnbook.plots.STATIC_ENV`) the kernel-free slider over every frame;
        elsewhere the live widget, with
        the current frame as 'text/html' for front ends without ipywidgets.
        """
        plain = f"<Explorer over {self.name}: {len(self.values)} values>"
        if plots.static_build():
            data, metadata = self._static_bundle()
            data["text/plain"] = plain
            return (data, metadata) if metadata else data
        bundle = {}
        try:
            bundle.update(self.widget()._repr_mimebundle_())
        except ImportError:        # ipywidgets missing: the current frame still shows
            pass
        bundle["text/html"] = self._one_frame_html()
        bundle["text/plain"] = plain
        return bundle
