# numba_jit.py SECONDS [HOLD_FILE] - a Python driver calling a function Numba compiled (@njit): the JIT code
# lives in anonymous memory, with no perf map; LLVM's MCJIT registers its object with the GDB JIT interface.
# With HOLD_FILE, it prints "done" when the work is over, then lives on until that file exists (at most
# 120 s): its JIT objects can only be read from it while it lives.
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


def drive(seconds):
    a = np.arange(20000, dtype=np.float64)
    kernel_sum(a, 1)  # compiled here
    end = time.time() + seconds
    total = 0.0
    while time.time() < end:
        total += kernel_sum(a, 50)
    return total


if __name__ == "__main__":
    print(drive(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0))
    if len(sys.argv) > 2:
        print("done", flush=True)
        end = time.time() + 120
        while not os.path.exists(sys.argv[2]) and time.time() < end:
            time.sleep(0.05)
