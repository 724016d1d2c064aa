"""pyburn.py - make bench's Python workload: a pure-Python loop under a chain of Python frames (main,
DEPTH + 1 calls of handler, spin: a web handler's depth), so each sample's Python walk has frames to write.

    python3 pyburn.py SECONDS [DEPTH]

DEPTH is 20 by default: with <module>, main and spin, 24 Python frames.

Prints "units_per_second N" (inner loops run per second) at the end, as bench/burn does.
"""
import sys
import time


def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def handler(depth, until):
    if depth:
        return handler(depth - 1, until)
    units = 0
    while time.time() < until:
        spin(2000)
        units += 1
    return units


def main():
    seconds = float(sys.argv[1])
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    start = time.time()
    units = handler(depth, start + seconds)
    print("units_per_second %.0f" % (units / (time.time() - start)))


if __name__ == "__main__":
    main()
