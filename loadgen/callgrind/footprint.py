#!/usr/bin/env python3
"""The code a request runs, in 64-byte lines, from a callgrind dump of http.sh made with
instruction positions:

  CALLGRIND_OUT=dir VG_EXTRA="--dump-instr=yes" callgrind/http.sh 1 4000 BIN http
  callgrind/footprint.py dir/callgrind.out.* 4000 [TOP]

A line counts when the instructions executed in it come to at least half the number of
requests (N): code that nearly every request runs. Prints their count (the request's code
footprint, against the L1 instruction cache's size: what the kernel's path between two
requests evicts, the next request fetches again) and the TOP functions that own the most of
them (the function of the line's first instruction executed)."""
import collections
import re
import sys


def main():
    path, requests = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    names = {}
    function = None
    cost = collections.Counter()
    owner = {}
    address = 0
    after_call = False
    with open(path, errors="replace") as dump:
        positions = 1
        for line in dump:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                positions = len(line.split()) - 1
                continue
            named = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if named:
                if named.group(3):
                    names[named.group(2)] = named.group(3)
                if named.group(1) == "fn":
                    function = names.get(named.group(2), named.group(2))
                continue
            if line.startswith("calls="):
                # The next line is the call's inclusive cost, not an instruction's own.
                after_call = True
                continue
            if not line or line[0] not in "+-*0123456789":
                continue
            fields = line.split()
            at = fields[0]
            if at.startswith("+"):
                address += int(at[1:], 0)
            elif at.startswith("-"):
                address -= int(at[1:], 0)
            elif at != "*":
                address = int(at, 0)
            if after_call:
                after_call = False
                continue
            executed = int(fields[positions]) if len(fields) > positions else 0
            if executed:
                cost[address] += executed
                owner[address] = function
    lines = collections.Counter()
    line_owner = {}
    for at, executed in sorted(cost.items()):
        lines[at >> 6] += executed
        line_owner.setdefault(at >> 6, owner[at])
    hot = [line for line, executed in lines.items() if executed >= requests / 2]
    print(f"{len(hot)} lines of 64 bytes a request ({len(hot) * 64 / 1024:.1f} KiB); "
          f"{len(lines)} lines run at all")
    for name, count in collections.Counter(line_owner[l] for l in hot).most_common(top):
        print(f"{count:5d}  {name[:150]}")


if __name__ == "__main__":
    main()
