#!/usr/bin/env python3
"""A driver process (docs/jobs.md, "Driver process protocol"): it reads a
collection, here the lines of the files named on its command line, and
hands them to ducc as work items only when ducc asks for them."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(sys.argv[0]))


def lines(paths):
    for p in paths:
        # Relative to this script: the driver runs in the directory the job
        # was submitted from.
        with open(os.path.join(HERE, p), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    yield line


reader = lines(sys.argv[1:])  # open the collection
print(json.dumps({"ready": True}), flush=True)
for request in sys.stdin:
    n = json.loads(request)["more"]
    for _ in range(n):
        item = next(reader, None)
        if item is None:
            print(json.dumps({"end": True}), flush=True)
            sys.exit(0)
        print(json.dumps({"item": item}))
    sys.stdout.flush()
