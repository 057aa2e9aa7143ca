"""Small conveniences for writing chapters."""
from __future__ import annotations

import numpy as np

__all__ = ["glue"]


def glue(name: str, value) -> None:
    """Store `value` for the prose ({glue:text}`name:.2f`) without displaying it.

    numpy scalars (whose repr is 'np.float64(...)' in numpy 2) are turned
    into Python numbers first, so format specs such as `:.2f` work.
    """
    from myst_nb import glue as myst_glue
    if isinstance(value, np.generic):
        value = value.item()
    myst_glue(name, value, display=False)
