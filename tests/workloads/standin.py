# standin.py MODE PORT_FILE - a stand-in for flamed's API on 127.0.0.1 (a free port, written to PORT_FILE):
# its answers are shaped as a test wants them, to check how flamectl reads them. MODE "reordered": valid
# answers with their fields in another order, extra fields, and numbers nested where a text search finds
# them first; "wrongtype": a field of another type in each (a number as a string, a fraction).
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
PROCESSES = {
    "processes": [
        {"pid": 7, "comm": "a", "total": 999, "parent": {"pid": 1}},
        {"pid": 8, "comm": "b", "total": 1},
    ],
    "unit": "samples",
    "total": 42,
}
STATUS = {"off_cpu": {"refused": "", "enabled": False}, "version": "stand-in", "frequency": 99}
TOP = {"functions": [{"total": 5, "name": "spin_here", "self": 3}], "unit": "samples", "total": 8}
if MODE == "wrongtype":
    STATUS["frequency"] = "99"
    PROCESSES["total"] = 42.5
    TOP["functions"][0]["self"] = "3"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        body, kind = {
            "/api/v1/status": (json.dumps(STATUS), "application/json"),
            "/api/v1/processes": (json.dumps(PROCESSES), "application/json"),
            "/api/v1/top": (json.dumps(TOP), "application/json"),
            "/api/v1/profile": ('<svg xmlns="http://www.w3.org/2000/svg"></svg>', "image/svg+xml"),
        }.get(path, ('{"error": "not here"}', "application/json"))
        data = body.encode()
        self.send_response(200 if path.startswith("/api/v1/") and "not here" not in body else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
