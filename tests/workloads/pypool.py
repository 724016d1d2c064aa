# pypool.py - a multiprocessing pool of 2 worker processes that burn in pool_spin for SECONDS (argv[1],
# default 3) each, while the parent waits for them: its workers hold most of its CPU time. The parent
# burns 1 s of its own in parent_spin first, so that it has samples of its own at any rate (the
# interpreter's start alone is about one sample at 99 Hz), named in Python even when flamed finds
# the new interpreter late (up to about a second under ASan).
import multiprocessing
import sys
import time


def pool_spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(5000):
            x += i
    return x


def parent_spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(5000):
            x -= i
    return x


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    multiprocessing.set_start_method("fork")
    parent_spin(1.0)
    with multiprocessing.Pool(2) as pool:
        print(sum(pool.map(pool_spin, [seconds, seconds])) > 0)
