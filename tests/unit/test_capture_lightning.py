"""StepscopeCallback: Lightning training batches become profiler steps in our logdir.

Needs `pytorch-lightning` (or `lightning`) installed next to torch; CI installs it with
``pip install pytorch-lightning`` (it accepts the installed torch, pulls no other).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import stepscope

torch = pytest.importorskip("torch")
pl = pytest.importorskip("pytorch_lightning",
                         reason="pytorch-lightning not installed (pip install pytorch-lightning)")


LightningModule: Any = pl.LightningModule


class Tiny(LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(16, 2)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_callback_writes_a_trace_with_the_scheduled_steps(tmp_path: Path) -> None:
    from stepscope.capture.lightning import StepscopeCallback

    data = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    callback = StepscopeCallback(str(tmp_path), run="pl", wait=1, warmup=1, active=3)
    trainer = pl.Trainer(max_steps=7, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[callback],
                         default_root_dir=str(tmp_path))
    trainer.fit(Tiny(), loader)
    assert len(callback.trace_paths) == 1
    path = callback.trace_paths[0]
    assert Path(path).parent == tmp_path / "pl"
    trace = stepscope.load(path, cache=False)
    steps = sorted(s for s in trace.strings if s.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert any("training_step" in s for s in trace.strings)  # Lightning's own ranges
