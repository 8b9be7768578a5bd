"""Metrics under ``orbchain serve --workers N`` (issue 22): every scrape reports all workers' requests.

A real supervisor with two worker processes on PostgreSQL (multiprocess
mode, core/infra/metrics.py): requests spread over both workers by the kernel,
then several scrapes, each on a fresh connection so different workers
answer; each must count every request, not its own share. On SQLite (one
process by design) the single process is checked the same way.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from .support import free_port, serve_process

SERVE_TIMEOUT = 60
TOKEN = "workers-metrics-token-42"
REQUESTS = 40


def _serve(db_url: str, tmp_path, port: int, workers: int):
    return serve_process(db_url, tmp_path, port, workers, ORBCHAIN_METRICS__TOKEN=TOKEN, PROMETHEUS_MULTIPROC_DIR=None)


def _requests_counted(text: str, route: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "orbchain_http_requests_total" and sample.labels["route"] == route:
                total += sample.value
    return total


async def _get(session: aiohttp.ClientSession, url: str, **headers: str) -> tuple[int, str, str]:
    async with session.get(url, headers={"Connection": "close", **headers}) as response:
        return response.status, await response.text(), response.headers.get("X-Worker", "")


async def test_every_scrape_counts_every_worker(db_url, tmp_path):
    workers = 2 if db_url.startswith("postgres") else 1
    port = free_port()
    proc = _serve(db_url, tmp_path, port, workers)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            deadline = time.monotonic() + SERVE_TIMEOUT
            while True:
                try:
                    await _get(session, f"{base}/health")
                    break
                except aiohttp.ClientConnectionError:
                    assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read().decode()[-3000:]
                    await asyncio.sleep(0.2)
            answered: set[str] = set()
            for _ in range(REQUESTS):
                status, _, worker = await _get(session, f"{base}/v1/common/currencies")
                assert status == 200
                answered.add(worker)
            if workers > 1:
                assert len(answered) == workers  # the load really was spread
            scraped_by: set[str] = set()
            for _ in range(12):
                status, text, worker = await _get(session, f"{base}/metrics", Authorization=f"Bearer {TOKEN}")
                assert status == 200, text
                scraped_by.add(worker)
                assert _requests_counted(text, "/v1/common/currencies") == REQUESTS
            if workers > 1:
                assert len(scraped_by) == workers  # both workers answered a scrape, both with the total
        if workers > 1:
            assert any(name.endswith(".db") for name in os.listdir(tmp_path / "var" / "metrics"))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=SERVE_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.stdout.close()
