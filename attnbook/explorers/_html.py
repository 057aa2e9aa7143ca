"""The HTML of a kernel-free explorer: a slider, its value, and an image that
shows the frame of that value, with its alt text (attnbook.explorers.explorer's
`Explorer.to_html` and the book's build use it)."""
from __future__ import annotations

import base64
import hashlib
import html
import json
import struct


def script_json(strings: list[str]) -> str:
    """JSON for a <script> element, whose text the browser does not unescape: an
    "&lt;" there would reach JSON.parse as is, so "<" is written "\\u003c"
    instead (which also keeps a "</script>" in a label from closing the element)."""
    return json.dumps(strings).replace("<", "\\u003c")


def slider_html(frames: list[tuple[bytes, str]], name: str, labels: list[str],
                description: str, index: int) -> str:
    """The kernel-free slider. The <img> shows the current frame with its
    alt text and its size (so the page does not shift when it arrives, and
    works without JavaScript); the other frames are loaded when the
    explorer comes within a screen of the viewport, after the page has
    loaded, or when the reader first touches the slider. In the book,
    `tools.sphinx.frames` writes every frame to a file and puts its URL
    where the data URI was, and `tools.sphinx.zoom` puts the <img> in a
    link to its file (one tap opens it at full size on a phone), which the
    script keeps pointing at the frame shown."""
    uris = ["data:image/png;base64," + base64.b64encode(f).decode() for f, _ in frames]
    alts = [a for _, a in frames]
    width, height = struct.unpack(">II", frames[index][0][16:24])   # PNG IHDR
    uid = "attnx-" + hashlib.sha1((name + uris[0]).encode()).hexdigest()[:10]
    alt = html.escape(alts[index], quote=True)
    lead = html.escape(description, quote=True)
    return f"""<div class="attn-explorer" id="{uid}" data-alt-lead="{lead}">
<div class="attn-controls"><label for="{uid}-r">{html.escape(name)}</label>
<input type="range" id="{uid}-r" min="0" max="{len(uris) - 1}" step="1" value="{index}" \
aria-valuetext="{html.escape(labels[index], quote=True)}">
<output for="{uid}-r" id="{uid}-o" aria-live="polite">{html.escape(labels[index])}</output></div>
<img id="{uid}-i" src="{uris[index]}" width="{width}" height="{height}" loading="lazy" \
alt="{alt}">
<script type="application/json" id="{uid}-f">{json.dumps(uris)}</script>
<script type="application/json" id="{uid}-l">{script_json(labels)}</script>
<script type="application/json" id="{uid}-a">{script_json(alts)}</script>
<script>(function () {{
  var id = "{uid}", box = document.getElementById(id), r = document.getElementById(id + "-r"),
      o = document.getElementById(id + "-o"), im = document.getElementById(id + "-i"),
      f = JSON.parse(document.getElementById(id + "-f").textContent),
      l = JSON.parse(document.getElementById(id + "-l").textContent),
      a = JSON.parse(document.getElementById(id + "-a").textContent), kept = null;
  function load() {{ if (kept) return; kept = f.map(function (u) {{
                       var p = new Image(); p.src = u; return p; }}); }}
  function show() {{ load(); var k = +r.value; im.src = f[k]; im.alt = a[k]; o.textContent = l[k];
                     r.setAttribute("aria-valuetext", l[k]);
                     if (im.parentNode.tagName === "A") im.parentNode.href = f[k]; }}
  function watch() {{
    if (!window.IntersectionObserver) return load();
    var seen = new IntersectionObserver(function (es) {{
      if (es[0].isIntersecting) {{ seen.disconnect(); load(); }} }}, {{rootMargin: "100% 0px"}});
    seen.observe(box);
  }}
  r.addEventListener("input", show); r.addEventListener("change", show);
  r.addEventListener("focus", load); r.addEventListener("pointerdown", load);
  if (document.readyState === "complete") watch(); else window.addEventListener("load", watch);
}})();</script>
</div>"""
