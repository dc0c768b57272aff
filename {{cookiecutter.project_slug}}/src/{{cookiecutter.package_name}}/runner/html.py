"""report.html: the run report and every executed notebook, in one file a browser opens offline.

The report's markdown becomes HTML with mistune (nbconvert's own markdown library), its figures
are embedded as data URIs, and each executed notebook is converted by nbconvert's HTML exporter
(the JupyterLab look, images embedded) into a collapsible frame of its own, so the styles of the
notebooks and of the report never mix. A notebook that cannot be converted gets one sentence.
"""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path
from typing import Any

import mistune
import nbformat
from nbconvert import HTMLExporter

from ..artifacts import REPORT_FILE, REPORT_HTML
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
"""


def write_html(run_dir: Path, record: dict[str, Any]) -> Path:
    """Write report.html from report.md and the executed notebooks of the record."""
    markdown = (run_dir / REPORT_FILE).read_text(encoding="utf-8")
    body = mistune.create_markdown(plugins=["table"])(markdown)
    body = re.sub(r'src="([^":]+\.png)"', lambda m: f'src="{_data_uri(run_dir / m[1])}"', body)
    frames = [_notebook(run_dir, entry) for entry in record.get("notebooks", [])]
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Run {html.escape(run_dir.name)}"
        f"</title><style>{STYLE}</style></head><body>{body}<h2>Executed notebooks</h2>"
        f"{''.join(frames)}</body></html>"
    )
    path = run_dir / REPORT_HTML
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")  # a full disk keeps the old one
    try:
        temporary.write_text(page, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def _notebook(run_dir: Path, entry: dict[str, Any]) -> str:
    name, executed = entry["name"], entry.get("executed")
    summary = f"<summary>{html.escape(name)}: {html.escape(entry['status'])}</summary>"
    if not executed or not (run_dir / executed).is_file():
        return f"<details>{summary}<p>No executed notebook was kept.</p></details>"
    try:
        notebook = nbformat.read(run_dir / executed, as_version=4)
        page, _ = HTMLExporter(template_name="lab", embed_images=True).from_notebook_node(notebook)
    except Exception as error:  # a notebook nbconvert cannot read must not cost the report
        reason = html.escape(one_line(error))
        return f"<details>{summary}<p>Could not be converted: {reason}.</p></details>"
    frame = (
        f'<iframe title="{html.escape(name)}" srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )
    return f"<details>{summary}{frame}</details>"


def _data_uri(path: Path) -> str:
    try:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return path.name
    return f"data:image/png;base64,{data}"
