"""How an explorer's frames are encoded as PNG images.

Live frames (the slider in a kernel) are written by `png_of_canvas`, a
hand-written RGB PNG writer tuned for speed; the book's static frames are
palette PNGs from `attnbook.plots.palette_png`. Both are drawn at `DPI`.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import _png, plots

# Live and static frames share one resolution: the layout is frozen at it, so a
# live frame and the book's frame for the same value are the same picture (a
# chapter with several explorers stays under 3 MB at 72 dpi).
DPI = 72


def png_of_canvas(canvas: FigureCanvasAgg) -> bytes:
    """What the canvas last drew, as an RGB PNG, written for speed (live frames).

    No row filter and zlib level 1. Measured on the six explorers' canvases
    (median of 60, 2-core machine), Pillow at its fastest setting
    (``compress_level=1``, RGB) took 1.6 to 1.9 times as long (dk, 756 x 446
    pixels: 7.1 ms against 3.8 ms), for files of about the same size (these
    between 13 % smaller and 7 % larger); matplotlib writes PNGs through
    Pillow and redraws the figure first (dk: 126 ms). So the slider keeps
    this writer.
    """
    width, height = canvas.get_width_height(physical=True)
    rgba = np.asarray(canvas.buffer_rgba())                            # (height, width, 4)
    rows = np.zeros((height, 1 + 3 * width), np.uint8)                 # filter byte 0: none
    rows[:, 1:] = rgba[:, :, :3].reshape(height, 3 * width)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data)))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)    # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


def png_full_redraw(fig: Figure) -> bytes:
    """The whole figure drawn afresh and written as a live frame (no blitting)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return png_of_canvas(canvas)


def png_palette(fig: Figure) -> bytes:
    """The whole figure as a palette PNG at `DPI` (the book's static frames)."""
    return plots.palette_png(fig, DPI)


def png_palette_of_canvas(canvas: FigureCanvasAgg) -> bytes:
    """What the canvas last drew, as the palette PNG `png_palette` would write
    for the whole figure (the book's static frames, blitted)."""
    from PIL import Image
    width, height = canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    return plots.quantized_png(image, _png.smallest_text_px(canvas.figure, DPI))
