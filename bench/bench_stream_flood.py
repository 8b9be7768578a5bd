"""Live streams against a process's open-file limit: the figures of issue 42 item 5, measured.

Run: ``.venv/bin/python bench/bench_stream_flood.py [--nofile 1024] [--addresses 125] [--per-address 8]
[--pages 125] [--workers 1] [--database URL]`` (``make bench`` runs it with its defaults).

It starts ``orbchain serve`` as an operator would (development, its own data
folder; SQLite unless ``--database`` names a PostgreSQL one) with
``RLIMIT_NOFILE`` set to ``--nofile`` (soft and hard, as the shipped unit had
it before ``LimitNOFILE``), creates ``--pages`` invoices, and opens
``--addresses`` x ``--per-address`` ``GET /pay/{id}/events`` streams, each
address one loopback address (127.0.0.2, 127.0.0.3, ...), spread over the
invoices. While they are open it asks ``/health``, a payment page and the
sign-in, then every client leaves and it measures how long a new stream waits
for a slot. It prints what each stream got (200, 429, 503, nothing), the
probes' answers, and the number and size of the ERROR lines the log took.

Figures depend on the machine and the limit; the issue's were taken with 1,024.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import aiohttp

from bench_hotpath import free_port, wait_healthy  # a sibling script: bench/ is the script's folder

STATUS_WAIT = 10.0  # seconds a stream's or a probe's answer may take before it counts as "no answer"
PROBES = 5
JSON = {"Content-Type": "application/json"}


@contextmanager
def serving(folder: Path, port: int, nofile: int | None = None, workers: int = 1,
            database: str | None = None) -> Iterator[subprocess.Popen]:
    """``orbchain serve`` in development on ``folder``'s data (SQLite unless ``database``), its log in
    ``folder/serve.log``, with ``RLIMIT_NOFILE`` set to ``nofile`` (soft and hard) when given; stopped after."""
    env = {**os.environ, "ORBCHAIN_ENVIRONMENT": "development", "ORBCHAIN_DATA_DIR": str(folder / "var"),
           "ORBCHAIN_DATABASE_URL": database or f"sqlite+aiosqlite:///{folder / 'bench.db'}",
           "ORBCHAIN_RATE_LIMITS__WRITE_PER_MINUTE": "100000", "PYTHONUNBUFFERED": "1"}
    env.pop("ORBCHAIN_CONFIG", None)

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with open(folder / "serve.log", "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "orbchain", "serve", "--host", "127.0.0.1", "--port",
                                   str(port), "--workers", str(workers)], env=env, cwd=folder, stdout=log,
                                  stderr=subprocess.STDOUT, preexec_fn=limit, start_new_session=True)
    try:
        yield server
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)


async def invoices(base: str, count: int) -> tuple[list[str], str]:
    """``count`` invoices of a new merchant; their track ids and the merchant's password-protected e-mail."""
    email = "flood@example.com"
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/dashboard/auth/signup", json={"email": email, "password": "s3cret-pass"}) as r:
            key = (await r.json())["data"]["api_keys"]["merchant_api_key"]
        tracks = []
        for _ in range(count):
            async with session.post(f"{base}/v1/payment/invoice", headers={"merchant_api_key": key},
                                    json={"amount": "25", "currency": "USD"}) as r:
                tracks.append((await r.json())["data"]["track_id"])
    return tracks, email


async def open_stream(port: int, source: str, track_id: str) -> tuple[str, Any]:
    """(what the stream got: its status, or "no answer"/"refused", the open writer to close later or None)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), STATUS_WAIT)
    except (OSError, TimeoutError):
        return "refused", None
    writer.write(f"GET /pay/{track_id}/events HTTP/1.1\r\nHost: flood\r\nAccept: text/event-stream\r\n\r\n".encode())
    try:
        line = await asyncio.wait_for(reader.readline(), STATUS_WAIT)
    except (OSError, TimeoutError):
        return "no answer", writer
    if not line:
        writer.close()
        return "closed", None
    status = line.split()[1].decode()
    if status != "200":
        try:
            body = await asyncio.wait_for(reader.read(4096), STATUS_WAIT)
        except (OSError, TimeoutError):
            body = b""
        writer.close()
        message = re.search(rb'"message":"([^"]*)"', body)
        return f"{status} {message.group(1).decode() if message else ''}".strip(), None
    return status, writer


async def probe(session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> str:
    started = time.perf_counter()
    try:
        async with session.request(method, url, timeout=aiohttp.ClientTimeout(total=STATUS_WAIT), **kwargs) as r:
            await r.read()
            return f"{r.status} in {(time.perf_counter() - started) * 1000:.0f} ms"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"{type(exc).__name__} after {time.perf_counter() - started:.1f} s"


async def probes(base: str, track_id: str, email: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"/health": [], "/pay/{id}": [], "sign-in": []}
    async with aiohttp.ClientSession() as session:
        for _ in range(PROBES):
            found["/health"].append(await probe(session, "GET", f"{base}/health"))
            found["/pay/{id}"].append(await probe(session, "GET", f"{base}/pay/{track_id}"))
            found["sign-in"].append(await probe(session, "POST", f"{base}/dashboard/auth/login", headers=JSON,
                                                json={"email": email, "password": "s3cret-pass"}))
    return found


async def slot_after_leaving(port: int, track_id: str) -> str:
    """How long after every client left a new stream (from a fresh address) waits to be served."""
    started = time.perf_counter()
    while time.perf_counter() - started < 60:
        status, writer = await open_stream(port, "127.0.9.250", track_id)  # an address the flood did not use
        if writer is not None:
            writer.close()
        if status == "200":
            return f"served {time.perf_counter() - started:.2f} s after every client left"
        await asyncio.sleep(0.1)
    return "still refused 60 s after every client left"


def open_files(pid: int) -> list[int]:
    """Open files of ``pid`` and of its children (the workers), from /proc."""
    pids = [pid] + [int(p) for p in subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                                                   text=True).stdout.split()]
    return [len(os.listdir(f"/proc/{p}/fd")) for p in pids if os.path.exists(f"/proc/{p}/fd")]


def error_lines(log: Path) -> tuple[int, int]:
    count = size = 0
    with open(log, "rb") as lines:
        for line in lines:
            if b"ERROR" in line:
                count += 1
                size += len(line)
    return count, size


async def flood(args: argparse.Namespace, folder: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serving(folder, port, args.nofile, args.workers, args.database) as server:
        await wait_healthy(base, server, folder / "serve.log")
        tracks, email = await invoices(base, args.pages)
        print(f"orbchain serve, {args.workers} worker(s), RLIMIT_NOFILE {args.nofile}:"
              f" {args.addresses} addresses x {args.per_address} streams over {args.pages} invoice(s)")
        started = time.perf_counter()
        gate = asyncio.Semaphore(64)

        async def one(index: int) -> tuple[str, Any]:
            address = index // args.per_address
            async with gate:
                return await open_stream(port, f"127.0.{address // 250}.{address % 250 + 2}",
                                         tracks[index % len(tracks)])

        opened = await asyncio.gather(*(one(i) for i in range(args.addresses * args.per_address)))
        print(f"  streams: {dict(Counter(status for status, _ in opened))} in {time.perf_counter() - started:.1f} s;"
              f" files open in the server's processes: {open_files(server.pid)}")
        for name, answers in (await probes(base, tracks[0], email)).items():
            print(f"  {name:10} under the flood: {', '.join(answers)}")
        for _, writer in opened:
            if writer is not None:
                writer.close()
        print(f"  a new stream: {await slot_after_leaving(port, tracks[0])}")
        count, size = error_lines(folder / "serve.log")
        print(f"  log: {count} ERROR lines, {size / 1e6:.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nofile", type=int, default=1024)
    parser.add_argument("--addresses", type=int, default=125)
    parser.add_argument("--per-address", type=int, default=8)
    parser.add_argument("--pages", type=int, default=125)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database", help="a PostgreSQL URL (default: SQLite in a temporary folder)")
    parser.add_argument("--keep", help="a folder to keep the server's data and log in (default: a temporary one)")
    args = parser.parse_args()
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        asyncio.run(flood(args, Path(args.keep)))
        return
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(flood(args, Path(folder)))


if __name__ == "__main__":
    main()
