#!/usr/bin/env python3
"""Per-request differences of two callgrind outputs of the same replay.

Two runs of `palisade bench engine` under callgrind with N1 and N2 iterations
(`KEEP_CG=DIR scripts/instructions-steady.sh` keeps them) differ by N2 - N1
requests: start-up, compilation and warm-up cancel out, and every count below is
(count in B - count in A) / N, with N the number of requests between them.

Usage:
  callgrind-diff.py functions A B N [TOP]      self instructions per function
  callgrind-diff.py calls A B N [SUBSTRING]    calls per function (as callee)
  callgrind-diff.py lines A B N FILE [MIN]     self instructions per source line
                                               of the files whose path holds FILE

`functions` and `lines` read `callgrind_annotate`'s output (valgrind's package);
`calls` reads the raw files. Code inlined from the standard library has no
source here: its lines show under the caller's function, not in `lines`.
"""

import collections
import re
import subprocess
import sys

COUNT = re.compile(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*)")


def annotate(path, *args):
    out = subprocess.run(
        ["callgrind_annotate", "--show-percs=no", *args, path],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def functions(path):
    """Self instructions per function name (object and file left out)."""
    counts = collections.Counter()
    for line in annotate(path, "--inclusive=no", "--auto=no", "--threshold=100"):
        m = COUNT.fullmatch(line)
        if not m:
            continue
        name = m.group(2).strip()
        if name.startswith("=>") or "PROGRAM TOTALS" in name or "events annotated" in name:
            continue
        name = re.sub(r"^(\?\?\?|[^ :]*\.(rs|c|h|S|cc|cpp)):", "", name)
        name = re.sub(r" \[[^]]*\]$", "", name)
        counts[name] += int(m.group(1).replace(",", ""))
    return counts


def calls(path):
    """Calls per callee, from the raw file's `cfn=` / `calls=` lines."""
    names, counts, callee = {}, collections.Counter(), None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3).strip()
                if m.group(1) == "cfn":
                    callee = names.get(m.group(2), m.group(2))
                continue
            m = re.match(r"calls=(\d+)", line)
            if m and callee is not None:
                counts[callee] += int(m.group(1))
    return counts


def lines(path, file_part):
    """Self instructions per (line number, source text) of matching files."""
    counts, text = collections.Counter(), {}
    active, number = False, 0
    for line in annotate(path, "--auto=yes", "--context=1000000"):
        if line.startswith("-- Auto-annotated source:"):
            active, number = file_part in line, 0
            continue
        if not active:
            continue
        m = re.match(r"\s*([\d,]+|\.)\s(.*)", line)
        if not m or m.group(2).lstrip().startswith("=>"):
            continue
        number += 1
        text[number] = m.group(2)
        if m.group(1) != ".":
            counts[number] += int(m.group(1).replace(",", ""))
    return counts, text


def per_request(a, b, n):
    return {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}


def main(argv):
    if len(argv) < 5 or argv[1] not in ("functions", "calls", "lines"):
        sys.exit(__doc__)
    what, a, b, n = argv[1], argv[2], argv[3], float(argv[4])
    if what == "functions":
        top = int(argv[5]) if len(argv) > 5 else 40
        diff = per_request(functions(a), functions(b), n)
        print(f"{sum(diff.values()):10.0f}  (total)")
        for name, v in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{v:10.0f}  {name[:150]}")
    elif what == "calls":
        part = argv[5] if len(argv) > 5 else ""
        diff = per_request(calls(a), calls(b), n)
        for name, v in sorted(diff.items(), key=lambda kv: -kv[1]):
            if part in name and v >= 0.5:
                print(f"{v:10.1f}  {name[:150]}")
    else:
        if len(argv) < 6:
            sys.exit(__doc__)
        least = float(argv[6]) if len(argv) > 6 else 100
        (ca, _), (cb, text) = lines(a, argv[5]), lines(b, argv[5])
        diff = per_request(ca, cb, n)
        for number in sorted(diff):
            if abs(diff[number]) >= least:
                print(f"{number:6d} {diff[number]:9.0f}  {text.get(number, '')[:120]}")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except BrokenPipeError:
        pass
