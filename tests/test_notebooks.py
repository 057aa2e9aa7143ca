"""Every chapter runs top to bottom in a fresh kernel, with no error and
nothing written to stderr (warnings included). pytest -n 2 runs two at once."""
from __future__ import annotations

import pytest
from nbclient.exceptions import CellExecutionError
from nbrun import executed

from tools.project import chapter_notebooks


@pytest.mark.slow
@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_executes_cleanly_in_a_fresh_kernel(path):
    try:
        nb = executed(path.stem)
    except CellExecutionError as err:
        pytest.fail(str(err), pytrace=False)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type == "stream" and out.name == "stderr":
                pytest.fail(f"{path.name}, cell {index} (id {cell.get('id')}) wrote to "
                            f"stderr:\n{out.text}\n--- cell source ---\n{cell.source}",
                            pytrace=False)
