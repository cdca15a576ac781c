# source: https://github.com/patrickloeber/pytorch-chatbot/issues/2 (code: train.py)
# family: tensors crossing processes: DataLoader workers started by top-level code (no `if __name__ == "__main__":`)
# symptom: on Windows (Python 3.7) `python train.py` fails at `for (words, labels) in train_loader:`: "RuntimeError:
#   An attempt has been made to start a new process before the current process has finished its bootstrapping phase."
#   (each spawned worker re-runs the module, which builds the loader and iterates it again)
# hazard: the training loop at module level iterating the DataLoader with num_workers=2
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default; random bags of words stand in for intents.json)
# printed (torch 2.13): in each worker "RuntimeError: An attempt has been made to start a new process before the current process
#   has finished its bootstrapping phase.", then "RuntimeError: DataLoader worker (pid ...) exited unexpectedly" (run with
#   multiprocessing.set_start_method("spawn"); under Linux's fork it trains)
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

rng = np.random.default_rng(0)
X_train = rng.integers(0, 2, (24, 20)).astype(np.float32)
y_train = rng.integers(0, 4, 24).astype(np.int64)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
input_size, hidden_size, output_size = X_train.shape[1], 8, 4
num_epochs, batch_size, learning_rate = 3, 8, 0.001


class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.l1 = nn.Linear(input_size, hidden_size)
        self.l2 = nn.Linear(hidden_size, num_classes)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.l2(self.relu(self.l1(x)))


model = NeuralNet(input_size, hidden_size, output_size).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)


class ChatDataset(Dataset):
    def __init__(self):
        self.n_samples = len(X_train)
        self.x_data = X_train
        self.y_data = y_train

    def __getitem__(self, index):
        return self.x_data[index], self.y_data[index]

    def __len__(self):
        return self.n_samples


dataset = ChatDataset()
train_loader = DataLoader(dataset=dataset, batch_size=batch_size, shuffle=True, num_workers=2)

for epoch in range(num_epochs):
    for (words, labels) in train_loader:  # hazard: GML211
        words = words.to(device)
        labels = labels.to(device)
        outputs = model(words)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"Epoch [{epoch + 1}/{num_epochs}], Loss: {loss.item():.4f}")

print(f"final loss: {loss.item():.4f}")
