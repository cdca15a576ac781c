# source: https://github.com/xingyizhou/CenterNet/issues/649 (code: src/lib/datasets/dataset_factory.py get_dataset, src/main.py)
# family: tensors crossing processes: a Dataset class defined inside a factory function, pickled for spawned workers
# symptom: on Windows, num_workers > 0 fails with "Can't pickle local object 'get_dataset.<locals>.Dataset'";
#   num_workers = 0 works but is slow
# hazard: `Dataset(opt, "train")`, an instance of the class get_dataset defines and returns, handed to a DataLoader with num_workers=4
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default; small stand-ins for COCO and CTDetDataset)
# printed (torch 2.13): AttributeError: Can't pickle local object 'get_dataset.<locals>.Dataset' (run with multiprocessing.set_start_method("spawn"))
import argparse

import torch
import torch.utils.data


class COCO(torch.utils.data.Dataset):
    num_classes = 80

    def __init__(self, opt, split):
        self.split = split
        self.images = [torch.randn(3, 16, 16) for _ in range(16)]

    def __len__(self):
        return len(self.images)


class CTDetDataset(torch.utils.data.Dataset):
    def __getitem__(self, index):
        img = self.images[index]
        return {"input": img, "hm": torch.zeros(self.num_classes, 4, 4)}


dataset_factory = {"coco": COCO}
_sample_factory = {"ctdet": CTDetDataset}


def get_dataset(dataset, task):
    class Dataset(dataset_factory[dataset], _sample_factory[task]):
        pass
    return Dataset


def main(opt):
    Dataset = get_dataset(opt.dataset, opt.task)
    train_loader = torch.utils.data.DataLoader(
        Dataset(opt, "train"),  # hazard: GML212
        batch_size=opt.batch_size,
        shuffle=True,
        num_workers=opt.num_workers,
        pin_memory=True,
        drop_last=True,
    )
    for epoch in range(1, opt.num_epochs + 1):
        for iter_id, batch in enumerate(train_loader):
            print(epoch, iter_id, batch["input"].shape)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="coco")
    parser.add_argument("--task", default="ctdet")
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--num_workers", type=int, default=4)
    parser.add_argument("--num_epochs", type=int, default=1)
    main(parser.parse_args())
