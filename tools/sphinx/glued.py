"""Sphinx extension: a glued negative number is written with a minus sign.

The prose writes negative numbers with the minus sign U+2212 ("scores
[4, −1, 2.1]"), as KaTeX does in formulas. A number the ``{glue:text}`` role
fills in is Python's ``format``, which writes the hyphen-minus U+002D
("-0.70"): shorter than a minus, and in the Chinese edition's fonts hardly
longer than a full stop. In every glued text (myst-nb's ``pasted-text``
inline node), a hyphen-minus that starts a number, at the start or after a
space or an opening bracket, becomes U+2212. An exponent ("4.54e-05") and a
hyphen inside a word stay as they are. Both editions.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: a hyphen-minus that starts a number: at the start of the text, or after
#: whitespace or an opening bracket, and followed by a digit or a point
NEGATIVE = re.compile(r"(?:(?<=^)|(?<=[\s(\[{]))-(?=[\d.])")
MINUS = "\u2212"


def with_minus_signs(text: str) -> str:
    """`text` with each hyphen-minus that starts a number made a minus sign."""
    return NEGATIVE.sub(MINUS, text)


class GluedMinus(SphinxPostTransform):
    default_priority = 900

    def run(self, **kwargs) -> None:
        for node in self.document.findall(nodes.inline):
            if "pasted-text" not in node.get("classes", ()):
                continue
            for text in list(node.findall(nodes.Text)):
                new = with_minus_signs(str(text))
                if new != str(text):
                    text.parent.replace(text, nodes.Text(new))


def setup(app):
    app.add_post_transform(GluedMinus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
