"""npblas.py - a Python program whose time goes to numpy's matrix product, in the BLAS numpy is linked
with (Debian's: OpenBLAS, whose kernels are assembly without CFI, run by its own threads and the
caller's): step() multiplies two 400x400 matrices, drive() calls it for SECONDS (default 4).
Usage: npblas.py [SECONDS]"""
import sys
import time

import numpy as np


def step(a, b):
    return a @ b


def drive(seconds):
    rng = np.random.default_rng(7)
    a = rng.random((400, 400))
    b = rng.random((400, 400))
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        step(a, b)
        n += 1
    return n


print(drive(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0))
