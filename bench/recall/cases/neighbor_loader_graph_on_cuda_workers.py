# source: https://github.com/pyg-team/pytorch_geometric/issues/5340
# family: CUDA in DataLoader workers: a dataset holding CUDA tensors made in the main process, read by forked workers
# symptom: "NeighborLoader with loader worker processes fails on GPU": with the graph moved to the GPU and
#   `num_workers > 0`, the first batch fails with "RuntimeError: Caught RuntimeError in DataLoader worker process 0 ...
#   RuntimeError: CUDA error: initialization error" in `data = [self.dataset[idx] for idx in possibly_batched_index]`;
#   on CPU it works
# hazard: the DataLoader with num_workers=2 over a dataset whose graph tensors were moved to CUDA in the main process
# runs-on-cpu: no (CUDA; static-only). A neighbour-sampling Dataset over an edge list stands in for NeighborLoader and
#   torch_geometric's Data (absent from the venv); random features for the notebook's dataset
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Graph:
    def __init__(self, x, edge_index, y):
        self.x = x
        self.edge_index = edge_index
        self.y = y

    def to(self, device):
        return Graph(self.x.to(device), self.edge_index.to(device), self.y.to(device))


class NeighborSampler(Dataset):
    def __init__(self, data, num_neighbors=5):
        self.data = data
        self.num_neighbors = num_neighbors

    def __len__(self):
        return self.data.x.size(0)

    def __getitem__(self, node):
        src, dst = self.data.edge_index
        neighbors = src[dst == node][: self.num_neighbors]
        return self.data.x[neighbors].mean(0), self.data.y[node]


num_nodes = 100
data = Graph(torch.randn(num_nodes, 16), torch.randint(0, num_nodes, (2, 400)), torch.randint(0, 4, (num_nodes,)))
data = data.to(device)
train_loader = DataLoader(NeighborSampler(data), batch_size=32, shuffle=True, num_workers=2)  # hazard: GML203

model = torch.nn.Linear(16, 4).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(2):
    for feats, labels in train_loader:
        loss = torch.nn.functional.cross_entropy(model(feats), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
