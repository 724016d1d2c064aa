# pyjitfib.py - a recursive fib called in a loop for SECONDS (argv[1]), then "done". Run as python3.13 -X perf_jit
# pyjitfib.py SECONDS [MORE]: CPython calls each Python function through a trampoline of its own and writes their
# code loads to /tmp/jit-PID.dump (3.13 and later). With MORE, MORE other functions are made and called once
# after fib's first call: CPython writes the file through a buffer, so that fib's records reach it before the loop.
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(1)
for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):
    exec("def f%d():\n    return %d\nf%d()" % (i, i, i))
end = time.time() + float(sys.argv[1])
while time.time() < end:
    fib(20)
print("done")
