"""Input-bound: every sample goes through a slow pure-Python transform.

``python loader.py SECONDS WORKERS``: trains a tiny model for SECONDS (counted from the
first batch) on a DataLoader with WORKERS workers. With 0 workers the main process does
the transform itself; with workers it waits for them while they work flat out. The
transform costs ~50x the training step whatever the machine's speed, so the main process
waits for data nearly all of the time in both cases.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

SECONDS = float(sys.argv[1])
WORKERS = int(sys.argv[2])


class SlowTransform(Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, i: int) -> torch.Tensor:
        acc = 0
        for k in range(80_000):  # ~4-10 ms of one core
            acc += (k * i) % 7
        return torch.full((16,), float(acc % 5))


torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(SlowTransform(), batch_size=4, num_workers=WORKERS)
end = None
for x in loader:
    end = end or time.monotonic() + SECONDS
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
    if time.monotonic() > end:
        break
print("loader done")
