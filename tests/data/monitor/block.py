"""``stepscope.monitor()`` around a pure-Python busy loop: CPU-bound.

``python block.py SECONDS LOGDIR``: prints the verdict as JSON on stdout.
"""
import json
import sys
import time

import stepscope

SECONDS = float(sys.argv[1])
with stepscope.monitor(sys.argv[2], run="block", report=False) as watched:
    end = time.monotonic() + SECONDS
    acc = 0
    while time.monotonic() < end:
        for k in range(10_000):
            acc += k % 7
print(json.dumps({"bound": watched.bound, "run_dir": watched.run_dir,
                  "evidence": watched.report["verdict"]["evidence"]}))
