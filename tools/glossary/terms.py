"""Read the glossary and find where chapters use (and link) its terms.

Shared by tests/test_apparatus.py and `python -m tools.glossary`
(tools/glossary/__main__.py).

A glossary entry is a term line followed by an indented definition in the
``{glossary}`` block of glossary.md. Its Chinese terms are written
``**中文**`` (with a dagger if the source articles do not use it) followed by
``*pinyin*``; its definition ends with "Introduced in {doc}`chapters/...`".

In a chapter, a *use* of a term is a whole-word, case-insensitive match of
the term or its plural in markdown prose, outside headings, code, math, roles,
link targets and directive fences. A *link* is a ``{term}`` role.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from tools.project import ROOT

GLOSSARY = ROOT / "glossary.md"
CJK = r"\u4e00-\u9fff"
ZH = re.compile(rf"\*\*([^*]*[{CJK}][^*]*)\*\*(†?)\s*\*([^*]+)\*")
TERM_ROLE = re.compile(r"\{term\}`([^`]*)`")
# Other forms the chapters use for a term (besides its plural)
ALIASES = {
    "attention cue": ["volitional cue", "non-volitional cue"],
    "kernel regression": ["Nadaraya–Watson", "Nadaraya-Watson"],
    "saturation": ["saturated", "saturates", "saturate"],
    "nonparametric attention pooling": ["parametric attention pooling"],
    "lookup": ["look-up"],
    "readout": ["unembedding"],
}


@dataclass
class Entry:
    term: str
    definition: str
    chinese: list[tuple[str, str, bool]] = field(default_factory=list)  # (中文, pinyin, in sources)
    chapter: str | None = None                                          # "chapters/02_soft_lookup"


def glossary_entries(path: Path = GLOSSARY) -> list[Entry]:
    text = path.read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if block is None:
        raise ValueError(f"{path} has no {{glossary}} block")
    entries: list[Entry] = []
    for line in block.group(1).splitlines():
        if line and not line.startswith(" "):
            entries.append(Entry(line.strip(), ""))
        elif line.strip():
            entries[-1].definition += line.strip() + " "
    for e in entries:
        e.chinese = [(zh, pinyin, not dagger) for zh, dagger, pinyin in ZH.findall(e.definition)]
        m = re.search(r"Introduced in\s+\{doc\}`(chapters/[^`]+)`", e.definition)
        e.chapter = m.group(1) if m else None
    return entries


def chinese_table_rows(path: Path = GLOSSARY) -> list[tuple[str, str, str, str]]:
    """Rows (中文, pinyin, English, term) of the 中文 → English table: the
    English the row shows (``{term}`post-LN <pre-LN>``` shows post-LN) and
    the entry it links to."""
    text = path.read_text(encoding="utf-8").split("(glossary-zh)=", 1)[1]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.search(f"[{CJK}]", cells[0]) and cells[1] != "pinyin":
            m = TERM_ROLE.search(cells[2])
            role = m.group(1) if m else cells[2]
            labelled = re.fullmatch(r"(.*?)\s*<(.*)>", role)
            label, target = labelled.groups() if labelled else (role, role)
            rows.append((cells[0], cells[1], label, target))
    return rows


def chinese_table(path: Path = GLOSSARY) -> list[tuple[str, str, str]]:
    """Rows (中文, pinyin, term) of the 中文 → English table."""
    return [(zh, pinyin, term) for zh, pinyin, _, term in chinese_table_rows(path)]


def english_context(entry: Entry, zh: str) -> str | None:
    """Where `entry` gives the English of its Chinese term `zh`: None when
    `zh` names the entry itself (its first Chinese term, or another name the
    definition introduces with "say" or "call": the d2l notes say **掩蔽**);
    otherwise the definition's words just before ``**zh**``, emphasis
    removed, which end with the English that `zh` translates
    ("A non-volitional cue" before **非自主性提示**)."""
    if zh == entry.chinese[0][0]:
        return None
    before = entry.definition[:entry.definition.index(f"**{zh}**")]
    before = re.sub(r"(?<!\*)\*(?!\*)", "", before).rstrip(" (,")
    if re.search(r"\b(?:say|says|call|calls)$", before):
        return None
    return " ".join(before.split())


#: one pinyin syllable: an initial, a vowel cluster, then n, ng or r when no
#: vowel follows (so "dàikuān" is dài|kuān and "xiànxìng" xiàn|xìng)
SYLLABLE = re.compile(r"(?:zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw])?[aeiouv]+"
                      r"(?:ng(?![aeiouv])|n(?![aeiouv])|r(?![aeiouv]))?|[a-z]+")
TONES = {"\u0304": "1", "\u0301": "2", "\u030c": "3", "\u0300": "4"}


def pinyin_key(pinyin: str) -> str:
    """Sort key in dictionary order: syllable by syllable, each by its letters
    and then its tone (qián before qiàn, so 前一词元头 sits with 前馈网络 and
    before 嵌入), the neutral tone last. Each syllable becomes its letters and
    a tone digit, "qian2kui4", which also sorts among English words; a word
    with no tone mark (softmax, K) stays whole, as if in the neutral tone."""
    out = []
    for word in pinyin.lower().replace("'", " ").split():
        nfd = unicodedata.normalize("NFD", word.replace("ü", "v"))
        letters = "".join(c for c in nfd if not unicodedata.combining(c))
        tone_at = {}  # index in letters -> tone digit
        i = -1
        for c in nfd:
            if unicodedata.combining(c):
                if c in TONES:
                    tone_at[i] = TONES[c]
            else:
                i += 1
        if not tone_at:  # a Latin word (softmax, K) or one neutral syllable
            out.append(letters + "5")
            continue
        for m in SYLLABLE.finditer(letters):
            tone = next((t for j, t in tone_at.items() if m.start() <= j < m.end()), "5")
            out.append(m.group() + tone)
    return "".join(out)


def term_pattern(term: str) -> re.Pattern:
    """Whole-word match of a term or its plural ('query' -> 'queries'),
    treating a space and a hyphen inside the term alike."""
    words = [re.escape(w) for w in re.split(r"[ -]", term)]
    last = words[-1]
    if term.endswith("y") and not term.endswith(("ey", "ay")):
        last = last[:-1] + "(?:y|ies)"
    else:
        last += "(?:e?s)?"
    return re.compile(r"(?<![\w-])" + r"(?:\s+|-)".join(words[:-1] + [last]) + r"(?![\w-])",
                      re.IGNORECASE)


def chapter_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


_HIDDEN = [
    re.compile(r"\{[\w:-]+\}`[^`]*`"),            # roles, including {term} and {glue:text}
    re.compile(r"``.*?``|`[^`\n]*`"),             # inline code
    re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S),  # math
    re.compile(r"\]\([^)]*\)"),                   # link targets
    re.compile(r'"[^"\n]*"|“[^”\n]*”'),           # quotations and titles are mentions, not uses
]


def prose(cell: str) -> str:
    """The cell with everything that is not prose blanked out (same length,
    newlines kept): code, math, roles, link targets, quotations, headings,
    labels, directive fences and options, and fenced code blocks."""
    blanked = cell
    for pattern in _HIDDEN:
        blanked = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), blanked)
    out = []
    fences: list[tuple[str, bool]] = []       # open fences: (marker, is code)
    for raw, line in zip(cell.split("\n"), blanked.split("\n"), strict=True):
        s = raw.strip()
        m = re.match(r"(`{3,}|:{3,})\s*(.*)$", s)
        keep = False
        if fences and fences[-1][1]:          # inside a code block
            if m and m.group(1) == fences[-1][0] and not m.group(2):
                fences.pop()
        elif m:
            if not m.group(2) and fences and fences[-1][0] == m.group(1):
                fences.pop()
            else:
                fences.append((m.group(1), not m.group(2).startswith("{")))
        else:
            keep = not (s.startswith("#") or re.match(r":[\w-]+:", s) or re.match(r"\(.*\)=$", s))
        out.append(line if keep else " " * len(line))
    return "\n".join(out)


@dataclass
class Use:
    cell: int        # index among the markdown cells
    start: int       # offsets into the cell's source
    end: int
    text: str        # the cell's source
    linked: bool     # a {term} role, or a bare use

    @property
    def excerpt(self) -> str:
        return " ".join(self.text[max(0, self.start - 40):self.end + 40].split())


def first_uses(cells: list[str], terms: list[str]) -> dict[str, Use]:
    """For each term used in the prose, its first use (linked or not), keyed
    by the lower-cased term. A use inside a longer term's match ('dot product'
    inside 'scaled dot-product attention') belongs to the longer term."""
    forms = [(f, t) for t in terms for f in [t, *ALIASES.get(t, [])]]
    patterns = [(term_pattern(f), t) for f, t in sorted(forms, key=lambda ft: -len(ft[0]))]
    found: dict[str, Use] = {}
    for i, cell in enumerate(cells):
        text = prose(cell)
        events = []   # (start, end, term, linked)
        for m in TERM_ROLE.finditer(cell):
            target = re.sub(r".*<(.*)>", r"\1", m.group(1)).strip().lower()
            events.append((m.start(), m.end(), target, True))
        taken: list[tuple[int, int]] = []
        for pattern, t in patterns:
            for m in pattern.finditer(text):
                if any(a <= m.start() < b for a, b in taken):
                    continue
                taken.append((m.start(), m.end()))
                events.append((m.start(), m.end(), t.lower(), False))
        for start, end, t, linked in sorted(events):
            if t not in found:
                found[t] = Use(i, start, end, cell, linked)
    return found
