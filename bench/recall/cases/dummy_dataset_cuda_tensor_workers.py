# source: https://github.com/pytorch/pytorch/issues/40403
# family: tensors crossing processes: a dataset holding a CUDA tensor handed to forked DataLoader workers
# symptom: "Cannot re-initialize CUDA in forked subprocess": a synthetic dataset creates its image tensor on the GPU
#   in __init__ and returns it from __getitem__; iterating the loader (with worker processes, under the distributed
#   launcher) fails in the workers
# hazard: the DataLoader with num_workers over a dataset whose self.tensor lives on CUDA
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import random
import torch
import torch.utils.data as data


class DummyDataset(data.Dataset):
    def __init__(self, num_classes):
        super(DummyDataset, self).__init__()
        # Create tensor on GPU
        self.tensor = torch.randn(3, 224, 224, device=torch.device('cuda'))
        self.num_classes = num_classes

    def __getitem__(self, index):
        torch.manual_seed(index)
        random.seed(index)
        return self.tensor, \
               random.randint(0, self.num_classes - 1)

    def __len__(self):
        return 1000


def execute(batch_size=32, workers=4):
    train_dataset = DummyDataset(num_classes=1000)
    train_dataset_loader = data.DataLoader(train_dataset, batch_size=batch_size, shuffle=True,  # hazard: GML203
                                           num_workers=workers, pin_memory=False)
    for i, (images,
            class_targets) in enumerate(train_dataset_loader):
        print(i, images.shape)


if __name__ == '__main__':
    execute()
