"""CPU-compute-bound: a small MLP trained on synthetic data already in memory.

``python compute.py SECONDS``: no DataLoader and no I/O; forward, backward and the
optimizer step run on the CPU back to back, so the main process computes all the time.
"""
import sys
import time

import torch

SECONDS = float(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 256))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 256)
end = None
while True:
    model(x).square().mean().backward()
    opt.step()
    opt.zero_grad()
    end = end or time.monotonic() + SECONDS
    if time.monotonic() > end:
        break
print("compute done")
