"""How torch_compile_first_call.pt.trace.json.gz was captured (torch 2.13.0, CPU build,
gcc for Inductor's C++ backend): the profiler around the first call of a torch.compile'd
function, so the window holds Dynamo's, AOTAutograd's and Inductor's compile phases
(profiler ranges "<phase> (dynamo_timed)", category cpu_op) and almost nothing else.

    python tests/data/compile_cpu/capture.py   # writes t.json; gzip -9 it
"""

import torch


def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.sin() * y).relu().sum()


if __name__ == "__main__":
    g = torch.compile(f)
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        g(x, y)
    prof.export_chrome_trace("t.json")
