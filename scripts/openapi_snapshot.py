"""Write (or check) tests/snapshots/openapi.json: the document a default server serves.

Run ``.venv/bin/python scripts/openapi_snapshot.py`` after changing the API on
purpose, and commit the snapshot with the change: its diff is the API change
a reviewer reads. ``--check`` exits 1 when the served document differs.

The server is the default app of the test suite (``make_config()``: development,
SQLite in a temp directory, every built-in plugin) and the document is taken
from ``GET /openapi.json``, as a client sees it. ``info.version`` is left out
(``VERSION_PLACEHOLDER``), so a release alone changes nothing here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from orbchain.core.infra.config import load_config
from orbchain.web.app import create_app

SNAPSHOT = Path(__file__).resolve().parent.parent / "tests" / "snapshots" / "openapi.json"
VERSION_PLACEHOLDER = "<orbchain version>"
REGENERATE = ".venv/bin/python scripts/openapi_snapshot.py"


def normalized(document: dict[str, Any]) -> dict[str, Any]:
    """The document as the snapshot keeps it: ``info.version`` replaced by a placeholder."""
    return {**document, "info": {**document.get("info", {}), "version": VERSION_PLACEHOLDER}}


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(normalized(document), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


async def served_document(directory: Path) -> dict[str, Any]:
    config = load_config(None, environ={}).with_overrides(
        server={"data_dir": str(directory / "var"), "environment": "development"},
        database={"url": f"sqlite+aiosqlite:///{directory / 'orbchain.db'}"},
        webhooks={"allow_private_urls": True},
    )
    client = TestClient(TestServer(create_app(config)))
    await client.start_server()
    try:
        response = await client.get("/openapi.json")
        assert response.status == 200, response.status
        return await response.json()
    finally:
        await client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="orbchain-openapi-") as directory:
        text = dumps(asyncio.run(served_document(Path(directory))))
    if args.check:
        same = SNAPSHOT.exists() and SNAPSHOT.read_text(encoding="utf-8") == text
        print("snapshot up to date" if same else f"snapshot differs: run {REGENERATE}")
        return 0 if same else 1
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
