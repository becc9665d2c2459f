#!/usr/bin/env python3
"""Splits the input logs a fuzz target wrote under JITC_FUZZ_LOG=PATH
(`fuzz/src/lib.rs`, `log_input`: the inputs the crashed context and the
one before it ran, in order) into one file per input, and prints the
command that runs them all, in order, in one process of the target's
binary (libFuzzer runs the files it is given one after another):

    JITC_FUZZ_LOG=/tmp/pv.log target/fuzz/.../parse_verify corpus/ ...
    python3 scripts/fuzz-replay.py /tmp/pv.log.prev /tmp/pv.log --out /tmp/replay
    $(python3 scripts/fuzz-replay.py ... --binary BINARY --command)

Written for a crash whose inputs replay cleanly alone, as the heap
corruption of docs/fuzzing.md did (found and fixed, 2026-11-27): whether
the sequence replays it, and under valgrind which write does the damage.
"""

import argparse
import os
import struct
import sys


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, at)
        if at + 4 + length > len(data):
            break  # a record cut short by the crash
        yield data[at + 4:at + 4 + length]
        at += 4 + length


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", help="log files, oldest first (PATH.prev, then PATH)")
    parser.add_argument("--out", required=True, help="folder for the numbered inputs (made if missing)")
    parser.add_argument("--binary", help="the target's binary, for --command")
    parser.add_argument("--command", action="store_true", help="print the replay command line only")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = []
    for log in args.logs:
        if not os.path.exists(log):
            print(f"fuzz-replay: no log at {log}", file=sys.stderr)
            continue
        for data in records(log):
            name = os.path.join(args.out, f"{len(names):06d}")
            with open(name, "wb") as f:
                f.write(data)
            names.append(name)
    if args.command:
        print(" ".join([args.binary or "BINARY"] + names))
    else:
        print(f"fuzz-replay: {len(names)} inputs in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
