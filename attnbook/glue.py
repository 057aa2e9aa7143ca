"""Small conveniences for writing chapters."""
from __future__ import annotations

import numpy as np

__all__ = ["glue"]


def glue(name: str, value) -> None:
    """Store `value` for the prose without displaying it.

    Used by every chapter, from :doc:`/chapters/01_looking_things_up` (chapter 1)
    on: the prose shows the value with the ``{glue:text}`` role.

    numpy scalars (whose repr is 'np.float64(...)' in numpy 2) are turned into
    Python numbers first, so format specs such as ``:.2f`` work. Without
    myst-nb (a notebook run in Colab, say) there is no book to glue into, so
    this does nothing; the book build always has myst-nb.

    Parameters
    ----------
    name : str
        The name the prose refers to.
    value : object
        A number (or anything myst-nb can glue).

    Returns
    -------
    None
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    if isinstance(value, np.generic):
        value = value.item()
    myst_glue(name, value, display=False)
