# source: https://github.com/huggingface/transformers/issues/31372 (fixed by https://github.com/huggingface/transformers/pull/31530)
# family: misuse of memory-control APIs (empty_cache on every step)
# symptom: training through Trainer became markedly slower after torch.cuda.empty_cache() was added to
#   training_step; removing it restored the speed
# hazard: empty_cache() inside training_step, which the inner loop calls on every step
# runs-on-cpu: no (CUDA-only: static only)
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer, train_batches, max_steps):
        self.model = model
        self.optimizer = optimizer
        self.train_batches = train_batches
        self.max_steps = max_steps

    def compute_loss(self, model, inputs):
        return model(inputs["x"]).pow(2).mean()

    def training_step(self, model, inputs):
        model.train()
        loss = self.compute_loss(model, inputs)
        torch.cuda.empty_cache()  # hazard: GML406
        loss.backward()
        return loss.detach()

    def _inner_training_loop(self):
        tr_loss = torch.tensor(0.0)
        for step, inputs in enumerate(self.train_batches):
            if step >= self.max_steps:
                break
            tr_loss += self.training_step(self.model, inputs).cpu()  # hazard-via: GML406
            self.optimizer.step()
            self.optimizer.zero_grad()
        return tr_loss

    def train(self):
        return self._inner_training_loop()


device = "cuda"
net = nn.Linear(64, 64).to(device)
batches = [{"x": torch.randn(8, 64, device=device)} for _ in range(12)]
print(Trainer(net, torch.optim.AdamW(net.parameters()), batches, max_steps=12).train())
