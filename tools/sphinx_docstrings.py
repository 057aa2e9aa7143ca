"""Sphinx extension: render attnbook's plain-text docstrings as reStructuredText.

attnbook's docstrings follow the house style (see STYLE.md): a summary line,
then a shape contract written as `name: shape or meaning` lines (several may
share a line, separated by `;` or wide spaces) and a `returns ...` line,
readable as plain text in `help()` and in Jupyter. This turns the contract
into `:param name:` / `:returns:` fields, backticked names into inline code,
and literal `*`, `|` and a word's trailing `_` into escaped characters, so
autodoc renders them cleanly and the strict build has nothing to warn about.
"""
from __future__ import annotations

import re

NAMES = r"[A-Za-z_]\w*(?:\s*[,/]\s*[A-Za-z_]\w*)*"
FIELD = re.compile(rf"^({NAMES}):\s+(.*)$")
RETURNS = re.compile(r"^(returns?)\b:?\s*(.*)$")
SPLIT = re.compile(rf"(?:;\s*|\s{{2,}})(?={NAMES}:\s)")


def _inline(text: str) -> str:
    text = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
    parts = re.split(r"(``[^`]*``)", text)          # leave inline code alone
    return "".join(p if p.startswith("``") else
                   re.sub(r"(?<=\w)_(?!\w)", r"\\_", re.sub(r"([*|\\])", r"\\\1", p))
                   for p in parts)


def to_rst(lines: list[str], params: bool = True) -> list[str]:
    """The docstring's lines, with the contract turned into fields (when
    `params`, i.e. for a function, method or class) and lists set off by a
    blank line."""
    out: list[str] = []
    in_field = in_list = False
    for k, line in enumerate(lines):
        if not line.strip():
            out.append("")
            in_field = in_list = False
            continue
        contract = params and k > 0 and not line[0].isspace()
        pieces = SPLIT.split(line) if contract and FIELD.match(line) else [line]
        fields = [FIELD.match(p) for p in pieces] if contract else [None]
        if contract and not fields[0]:
            fields = [RETURNS.match(line)]
        if all(fields):
            if not in_field and out and out[-1]:
                out.append("")
            for f in fields:
                body = _inline(f.group(2).strip())
                if f.group(1).startswith("return"):
                    out.append(f":returns: {body}")
                else:
                    out += [f":param {name}: {body}" for name in re.split(r"\s*[,/]\s*", f.group(1))]
            in_field = True
        elif in_field and (line[0].isspace() or (not out[-1].rstrip().endswith(".")
                                                 and re.match(r"[a-z(]", line))):
            out.append("   " + _inline(line.strip()))        # the field goes on
        elif line.startswith("- "):
            if out and out[-1] and not in_list:
                out.append("")
            out.append(_inline(line))
            in_field, in_list = False, True
        elif in_list and line[0].isspace():
            out.append(_inline(line))
        else:
            if (in_field or in_list) and out[-1]:
                out.append("")
            in_field = in_list = False
            out.append(_inline(line))
    return out


def _process(app, what, name, obj, options, lines):
    if name.startswith("attnbook"):
        lines[:] = to_rst(list(lines), params=what in ("function", "method", "class"))


def setup(app):
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
