"""``MonitorCallback`` on a Lightning fit of a tiny model: CPU-bound (Lightning's loop and
the model's ops, on in-memory data).

``python lightning_fit.py STEPS LOGDIR``: prints the monitor's JSON on stdout.
"""
import json
import sys

import pytorch_lightning as pl
import torch

from stepscope.capture.lightning import MonitorCallback


class Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 2)

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):  # type: ignore[no-untyped-def]
        return torch.optim.SGD(self.parameters(), lr=0.1)


data = torch.utils.data.TensorDataset(torch.randn(512, 64), torch.randint(0, 2, (512,)))
callback = MonitorCallback(sys.argv[2], run="fit", report=False)
trainer = pl.Trainer(max_steps=int(sys.argv[1]), accelerator="cpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False,
                     enable_model_summary=False, callbacks=[callback],
                     default_root_dir=sys.argv[2])
trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=8))
print(json.dumps(callback.result.report))
