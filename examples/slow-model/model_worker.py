#!/usr/bin/env python3
"""A stream worker with a slow start, like a process that loads a big model.

It sleeps MODEL_LOAD_SECONDS (default 30) to simulate loading, prints
{"ready": true}, then scores each item (a sentence) with a toy sentiment
"model", taking ITEM_SECONDS (default 0.2) per item. Up to $DUCC_PIPELINES
items are worked on at once, one thread each. Standard library only.

Protocol (docs/jobs.md): read {"id": ..., "item": "..."} lines on stdin,
write {"id": ..., "ok": true, "result": ...} or {"id": ..., "error": "..."}
lines on stdout. Anything else goes to stderr, which is the job log.
"""
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

LOAD_SECONDS = float(os.environ.get("MODEL_LOAD_SECONDS", "30"))
ITEM_SECONDS = float(os.environ.get("ITEM_SECONDS", "0.2"))
PIPELINES = int(os.environ.get("DUCC_PIPELINES", "4"))

_out = threading.Lock()


def send(obj):
    line = json.dumps(obj)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_model():
    log(f"loading the model ({LOAD_SECONDS:g} s)...")
    time.sleep(LOAD_SECONDS)
    log("model loaded")
    return {
        "good": 1, "great": 2, "excellent": 2, "happy": 1, "love": 2, "best": 2,
        "bad": -1, "awful": -2, "terrible": -2, "sad": -1, "hate": -2, "worst": -2,
    }


def score(model, text):
    time.sleep(ITEM_SECONDS)  # "inference"
    words = [w.strip(".,;:!?\"'").lower() for w in text.split()]
    s = sum(model.get(w, 0) for w in words)
    label = "positive" if s > 0 else "negative" if s < 0 else "neutral"
    return {"label": label, "score": s, "words": len(words)}


def handle(model, req):
    try:
        send({"id": req["id"], "ok": True, "result": score(model, req["item"])})
    except Exception as e:  # an item error, not a worker crash
        send({"id": req["id"], "error": f"{type(e).__name__}: {e}"})


def main():
    model = load_model()
    send({"ready": True})
    with ThreadPoolExecutor(max_workers=PIPELINES) as pool:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError:
                log(f"not a work item: {line[:200]}")
                continue
            pool.submit(handle, model, req)
    # stdin closed: the pool finishes what it holds, then we exit.


if __name__ == "__main__":
    main()
