# source: https://github.com/thuml/Time-Series-Library/issues/129 (code: data_provider/data_factory.py, data_provider)
# family: tensors crossing processes: a lambda collate_fn pickled for spawned DataLoader workers
# symptom: running the classification task on macOS: "Can't pickle local object 'data_provider.<locals>.<lambda>'"
#   when the train loop starts iterating train_loader
# hazard: `collate_fn=lambda x: collate_fn(x, max_len=args.seq_len)` with num_workers>0 and spawn
# runs-on-cpu: yes (under the spawn start method, the reporter's macOS default)
# printed (torch 2.13): AttributeError: Can't pickle local object 'data_provider.<locals>.<lambda>' (run with multiprocessing.set_start_method("spawn"))
from types import SimpleNamespace

import torch
from torch.utils.data import DataLoader


def collate_fn(data, max_len=None):
    features, labels = zip(*data)
    X = torch.zeros(len(features), max_len, features[0].shape[-1])
    padding_masks = torch.zeros(len(features), max_len, dtype=torch.bool)
    for i, f in enumerate(features):
        end = min(f.shape[0], max_len)
        X[i, :end] = f[:end]
        padding_masks[i, :end] = True
    return X, torch.stack(labels), padding_masks


class UEAloader(torch.utils.data.Dataset):
    def __init__(self, args, root_path, flag=None):
        self.items = [(torch.randn(int(torch.randint(20, 40, (1,))), 3), torch.tensor(i % 2)) for i in range(32)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def data_provider(args, flag):
    shuffle_flag = flag != "TEST"
    data_set = UEAloader(args, root_path=args.root_path, flag=flag)
    data_loader = DataLoader(
        data_set,
        batch_size=args.batch_size,
        shuffle=shuffle_flag,
        num_workers=args.num_workers,
        drop_last=False,
        collate_fn=lambda x: collate_fn(x, max_len=args.seq_len),  # hazard: GML212
    )
    return data_set, data_loader


if __name__ == "__main__":
    args = SimpleNamespace(root_path="./dataset/EthanolConcentration/", batch_size=8, num_workers=2, seq_len=32)
    train_data, train_loader = data_provider(args, flag="TRAIN")
    for i, (batch_x, label, padding_mask) in enumerate(train_loader):
        print(i, batch_x.shape)
