"""Connections that trickle their request heads: how long the gateway holds them (issue 42 item 6), measured.

Run: ``.venv/bin/python bench/bench_slow_clients.py [--connections 1000] [--addresses 10] [--watch 60]``
(``make bench`` runs it with its defaults).

It starts ``orbchain serve`` (development, SQLite, defaults: no proxy in front)
and opens ``--connections`` connections from ``--addresses`` loopback
addresses, each sending a byte of a request head every second and never
finishing it, plus one that sends a partial request line and then nothing.
For ``--watch`` seconds it notes when the server closes each, and asks
``/health`` meanwhile. It prints how many were closed at once (the
per-address cap), how many after a while (the head deadline) and when, how
many were still open at the end, and the health answers.

Figures depend on the machine; the issue's were 100 s for the idle partial line and 90 s for 1,000
trickling connections, both still open when the attacker stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from bench_hotpath import free_port, wait_healthy  # sibling scripts: bench/ is the script's folder
from bench_stream_flood import serving

HEAD = b"GET /health HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"a" * 10_000


async def slow_client(port: int, source: str, watch: float, trickle: bool) -> float | None:  # float ok: seconds
    """Seconds until the server closed the connection, or None when it was still open after ``watch``."""
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError:
        return 0.0
    sent = HEAD[:8]
    writer.write(sent)
    position = len(sent)

    async def feed() -> None:
        nonlocal position
        while trickle and position < len(HEAD):
            await asyncio.sleep(1)
            writer.write(HEAD[position:position + 1])
            position += 1

    feeding = asyncio.create_task(feed())
    try:
        await asyncio.wait_for(reader.read(), watch)
        return time.perf_counter() - started
    except (TimeoutError, OSError):
        return None if time.perf_counter() - started >= watch - 0.5 else time.perf_counter() - started
    finally:
        feeding.cancel()
        writer.close()


async def health_meanwhile(base: str, watch: float) -> list[str]:
    answers = []
    async with aiohttp.ClientSession() as session:
        for _ in range(max(1, int(watch // 10))):
            started = time.perf_counter()
            try:
                async with session.get(f"{base}/health", timeout=aiohttp.ClientTimeout(total=10)) as r:
                    answers.append(f"{r.status} in {(time.perf_counter() - started) * 1000:.0f} ms")
            except (aiohttp.ClientError, TimeoutError) as exc:
                answers.append(type(exc).__name__)
            await asyncio.sleep(10)
    return answers


async def run(args: argparse.Namespace, folder: Path) -> None:
    port = free_port()
    with serving(folder, port) as server:
        await wait_healthy(f"http://127.0.0.1:{port}", server, folder / "serve.log")
        idle = asyncio.create_task(slow_client(port, "127.0.3.250", args.watch, trickle=False))
        clients = [asyncio.create_task(slow_client(port, f"127.0.3.{i % args.addresses + 1}", args.watch, True))
                   for i in range(args.connections)]
        health = await health_meanwhile(f"http://127.0.0.1:{port}", args.watch)
        closed = [seconds for seconds in await asyncio.gather(*clients)]
        at_once = [s for s in closed if s is not None and s < 1]
        later = sorted(s for s in closed if s is not None and s >= 1)
        print(f"orbchain serve: {args.connections} connections trickling a head from {args.addresses} addresses,"
              f" watched {args.watch:.0f} s")
        print(f"  closed at once: {len(at_once)}; closed later: {len(later)}"
              + (f" (after {later[0]:.1f} to {later[-1]:.1f} s, median {statistics.median(later):.1f} s)"
                 if later else "")
              + f"; still open at the end: {closed.count(None)}")
        idle_closed = await idle
        idle_end = "still open" if idle_closed is None else f"closed after {idle_closed:.1f} s"
        print(f"  an idle partial request line: {idle_end}")
        print(f"  /health meanwhile: {', '.join(health)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--addresses", type=int, default=10)
    parser.add_argument("--watch", type=float, default=60.0)  # float ok: seconds
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(args, Path(folder)))


if __name__ == "__main__":
    main()
