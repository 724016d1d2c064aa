# numba_jit.py SECONDS - a Python driver calling a function Numba compiled (@njit): the JIT code lives in
# anonymous memory, with no perf map; LLVM's MCJIT registers its object with the GDB JIT interface.
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
