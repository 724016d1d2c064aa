# pyjitfib.py - a recursive fib called in a loop for SECONDS (argv[1]), then "done". Run as python3.13 -X perf_jit
# pyjitfib.py SECONDS: CPython calls each Python function through a trampoline of its own and writes their
# code loads to /tmp/jit-PID.dump (3.13 and later).
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    fib(20)
print("done")
