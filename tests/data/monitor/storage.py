"""IO-bound: random 256 KiB reads of a file, each one from the device.

``python storage.py SECONDS FOLDER``: writes a 32 MiB file in FOLDER, then reads random
256 KiB blocks of it with O_DIRECT for SECONDS. O_DIRECT bypasses the page cache (the
read goes to the device; posix_fadvise(DONTNEED) would only drop the cached pages once
and readahead would refill them), and random offsets defeat the device's own readahead,
so each read waits for the device: the process sits in disk sleep. Blocks of 256 KiB
make the device's transfer dwarf the CPU cost of a read (with 4 KiB reads from a fast,
host-cached virtual disk the system call itself is a third of the time). Exits 3 when the
file system refuses O_DIRECT (tmpfs).
"""
import mmap
import os
import random
import sys
import time

SECONDS = float(sys.argv[1])
path = os.path.join(sys.argv[2], "blocks.bin")
BLOCK = 256 << 10
SIZE = 32 << 20
noise = os.urandom(BLOCK)  # not zeros: a virtual disk may skip zero blocks on read
with open(path, "wb") as fh:
    for i in range(SIZE // BLOCK):
        fh.write(i.to_bytes(8, "little") + noise[8:])
    fh.flush()
    os.fsync(fh.fileno())
try:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    os.preadv(fd, [buf], 0)
except OSError as exc:
    print(f"no O_DIRECT here: {exc}", file=sys.stderr)
    sys.exit(3)
rng = random.Random(0)
blocks = SIZE // BLOCK
reads = 0
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    os.preadv(fd, [buf], rng.randrange(blocks) * BLOCK)
    reads += 1
os.close(fd)
os.unlink(path)
print("storage done", reads)
