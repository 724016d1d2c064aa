# pyrecord.py - a short Python program for flamectl record: burns in record_outer -> record_inner for
# SECONDS (argv[1], default 2), then exits with status CODE (argv[2], default 0).
import sys
import time


def record_inner(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def record_outer(seconds):
    end = time.time() + seconds
    while time.time() < end:
        record_inner(20000)


if __name__ == "__main__":
    record_outer(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
