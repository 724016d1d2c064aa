# slowhttp.py - a daemon that answers once, then hangs: the first request on 127.0.0.1:PORT gets the
# body of BODY_FILE (as flamed's JSON), every later one a status line and then a header a byte a second
# for up to two minutes, so a client with a per-read timeout waits all the while. Writes to LOG_FILE
# "answered", then "hanging" when a request hangs, and "client left" when that client closed its end.
#
# python3 slowhttp.py BODY_FILE LOG_FILE   (prints "ready PORT" once listening on a free port)
import socket
import sys
import time

body_file, log_file = sys.argv[1], sys.argv[2]
body = open(body_file, "rb").read()


def log(line):
    with open(log_file, "a") as f:
        f.write(line + "\n")


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return False
        data += chunk
    return True


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(4)
print("ready", srv.getsockname()[1], flush=True)
served = 0
while True:
    conn, _ = srv.accept()
    if not read_request(conn):
        conn.close()
        continue
    if served == 0:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % len(body) + body)
        conn.close()
        served += 1
        log("answered")
        continue
    log("hanging")
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(120):
            time.sleep(1)
            conn.sendall(b"a")
            conn.settimeout(0.01)
            try:
                if conn.recv(1) == b"":  # the client closed its end
                    raise ConnectionResetError
            except socket.timeout:
                pass
            conn.settimeout(None)
    except (BrokenPipeError, ConnectionResetError):
        log("client left")
    conn.close()
