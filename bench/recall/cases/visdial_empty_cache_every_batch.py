# source: https://github.com/batra-mlp-lab/visdial-challenge-starter-pytorch/pull/34 (related: issue #25; code: train.py)
# family: memory-control APIs
# symptom: "Code Speedup": the training loop calls torch.cuda.empty_cache() after every batch, which slows training
#   and (before set_device) leaks memory on another GPU; the fix calls it after every epoch instead of every batch
# hazard: torch.cuda.empty_cache() at the end of every iteration of the batch loop
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import itertools

import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

device = torch.device("cuda:0")
train_dataset = TensorDataset(torch.randn(512, 32), torch.randint(0, 100, (512,)))
train_dataloader = DataLoader(train_dataset, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 100)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adamax(model.parameters(), lr=0.004)
config = {"solver": {"num_epochs": 5}}

global_iteration_step = 0
for epoch in range(0, config["solver"]["num_epochs"]):
    combined_dataloader = itertools.chain(train_dataloader)

    print(f"\nTraining for epoch {epoch}:")
    for i, batch in enumerate(tqdm(combined_dataloader)):
        batch = [part.to(device) for part in batch]

        optimizer.zero_grad()
        output = model(batch[0])
        batch_loss = criterion(output.view(-1, output.size(-1)), batch[1].view(-1))
        batch_loss.backward()
        optimizer.step()

        global_iteration_step += 1
        torch.cuda.empty_cache()  # hazard: GML406

    torch.cuda.empty_cache()
