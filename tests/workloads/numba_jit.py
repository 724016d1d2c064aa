# numba_jit.py SECONDS [HOLD_FILE [libm]] - a Python driver calling a function Numba compiled (@njit): the
# JIT code lives in anonymous memory, with no perf map; LLVM's MCJIT registers its object with the GDB JIT
# interface. With HOLD_FILE, it prints "done" when the work is over, then lives on until that file exists
# (at most 120 s): its JIT objects can only be read from it while it lives. With "libm", the function
# called is outer, which calls libm (fmod, atan2) in its loop: its code keeps no frame pointer and has
# no CFI of its own (LLVM writes none for a function that cannot throw), so walking from libm back to
# Python needs rows for it (lib/unwind/jitrows.c).
import math
import os
import sys
import time

import numpy as np
from numba import njit


@njit
def kernel_sum(a, n):
    s = 0.0
    for r in range(n):
        for i in range(a.shape[0]):
            s += a[i] * (i % 7) + r
    return s


@njit
def outer(a, n):
    s = 0.0
    for r in range(n):
        for i in range(a.shape[0]):
            s += ((a[i] * 1.37 + r) % 3.1) + math.atan2(a[i], r + 1.0)
    return s


def drive(seconds, kernel, rounds):
    a = np.arange(20000, dtype=np.float64)
    kernel(a, 1)  # compiled here
    end = time.time() + seconds
    total = 0.0
    while time.time() < end:
        total += kernel(a, rounds)
    return total


if __name__ == "__main__":
    libm = len(sys.argv) > 3 and sys.argv[3] == "libm"
    print(drive(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, outer if libm else kernel_sum, 20 if libm else 50))
    if len(sys.argv) > 2:
        print("done", flush=True)
        end = time.time() + 120
        while not os.path.exists(sys.argv[2]) and time.time() < end:
            time.sleep(0.05)
