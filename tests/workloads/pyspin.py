"""pyspin.py - a Python workload with a known call chain and a known split of CPU time.

    python pyspin.py SECONDS [MODE]

main -> Engine.crank -> Engine.gear_a (3 parts) / Engine.gear_b (2 parts) -> tooth, on the main
thread (each crank turn picks one gear at random, 3:2, so that no period of the work lines up with the
sampling's)
thread, and a thread 'sorter' sorting with a Python key function (sorted's list_sort calls back into
key_of: Python -> C -> Python). MODE 'native' instead runs two threads in C calls that release the
GIL: 'poller' busy-polls time.sleep(0), 'packer' runs zlib.compress of a large buffer, both under Python
callers of their own. Written for Python 2.7 and 3.6 to 3.13 alike.
"""
import random
import sys
import threading
import time
import zlib


def tooth(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


class Engine(object):
    def gear_a(self):
        return tooth(2000)

    def gear_b(self):
        return tooth(2000)

    def crank(self, until):
        pick = random.Random(42).random
        while time.time() < until:
            if pick() < 0.6:
                self.gear_a()
            else:
                self.gear_b()


def key_of(x):
    return (x * 7919) % 10007


def sorter(until):
    data = list(range(20000))
    while time.time() < until:
        sorted(data, key=key_of)


def poll_once():
    time.sleep(0)


def poller(until):
    while time.time() < until:
        poll_once()


def pack(buf):
    return zlib.compress(buf, 9)


def packer(until):
    # Compresses slowly (level 9, a repetitive but not trivial buffer): most time inside libz.
    buf = b"".join(b"%d flamed %d\n" % (i, i * 31 % 977) for i in range(400000))
    while time.time() < until:
        pack(buf)


def main():
    seconds = float(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "python"
    until = time.time() + seconds
    if mode == "native":
        threads = [threading.Thread(target=poller, args=(until,), name="poller"),
                   threading.Thread(target=packer, args=(until,), name="packer")]
    else:
        threads = [threading.Thread(target=sorter, args=(until,), name="sorter")]
    for t in threads:
        t.start()
    if mode != "native":
        Engine().crank(until)
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
