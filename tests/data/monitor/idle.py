"""Idle: the program sleeps (waits on nothing the machine could make faster)."""
import sys
import time

end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2.5)
while time.monotonic() < end:
    time.sleep(0.05)
print("idle done")
