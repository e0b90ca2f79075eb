"""Speed of the TensorRT path on large synthetic trtexec outputs (prints figures).

    python benchmarks/bench_tensorrt.py [--iterations 1000000] [--layers 5000]

Writes (to a temporary folder) an --exportTimes file with N iterations, an --exportProfile
and a detailed --exportLayerInfo with L layers, one with unescaped quotes in every tenth
name (the salvage path), then times load + analysis + advice + JSON for the folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.trt_builders import layer_info_text, profile_text, times_text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--layers", type=int, default=5000)
    args = ap.parse_args()
    from stepscope.formats.tensorrt.load import load_trt_run
    from stepscope.report.tensorrt import build_trt_report

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        names = [
            f'layer "{i}"' if i % 10 == 0 else f"Conv_{i} + Relu_{i}" for i in range(args.layers)
        ]
        (d / "m.engine.timing.json").write_text(
            times_text([0.5 + (i % 7) * 0.01 for i in range(args.iterations)])
        )
        (d / "m.engine.profile.json").write_text(profile_text([(n, 0.01) for n in names]))
        (d / "m.engine.graph.json").write_text(
            layer_info_text(
                [
                    {"name": n, "inputs": [(f"t{i}", "Half")], "outputs": [(f"t{i + 1}", "Half")]}
                    for i, n in enumerate(names)
                ]
            )
        )
        size = sum(p.stat().st_size for p in d.iterdir()) / 1e6
        t0 = time.perf_counter()
        run = load_trt_run(str(d))
        t1 = time.perf_counter()
        report = build_trt_report(run, top=20)
        t2 = time.perf_counter()
        report.to_json()
        t3 = time.perf_counter()
        print(
            f"{args.iterations:,} iterations, {args.layers:,} layers, {size:.1f} MB: "
            f"load {t1 - t0:.2f} s, analyse+advise {t2 - t1:.2f} s, JSON {t3 - t2:.2f} s"
        )


if __name__ == "__main__":
    main()
