"""CPU per request of the hot routes against the committed baseline (issue 47): a bench figure, never a test.

Runs ``bench_hotpath.py`` (default: PostgreSQL, one process, no transfers;
any other arguments are passed through) with ``--json``, or reads a run
already made (``--run FILE``), and compares each route's CPU microseconds
per request with ``bench/baseline_hotpath.json``. CPU per request moves far
less than requests/s on a shared machine, but it still moves with the
machine's load, so each route is also compared as a multiple of the bare
aiohttp app's CPU per request measured in the same run. Every route more
than 10 % worse on that multiple is printed; the exit status stays 0 (a
loaded machine must not fail anything). ``--save`` makes the run the new
baseline (commit it with the change that earned it).

    .venv/bin/python bench/compare.py [--run FILE] [--save] [bench_hotpath arguments ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline_hotpath.json"
WORSE = 0.10
DEFAULT_ARGS = ["--databases", "postgresql", "--workers", "1", "--transfers", "0", "--rounds", "3"]


def bare_cpu(rows: list[dict[str, Any]], verb: str) -> float | None:
    """The bare app's CPU per request for ``verb``: the mean of its start and end figures."""
    figures = [r["cpu_us"] for r in rows if r["label"].startswith(f"bare aiohttp {verb}") and r["cpu_us"]]
    return sum(figures) / len(figures) if figures else None


def relative(run: dict[str, Any]) -> dict[str, tuple[float, float | None]]:
    """label -> (CPU us per request, that as a multiple of the bare app's for the same verb)."""
    rows = run["rows"]
    bare = {verb: bare_cpu(rows, verb) for verb in ("GET", "POST")}
    out = {}
    for row in rows:
        if row["label"].startswith("bare aiohttp") or not row["cpu_us"]:
            continue
        verb = "POST" if row["label"].startswith("POST") else "GET"
        out[row["label"]] = (row["cpu_us"], row["cpu_us"] / bare[verb] if bare[verb] else None)
    return out


def compare(baseline: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """One line per route; those more than ``WORSE`` worse (as a multiple of bare) are marked."""
    before, now = relative(baseline), relative(run)
    lines = []
    for label, (cpu, multiple) in now.items():
        if label not in before:
            lines.append(f"  new    {label}: {cpu:,.0f} us/request (no baseline)")
            continue
        old_cpu, old_multiple = before[label]
        change = (multiple / old_multiple - 1) if multiple and old_multiple else cpu / old_cpu - 1
        mark = "WORSE " if change > WORSE else "      "
        lines.append(f"  {mark} {label}: {cpu:,.0f} us/request (baseline {old_cpu:,.0f}),"
                     f" {multiple or 0:.2f}x bare (baseline {old_multiple or 0:.2f}x): {change:+.0%}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a bench_hotpath.py --json file already made")
    parser.add_argument("--save", action="store_true", help="write the run as the new baseline")
    args, passed = parser.parse_known_args()
    if args.run:
        run = json.loads(args.run.read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run.json"
            command = [sys.executable, str(HERE / "bench_hotpath.py"), *(passed or DEFAULT_ARGS), "--json", str(out)]
            subprocess.run(command, check=True)
            run = json.loads(out.read_text())
    if args.save:
        BASELINE.write_text(json.dumps(run, indent=1) + "\n")
        print(f"baseline written: {BASELINE}")
        return 0
    baseline = json.loads(BASELINE.read_text())
    lines = compare(baseline, run)
    worse = [line for line in lines if "WORSE" in line]
    print(f"CPU per request against {BASELINE.name} (machine load then: {baseline['machine_load']};"
          f" now: {run['machine_load']})")
    print("\n".join(lines))
    print(f"{len(worse)} route(s) more than {WORSE:.0%} worse" if worse else "no route more than 10 % worse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
