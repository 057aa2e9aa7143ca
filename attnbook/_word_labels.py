"""Where `attnbook.plots.word_scatter` writes each word: next to its point,
inside the axes, and clear of the other labels, points and arrows.
"""
from __future__ import annotations

import numpy as np

# where a point's label may go, in points from the point: above right first
LABEL_SPOTS = [((4, 4), "left", "bottom"), ((4, -4), "left", "top"),
               ((-4, 4), "right", "bottom"), ((-4, -4), "right", "top")]


def place_labels(ax, vectors: dict, arrows=()) -> None:
    """Label each point at the first spot where the label stays inside the axes
    and covers no earlier label, no other point and no arrow from the origin
    (above right, below right, above left, below left); if there is none,
    above right."""
    ax.margins(x=0.12, y=0.15)        # room for labels at the edges
    ax.figure.draw_without_rendering()  # run the layout: final axes box and limits
    frame = ax.get_window_extent()
    points = {word: ax.transData.transform(v) for word, v in vectors.items()}
    along = np.linspace(0.0, 1.0, 40)[:, None]
    arrow_points = np.concatenate([ax.transData.transform(along * np.asarray(vectors[w]))
                                   for w in arrows]) if len(arrows) else np.empty((0, 2))
    placed = []
    for word, v in vectors.items():
        own = points[word]
        others = [p for w, p in points.items() if w != word]
        others += [p for p in arrow_points if np.hypot(*(p - own)) > 8]
        for offset, ha, va in LABEL_SPOTS:
            text = ax.annotate(word, v, xytext=offset, textcoords="offset points",
                               fontsize=9, ha=ha, va=va, annotation_clip=False)
            text.set_in_layout(False)       # labels must not move the axes they were fitted to
            box = text.get_window_extent()
            inside = (frame.x0 <= box.x0 and box.x1 <= frame.x1
                      and frame.y0 <= box.y0 and box.y1 <= frame.y1)
            covers = any(box.x0 - 5 <= x <= box.x1 + 5 and box.y0 - 5 <= y <= box.y1 + 5
                         for x, y in others)
            if inside and not covers and not any(box.overlaps(b) for b in placed):
                break
            text.remove()
        else:
            text = ax.annotate(word, v, xytext=(4, 4), textcoords="offset points", fontsize=9)
            box = text.get_window_extent()
        placed.append(box)
