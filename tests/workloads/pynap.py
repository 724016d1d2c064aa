# pynap.py - burns in nap_burn for half a second, sleeps in nap_sleep for SECONDS (argv[1], default 1.5),
# then burns again: a wall-clock profile holds both, the off-CPU one the sleep. (It burns first: a wait
# that begins in a process's first moments, before flamed has its unwind tables, keeps a short stack.)
import sys
import time


def nap_sleep(seconds):
    time.sleep(seconds)


def nap_burn():
    end = time.time() + 0.5
    while time.time() < end:
        pass


if __name__ == "__main__":
    nap_burn()
    nap_sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)
    nap_burn()
