"""Every chapter runs top to bottom in a fresh kernel, with no error and
nothing written to stderr (warnings included). pytest -n 2 runs two at once."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import chapter_notebooks

CELL_TIMEOUT = 120  # seconds, as in _config.yml


@pytest.mark.slow
@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_executes_cleanly_in_a_fresh_kernel(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell failed\n{err}", pytrace=False)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type == "stream" and out.name == "stderr":
                pytest.fail(f"{path.name}, cell {index} (id {cell.get('id')}) wrote to "
                            f"stderr:\n{out.text}\n--- cell source ---\n{cell.source}",
                            pytrace=False)
