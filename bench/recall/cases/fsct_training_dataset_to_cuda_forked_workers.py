# source: https://github.com/SKrisanski/FSCT/issues/35 (code: scripts/train.py, TrainModel; scripts/train_datasets.py,
#   TrainingDataset.__getitem__)
# family: tensors crossing processes: CUDA used in DataLoader workers (forked after the parent initialised CUDA)
# symptom: `python train.py` preprocesses the point clouds, prints "Running deep learning using 1 / 128 CPU cores.",
#   loads the model and fails in the first batch: "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To
#   use CUDA with multiprocessing, you must use the 'spawn' start method"
# hazard: TrainingDataset.__getitem__ moves each sample `.to(self.device)`, the device being parameters["device"]
#   ("cuda") handed through TrainModel to the dataset, run in DataLoader workers (num_workers = the deep-learning cores)
# runs-on-cpu: no (CUDA). torch.utils.data's DataLoader stands in for torch_geometric's, a tuple for Data(pos=, y=);
#   random .npy boxes for the preprocessed samples; the preprocessing and validation are left out
# printed (torch 2.13): - (CUDA only)
import glob
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset


class TrainingDataset(Dataset):
    def __init__(self, root_dir, device, min_sample_points, max_sample_points):
        super().__init__()
        self.filenames = glob.glob(root_dir + "*.npy")
        self.max_sample_points = max_sample_points
        self.label_index = 3
        self.device = device
        self.min_sample_points = min_sample_points

    def __len__(self):
        return len(self.filenames)

    def __getitem__(self, index):
        point_cloud = np.load(self.filenames[index])
        x = point_cloud[:, :3]
        y = point_cloud[:, self.label_index] - 1
        x = torch.from_numpy(x.copy()).type(torch.float).to(self.device)  # hazard: GML205
        y = torch.from_numpy(y.copy()).type(torch.long).to(self.device)
        global_shift = torch.mean(x[:, :3], axis=0)
        return x - global_shift, y


class TrainModel:
    def __init__(self, parameters):
        self.parameters = parameters
        self.device = parameters["device"]

    def run_training(self, sample_dir):
        train_dataset = TrainingDataset(root_dir=sample_dir, device=self.device,
                                        min_sample_points=self.parameters["min_points_per_box"],
                                        max_sample_points=self.parameters["max_points_per_box"])
        self.train_loader = DataLoader(train_dataset, batch_size=self.parameters["train_batch_size"], shuffle=True,
                                       num_workers=self.parameters["num_cpu_cores_deep_learning"], drop_last=True)
        model = nn.Linear(3, 4).to(self.device)
        optimizer = optim.Adam(model.parameters(), lr=self.parameters["learning_rate"])
        criterion = nn.CrossEntropyLoss()
        for epoch in range(self.parameters["num_epochs"]):
            for pos, y in self.train_loader:
                loss = criterion(model(pos).flatten(0, 1), y.flatten())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("EPOCH", epoch, "loss", loss.item())


if __name__ == "__main__":
    sample_dir = tempfile.mkdtemp() + "/"
    for i in range(4):
        box = np.hstack([np.random.rand(64, 3), np.random.randint(1, 5, (64, 1))]).astype("float32")
        np.save(os.path.join(sample_dir, str(i).zfill(7) + ".npy"), box)
    parameters = dict(num_epochs=1, learning_rate=0.000025, min_points_per_box=32, max_points_per_box=64,
                      train_batch_size=2, num_cpu_cores_deep_learning=1, device="cuda")
    TrainModel(parameters).run_training(sample_dir)
