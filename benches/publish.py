"""`asv publish`, then make the dashboard work offline.

asv's `index.html` loads jQuery, Flot, Bootstrap and three small plugins from CDNs,
so on a machine without internet the page stays blank ("Can not determine
continental origin of swallow"). This runs `asv publish` (arguments are passed
on) and then copies the scripts from `asv_vendor/` (see its NOTICE.md) into the
published directory, pointing the page's tags at the copies.

    cd benches && ../.venv/bin/python publish.py && ../.venv/bin/asv preview
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCHES = Path(__file__).resolve().parent
VENDOR = BENCHES / "asv_vendor"

# CDN file name -> the local copy. Matched on the URL's last path component.
LOCAL_COPIES = {
    "jquery-3.3.1.min.js": "jquery-3.3.1.min.js",
    "jquery.flot.min.js": "jquery.flot-0.8.3.min.js",
    "jquery.flot.time.min.js": "jquery.flot-0.8.3.time.min.js",
    "jquery.flot.selection.min.js": "jquery.flot-0.8.3.selection.min.js",
    "jquery.flot.categories.min.js": "jquery.flot-0.8.3.categories.min.js",
    "jquery.flot.orderBars.js": "jquery.flot.orderBars.js",
    "stupidtable.min.js": "stupidtable.js",
    "md5.min.js": "md5.js",
    "bootstrap.min.js": "bootstrap-3.1.0.min.js",
    "bootstrap.min.css": "bootstrap-3.1.0.min.css",
}

# A <script src=...> or <link href=...> tag whose URL is remote.
_REMOTE_TAG = re.compile(r"<(script|link)\b[^>]*?\b(?:src|href)=\"(https?://[^\"]+)\"[^>]*>")


def make_offline(html_dir: Path) -> list[str]:
    """Points every remote script and stylesheet of `html_dir`'s pages at a local copy
    in `html_dir/vendor/`. Returns the URLs replaced; raises if one has no copy."""
    vendor = html_dir / "vendor"
    vendor.mkdir(exist_ok=True)
    replaced: list[str] = []
    for page in sorted(html_dir.glob("*.html")):
        text = page.read_text(encoding="utf-8")

        def local(m: re.Match[str]) -> str:
            tag, url = m.group(1), m.group(2)
            name = LOCAL_COPIES.get(url.rsplit("/", 1)[-1])
            if name is None:
                raise LookupError(f"{page.name} loads {url}, which has no local copy in {VENDOR}")
            shutil.copy2(VENDOR / name, vendor / name)
            replaced.append(url)
            if tag == "script":
                return f'<script src="vendor/{name}">'
            return f'<link rel="stylesheet" href="vendor/{name}">'

        text = _REMOTE_TAG.sub(local, text)
        page.write_text(text, encoding="utf-8")
    return replaced


def main(argv: list[str]) -> int:
    asv = Path(sys.executable).with_name("asv")
    subprocess.run([str(asv), "publish", *argv], cwd=BENCHES, check=True)
    html_dir = BENCHES / ".asv" / "html"
    replaced = make_offline(html_dir)
    print(f"{html_dir}: {len(replaced)} scripts and stylesheets served from vendor/ (works offline)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
