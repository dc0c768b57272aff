"""How long a command stays silent: run it, stamp each line it prints, report the longest gaps.

    python tests/output_gaps.py [--show N] [--limit S] -- <command ...>

The command's stdout and stderr are read together, as a CI log would show them (not a terminal:
the package's progress prints whole lines there). Every line is echoed with its time since the
start and the gap before it; the end lists the N longest gaps with the line that ended each. Exit
status: the command's own, or 3 when it succeeded but a gap was longer than --limit seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=5, help="how many of the longest gaps to list")
    parser.add_argument("--limit", type=float, default=10.0, help="the longest gap allowed (s)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    start = last = time.monotonic()
    gaps: list[tuple[float, float, str]] = []  # (gap, at, the line that ended it)
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as process:
        assert process.stdout is not None
        for text in process.stdout:
            now = time.monotonic()
            gap, at = now - last, now - start
            gaps.append((gap, at, text.rstrip()))
            print(f"{at:7.1f}s  +{gap:5.1f}s  {text.rstrip()}", flush=True)
            last = now
    end = time.monotonic()
    gaps.append((end - last, end - start, "(the command's exit)"))
    longest = sorted(gaps, reverse=True)[: args.show]
    print(f"\n{len(gaps) - 1} lines in {end - start:.1f} s; the {len(longest)} longest gaps:")
    for gap, at, text in longest:
        print(f"  {gap:6.2f} s before the line at {at:7.1f} s: {text[:90]}")
    if process.returncode:
        return process.returncode
    return 3 if longest and longest[0][0] > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
