"""pywaits.py - Python threads whose waits are known, for the off-CPU tests: thread "napper" calls
doze(), which sleeps in time.sleep; thread "locked" calls wait_for_lock(), blocked on a lock that the
main thread holds (in hold()) for SECONDS. Before, it runs WARM seconds of Python code (default 1),
so that a profiler knows it as a Python process before its long waits begin. Usage: pywaits.py
SECONDS [WARM]. Works on Python 2.7 and 3."""
import sys
import threading
import time

lock = threading.Lock()


def doze():
    time.sleep(0.05)


def nap_loop(end):
    while time.time() < end:
        doze()


def wait_for_lock():
    lock.acquire()
    lock.release()


def hold(seconds):
    time.sleep(seconds)


def warm(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 1
    return n


def main():
    seconds = float(sys.argv[1])
    warm(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
    end = time.time() + seconds
    lock.acquire()
    napper = threading.Thread(target=nap_loop, args=(end,), name="napper")
    locked = threading.Thread(target=wait_for_lock, name="locked")
    napper.start()
    locked.start()
    hold(seconds)
    lock.release()
    napper.join()
    locked.join()


main()
