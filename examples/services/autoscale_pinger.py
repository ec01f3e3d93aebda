#!/usr/bin/python3
"""An autoscaling custom pinger for ducc (examples/services).

ducc runs it once per ping, as the service's owner, with the Service
Manager's state as JSON on standard input:
  {"service": 23, "endpoint": "...", "instances": [0, 1], "active": [0, 1],
   "started_at": [...], "references": [...], "autostart": false,
   "run_failures": 0, "max_instances": 10}
and reads one JSON answer from standard output:
  {"alive": true, "healthy": true, "info": "...", "additions": 1, "deletions": [2]}

It asks every active instance of examples/services/http_service.py for
/stats and computes the load: requests in flight per instance. When the
load stays above --target for --growth-window pings it adds instances (at
most --max-growth at a time, up to --max); when it stays below --target/2
for --shrink-window pings it removes one instance, the newest first, down
to --min. Pings are separate processes, so the window history lives in a
small state file.
"""
import argparse
import json
import os
import sys
import tempfile
import urllib.request

p = argparse.ArgumentParser()
p.add_argument("--port-base", type=int, required=True)
p.add_argument("--min", type=int, default=1)
p.add_argument("--max", type=int, default=4)
p.add_argument("--max-growth", type=int, default=1)
p.add_argument("--growth-window", type=int, default=2, help="pings over target before growing")
p.add_argument("--shrink-window", type=int, default=3, help="pings under target/2 before shrinking")
p.add_argument("--target", type=float, default=2.0, help="requests in flight per instance")
p.add_argument("--state-dir", default=tempfile.gettempdir())
args = p.parse_args()

st = json.load(sys.stdin)
state_file = os.path.join(args.state_dir, "ducc-autoscale-%d.json" % st["service"])
try:
    with open(state_file) as f:
        hist = json.load(f)
except (OSError, ValueError):
    hist = {"over": 0, "under": 0}

loads = {}
for inst in st["active"]:
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/stats" % (args.port_base + inst), timeout=0.5) as r:
            loads[inst] = json.load(r)["active"]
    except Exception:
        pass

answer = {"alive": bool(loads), "healthy": bool(loads)}
n = len(st["instances"])
per = sum(loads.values()) / max(len(loads), 1)
answer["info"] = "%d of %d instances answer, %.1f requests in flight each" % (len(loads), n, per)
settled = len(st["active"]) == n  # no instance is still starting

if loads and settled:
    hist["over"] = hist["over"] + 1 if per > args.target else 0
    hist["under"] = hist["under"] + 1 if per < args.target / 2 else 0
    if hist["over"] >= args.growth_window and n < args.max:
        answer["additions"] = min(args.max_growth, args.max - n)
        hist = {"over": 0, "under": 0}
    elif hist["under"] >= args.shrink_window and n > args.min:
        # The newest instance: the one started last.
        started = dict(zip(st["active"], st["started_at"]))
        newest = max(st["instances"], key=lambda i: (started.get(i, 0), i))
        answer["deletions"] = [newest]
        hist = {"over": 0, "under": 0}
elif n < args.min:
    answer["additions"] = args.min - n

with open(state_file + ".tmp", "w") as f:
    json.dump(hist, f)
os.replace(state_file + ".tmp", state_file)
print(json.dumps(answer))
