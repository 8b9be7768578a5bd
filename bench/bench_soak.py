"""``make bench``'s soak: bench/soak.py for three minutes with its default faults (PostgreSQL, as the soak).

Prints the soak's report: its verdict (``ok``: every error explained by a
fault, nothing lost, credited once, ledger clean) and the figures kept for
docs/decisions.md, which no test asserts: throughput, p50/p99, payment
creates and devnet blocks a second across the two hosts, each process's RSS
growth after the warm-up, and the errors still met after a fault's window
plus its grace. Arguments are bench/soak.py's (``--seconds 3600`` for the
hour).
"""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).with_name("soak.py")), run_name="__main__")
