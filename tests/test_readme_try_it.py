"""The README's "Try it" shell block, run verbatim against ``orbchain serve`` on devnet, on SQLite and PostgreSQL.

Only ``BASE`` (the README's own variable for the address) points at the served port, and the environment
carries the test's database and data folder, as the operator's shell carries theirs. Every API answer
in the output must be a success: the README cannot drift from the API again.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

from .support import free_port, kill_group, orbchain_env, serve_process, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_SECONDS = 180  # bounds a hang only: the block waits for its invoice to be Paid (2 devnet blocks)


def try_it_block() -> str:
    """The first ``sh`` block after the README's "## Try it" heading."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Try it"):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_block_sets_its_address_once():
    block = try_it_block()
    assert block.startswith("BASE=${BASE:-http://127.0.0.1:8080}")
    assert "localhost:8080" not in block and "..." not in block and "<data." not in block  # nothing to guess


async def test_the_readme_try_it_block_runs_verbatim(db_url, tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    server = serve_process(db_url, tmp_path, port, 1, log=log, ORBCHAIN_ALLOW_PRIVATE_URLS="1")
    try:
        await wait_healthy(port, server, log=log)
        env = orbchain_env(db_url, tmp_path, BASE=f"http://127.0.0.1:{port}")
        done = await asyncio.to_thread(subprocess.run, ["bash", "-e", "-c", try_it_block()], cwd=ROOT, env=env,
                                       capture_output=True, text=True, timeout=SCRIPT_SECONDS)
    finally:
        kill_group(server)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    answers = re.findall(r'"error":(null|\{[^}]*\})', output)
    assert len(answers) >= 15 and set(answers) == {"null"}, output[-3000:]  # every API call answered OK
    assert '"balances":[{"coin":"BTC"' in output  # the README's invoice was paid and credited before the swap
    assert '"type":"white_label"' in output  # the split to the second merchant the block created
