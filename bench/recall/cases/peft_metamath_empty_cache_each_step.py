# source: https://github.com/huggingface/peft/pull/2894 (code: method_comparison/MetaMathQA/run.py, train, before the change)
# family: memory-control APIs
# symptom: "Improve MetaMath training script runtime": the training script called `cuda.empty_cache()` and
#   `gc.collect()` after each step, which slows training considerably (250 steps: 108 s, 65 s without gc.collect,
#   45 s without empty_cache; the PR keeps it every 10th step)
# hazard: `torch.cuda.empty_cache()` at the end of every step of the training loop
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import gc
import time

import torch
import torch.nn as nn


def get_batches(n, device):
    return [(torch.randint(0, 1000, (4, 128), device=device), torch.randint(0, 1000, (4, 128), device=device))
            for _ in range(n)]


def train(model, optimizer, scheduler, batches, grad_norm_clip=1.0):
    model.train()
    tic = time.perf_counter()
    for step, (input_ids, labels) in enumerate(batches, start=1):
        logits = model(input_ids)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_norm_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.3f}, {time.perf_counter() - tic:.1f}s")
        torch.cuda.empty_cache()  # hazard: GML406
        gc.collect()


if __name__ == "__main__":
    device = "cuda"
    model = nn.Sequential(nn.Embedding(1000, 256), nn.Linear(256, 1000)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    train(model, optimizer, scheduler, get_batches(250, device))
