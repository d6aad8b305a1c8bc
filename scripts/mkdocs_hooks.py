"""MkDocs hooks for the documentation site (mkdocs.yml).

The README is the site's home page: it is added as `index.md`, its links into `docs/`
made relative to the site. Pages link back to it as `../README.md` (which works where
the Markdown is read on its own); those links are pointed at the home page.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
_DOCS_LINK = re.compile(r"\]\(docs/")


def on_files(files: Files, config) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=_DOCS_LINK.sub("](", readme)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    depth = page.file.src_uri.count("/")
    readme = "../" * (depth + 1) + "README.md"
    home = "../" * depth + "index.md"
    return markdown.replace(f"]({readme}", f"]({home}")
