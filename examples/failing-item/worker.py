#!/usr/bin/env python3
"""A stream worker for which one item always fails: the item "13".

Every other item (a number) is answered with its square. The job therefore
ends with completion reason Error, and 'ducc results ID --failed' shows
item 13 with the error. Standard library only.
"""
import json
import sys


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


send({"ready": True})
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    item = req["item"].strip()
    if item == "13":
        print(f"item {item}: refusing an unlucky number", file=sys.stderr, flush=True)
        send({"id": req["id"], "error": "13 is unlucky"})
        continue
    try:
        n = int(item)
    except ValueError:
        send({"id": req["id"], "error": f"not a number: {item!r}"})
        continue
    send({"id": req["id"], "ok": True, "result": {"n": n, "square": n * n}})
