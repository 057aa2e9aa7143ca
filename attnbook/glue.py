"""Small conveniences for writing chapters."""
from __future__ import annotations

import numpy as np

__all__ = ["glue"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: The mime-type prefix under which myst-nb looks for glued values
#: (myst_nb.ext.glue.GLUE_PREFIX).
GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, value) -> None:
    """Store `value` for the prose without displaying it.

    Used by every chapter, from :doc:`/chapters/01_looking_things_up` (chapter 1)
    on: the prose shows the value with the ``{glue:text}`` role.

    numpy scalars (whose repr is 'np.float64(...)' in numpy 2) are turned into
    Python numbers first, so format specs such as ``:.2f`` work. Without
    myst-nb (a notebook run in Colab, say) there is no book to glue into, so
    this does nothing; the book build always has myst-nb.

    It stores the value as ``myst_nb.glue(name, value, display=False)``
    would, without importing myst-nb into every chapter.

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
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, the name the prose refers to; "
                        f"got {type(name).__name__} {name!r}")
    try:
        import myst_nb  # noqa: F401  (cheap: the package is lazy)
    except ImportError:
        return
    from IPython.core.formatters import format_display_data
    from IPython.display import display
    if isinstance(value, np.generic):
        value = value.item()
    bundle, metadata = format_display_data(value)
    metadata["scrapbook"] = dict(name=name, mime_prefix=GLUE_PREFIX)
    display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
