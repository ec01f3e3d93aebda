#!/usr/bin/env python3
"""Print a port P such that P .. P+N-1 are free on 127.0.0.1 (N = argv[1],
default 1), so that the examples never collide with what else runs here.

Usage: free_ports.py [N]
"""
import socket
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for _ in range(100):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    base = s.getsockname()[1]
    s.close()
    if base + n > 65535:
        continue
    held = []
    try:
        for p in range(base, base + n):
            t = socket.socket()
            t.bind(("127.0.0.1", p))
            held.append(t)
    except OSError:
        continue
    finally:
        for t in held:
            t.close()
    print(base)
    sys.exit(0)
sys.exit("no %d free consecutive ports found" % n)
