# pyonesec.py - a second of Python work (or sys.argv[1] seconds) under <module> -> outer -> middle -> spin:
# the short Python process whose first samples come before flamed has its tables.
import sys
import time


def spin():
    s = 0
    for i in range(2000):
        s += i * i
    return s


def middle(end):
    while time.monotonic() < end:
        spin()


def outer(seconds):
    middle(time.monotonic() + seconds)


outer(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
