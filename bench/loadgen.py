"""Drive one URL with N connections for a few seconds: wrk when installed, else an asyncio client.

wrk (Debian package ``wrk``) is preferred: written in C, it leaves the CPU
to the servers under test, so the bare baseline is not capped by the
client. Without it the benchmark still runs (no install step needed) with
the aiohttp client below, which tops out at a few thousand requests a
second on one core; the output names which generator measured.

Both report the same things: requests per second, p99 latency and the
number of answers that were not 2xx/3xx (a benchmark that measured errors
must say so).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp


@dataclass(frozen=True)
class Load:
    """One measurement: ``rps`` requests/s, ``p99_ms`` latency, ``errors`` non-2xx/3xx or failed requests."""

    rps: float
    p99_ms: float
    errors: int
    requests: int
    cpu_us: float = 0.0  # the server's CPU time per request, when the caller measured it


def generator_name() -> str:
    return "wrk" if shutil.which("wrk") else "asyncio client (wrk not installed)"


def run(url: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: dict | None = None,
        connections: int = 50, seconds: float = 5.0) -> Load:
    """Load ``url`` for ``seconds`` with ``connections`` open connections."""
    if shutil.which("wrk"):
        return _wrk(url, method, headers or {}, body, connections, seconds)
    return asyncio.run(_asyncio_load(url, method, headers or {}, body, connections, seconds))


# -- wrk ---------------------------------------------------------------------------------------


def _lua(method: str, headers: dict[str, str], body: dict | None) -> str:
    lines = [f"wrk.method = {json.dumps(method)}"]
    for name, value in headers.items():
        lines.append(f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}")
    if body is not None:
        lines.append('wrk.headers["Content-Type"] = "application/json"')
        lines.append(f"wrk.body = {json.dumps(json.dumps(body))}")
    return "\n".join(lines) + "\n"


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not match:
        raise ValueError(f"unreadable wrk latency {text!r}")
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


def parse_wrk(output: str) -> Load:
    """Requests/s, p99, errors and count from ``wrk --latency`` output."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"^\s*99%\s+(\S+)", output, re.M)
    total = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    errors = 0
    for pattern in (r"Non-2xx or 3xx responses:\s+(\d+)",):
        found = re.search(pattern, output)
        if found:
            errors += int(found.group(1))
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if socket_errors:
        errors += sum(int(n) for n in socket_errors.groups())
    return Load(rps, _ms(p99.group(1)) if p99 else float("nan"), errors, total)


def _wrk(url: str, method: str, headers: dict[str, str], body: dict | None, connections: int,
         seconds: float) -> Load:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_lua(method, headers, body))
    try:
        threads = min(2, connections)
        result = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
             "--timeout", "10s", "-s", script.name, url],
            capture_output=True, text=True, timeout=seconds + 60,
        )
    finally:
        Path(script.name).unlink(missing_ok=True)
    if result.returncode != 0:
        raise RuntimeError(f"wrk failed: {result.stderr or result.stdout}")
    return parse_wrk(result.stdout)


# -- asyncio fallback -------------------------------------------------------------------------------


async def _asyncio_load(url: str, method: str, headers: dict[str, str], body: dict | None, connections: int,
                        seconds: float) -> Load:
    latencies: list[float] = []
    errors = 0
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        headers = {**headers, "Content-Type": "application/json"}
    deadline = time.perf_counter() + seconds

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal errors
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                async with session.request(method, url, headers=headers, data=data,
                                           allow_redirects=False) as response:
                    await response.read()
                    if response.status >= 400:
                        errors += 1
            except (TimeoutError, aiohttp.ClientError):
                errors += 1
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        started = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(connections)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else float("nan")
    return Load(len(latencies) / elapsed, p99, errors, len(latencies))
