"""report.html: the run report and every executed notebook, in one file a browser opens offline.

The report's markdown becomes HTML with mistune (nbconvert's own markdown library), with a table
of contents from mistune's toc hook; its figures are embedded as data URIs. Each executed notebook
is converted by nbconvert's HTML exporter (the JupyterLab look, images embedded) into a collapsible
frame of its own, so the styles of the notebooks and of the report never mix. nbconvert's lab
template loads require.js, MathJax, Mermaid and the widget manager from a CDN; the notebooks use
none of them (no widgets, no math, no diagrams), so OFFLINE drops those blocks and the page asks
the network for nothing. The report's links to executed notebooks jump to their frames. A notebook
that cannot be converted gets one sentence. The file is written whole, then renamed into place.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

import jinja2
import mistune
import nbformat
from mistune.toc import add_toc_hook, render_toc_ul
from nbconvert import HTMLExporter

from ..artifacts import REPORT_FILE, REPORT_HTML
from ..writes import write_text
from .profile import one_line

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #1f2328; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid #d0d7de; padding: .25rem .6rem; text-align: left; vertical-align: top; }
img { max-width: 100%; border: 1px solid #d0d7de; }
code { background: #f6f8fa; padding: 0 .2rem; }
details { margin: .5rem 0; } summary { cursor: pointer; font-weight: 600; }
iframe { width: 100%; height: 80vh; border: 1px solid #d0d7de; }
nav.toc { border: 1px solid #d0d7de; padding: .25rem 1rem; background: #f6f8fa; }
nav.toc ul { margin: .2rem 0; }
"""
# nbconvert's lab template without the blocks that load scripts from a CDN.
OFFLINE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
# What to do when report.html cannot be written (a full disk, a read-only folder).
AGAIN = "write it again with `report --run-dir` on that folder"
# A jump to a notebook's frame (a link, or the address bar) opens it.
OPEN_TARGET = """<script>
function openTarget() {
  var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (target && target.tagName === "DETAILS") { target.open = true; target.scrollIntoView(); }
}
addEventListener("hashchange", openTarget); openTarget();
</script>"""


def write_html(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write report.html from report.md and the executed notebooks of the record."""
    markdown = mistune.create_markdown(plugins=["table"])
    add_toc_hook(markdown, min_level=2, max_level=3)
    body, state = markdown.parse((run_dir / REPORT_FILE).read_text(encoding="utf-8"))
    body = re.sub(r'src="([^":]+\.png)"', lambda m: f'src="{_data_uri(run_dir / m[1])}"', body)
    entries = [e for e in record.get("notebooks", []) if e.get("executed")]
    anchors = {entry["executed"]: anchor(entry["executed"]) for entry in entries}
    body = re.sub(
        r'href="([^"#:]+\.ipynb)"',
        lambda m: f'href="#{anchors[m[1]]}"' if m[1] in anchors else m[0],
        str(body),
    )
    exporter = _exporter()  # one for all: its templates compile once, not once per notebook
    frames = [_notebook(run_dir, entry, exporter) for entry in record.get("notebooks", [])]
    toc = render_toc_ul(state.env.get("toc_items", []))
    notebooks = "".join(
        f'<li><a href="#{anchors[e["executed"]]}">{html.escape(e["name"])}</a></li>'
        for e in entries
    )
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Run {html.escape(run_dir.name)}"
        f"</title><style>{STYLE}</style></head><body>"
        f"<nav class='toc'><strong>Contents</strong>{toc}"
        f"<ul><li><a href='#executed-notebooks'>Executed notebooks</a><ul>{notebooks}</ul></li>"
        f"</ul></nav>{body}<h2 id='executed-notebooks'>Executed notebooks</h2>"
        f"{''.join(frames)}{OPEN_TARGET}</body></html>"
    )
    return write_text(run_dir / REPORT_HTML, page, then=AGAIN)


def anchor(executed: str) -> str:
    """The id of an executed notebook's frame: notebooks/03_train.ipynb → notebook-03_train."""
    return "notebook-" + re.sub(r"[^\w.-]+", "-", Path(executed).stem)


def _notebook(run_dir: Path, entry: dict[str, Any], exporter: HTMLExporter) -> str:
    name, executed = entry["name"], entry.get("executed")
    summary = f"<summary>{html.escape(name)}: {html.escape(entry['status'])}</summary>"
    if not executed or not (run_dir / executed).is_file():
        return f"<details>{summary}<p>No executed notebook was kept.</p></details>"
    opened = f'<details id="{anchor(executed)}">{summary}'
    try:
        notebook = nbformat.read(run_dir / executed, as_version=4)
        page, _ = exporter.from_notebook_node(notebook)
    except Exception as error:  # a notebook nbconvert cannot read must not cost the report
        return f"{opened}<p>Could not be converted: {html.escape(one_line(error))}.</p></details>"
    frame = (
        f'<iframe title="{html.escape(name)}" srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )
    return f"{opened}{frame}</details>"


def _exporter() -> HTMLExporter:
    return HTMLExporter(
        template_name="lab",
        template_file="offline.html.j2",
        extra_loaders=[jinja2.DictLoader({"offline.html.j2": OFFLINE})],
        embed_images=True,
    )


def _data_uri(path: Path) -> str:
    try:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return path.name
    return f"data:image/png;base64,{data}"
