# source: https://github.com/pytorch/pytorch/issues/4377
# family: a CUDA tensor handed to forked children (DataLoader workers)
# symptom: iterating a DataLoader with num_workers=2 over a TensorDataset built from CUDA tensors fails
#   with "Cuda error (3): initialization error" in the workers
# hazard: the DataLoader with workers, given a dataset whose tensors are on the GPU
# runs-on-cpu: no (CUDA-only: static only)
import torch
from torch.utils.data import DataLoader, TensorDataset

features = torch.cuda.LongTensor(range(12)).view(3, 4)
labels = torch.cuda.LongTensor(range(3))
dataset = TensorDataset(features, labels)
dataloader = DataLoader(dataset, num_workers=2)  # hazard: GML203
for feat, lab in dataloader:
    print(feat)
    print(lab)
