# source: https://github.com/Lightning-AI/pytorch-lightning/issues/12117
# family: memory-control APIs: `del model` then `torch.cuda.empty_cache()` while the Trainer still refers to the model
# symptom: training several models one after another, `del model` and `torch.cuda.empty_cache()` after each "doesn't
#   seem to free up any memory"; expected the model's memory to be released
# hazard: `torch.cuda.empty_cache()` right after `del model`, while trainer (its lightning_module) keeps the model
# runs-on-cpu: no (CUDA and pytorch_lightning: static only)
# printed (torch 2.13): - (CUDA only)
import pytorch_lightning as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class LitModel(pl.LightningModule):
    def __init__(self, width):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


loader = DataLoader(TensorDataset(torch.randn(256, 32), torch.randn(256, 1)), batch_size=32)
for width in (4096, 8192):
    model = LitModel(width)
    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False)
    trainer.fit(model, loader)
    del model
    torch.cuda.empty_cache()  # hazard: GML407
    print(width, torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
