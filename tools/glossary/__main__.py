"""Link the first use of every glossary term in each chapter to the glossary.

    python -m tools.glossary          # list the first uses that are not links
    python -m tools.glossary --write  # turn each into a {term} role

Read the list before writing: a word such as "value" can be used in its
everyday sense, which should be reworded rather than linked.
"""
from __future__ import annotations

import json
import sys

from tools.glossary.terms import chapter_cells, first_uses, glossary_entries
from tools.project import chapter_notebooks


def main(write: bool) -> int:
    terms = [e.term for e in glossary_entries()]
    todo = 0
    for path in chapter_notebooks():
        uses = first_uses(chapter_cells(path), terms)
        bare = {t: u for t, u in uses.items() if not u.linked}
        todo += len(bare)
        for t, u in bare.items():
            print(f"{path.name} md cell {u.cell}: {t!r}: ...{u.excerpt}...")
        if write and bare:
            nb = json.loads(path.read_text(encoding="utf-8"))
            md = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
            # right to left within a cell, so earlier offsets stay valid
            for t, u in sorted(bare.items(), key=lambda tu: (tu[1].cell, -tu[1].start)):
                src = "".join(md[u.cell]["source"])
                text = " ".join(src[u.start:u.end].split())
                role = f"{{term}}`{text}`" if text.lower() == t else f"{{term}}`{text} <{t}>`"
                md[u.cell]["source"] = (src[:u.start] + role + src[u.end:]).splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{todo} first uses not linked" + (" (now linked)" if write else ""))
    return 0 if write or not todo else 1


if __name__ == "__main__":
    sys.exit(main("--write" in sys.argv[1:]))
