#!/usr/bin/python3
"""A small HTTP service for ducc (examples/services).

Each instance listens on 127.0.0.1:(PORT_BASE + DUCC_SERVICE_INSTANCE), so
instances of one service on one node do not collide.

  GET /            200 "ok instance N"      (what the built-in HTTP pinger checks)
  GET /work?ms=N   sleeps N ms, then 200    (a request that takes a while)
  GET /stats       {"instance": N, "active": requests in flight, "served": total}

Usage: http_service.py PORT_BASE [STARTUP_SECONDS]
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

instance = int(os.environ.get("DUCC_SERVICE_INSTANCE", "0"))
port = int(sys.argv[1]) + instance
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))  # a slow start (loading a model, say)
lock = threading.Lock()
active = 0
served = 0


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        global active, served
        url = urlparse(self.path)
        if url.path == "/stats":
            with lock:
                body = json.dumps({"instance": instance, "active": active, "served": served})
            return self.reply(200, body, "application/json")
        with lock:
            active += 1
        try:
            if url.path == "/work":
                ms = float(parse_qs(url.query).get("ms", ["100"])[0])
                time.sleep(ms / 1000)
            self.reply(200, "ok instance %d\n" % instance, "text/plain")
        finally:
            with lock:
                active -= 1
                served += 1

    def reply(self, code, body, ctype):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
print("instance %d listening on 127.0.0.1:%d" % (instance, port), flush=True)
server.serve_forever()
