# source: https://github.com/belskikh/kekas/issues/26
# family: tensors crossing processes: pickling a lambda for spawned DataLoader workers
# symptom: on Windows, a DataLoader with num_workers > 0 over a dataset whose transforms are built from lambdas
#   (get_transforms) fails with "AttributeError: Can't pickle local object 'get_transforms.<locals>.<lambda>'";
#   num_workers=0 works
# hazard: the lambda inside get_transforms, stored in the dataset that spawned workers receive by pickling
# runs-on-cpu: yes (fails under the spawn start method, Windows' and macOS' default; under Linux's fork it runs)
# printed (torch 2.13): under spawn: AttributeError: Can't pickle local object 'get_transforms.<locals>.<lambda>'; under fork: torch.Size([4, 3, 8, 8])
import torch
from torch.utils.data import DataLoader, Dataset


class Compose:  # torchvision.transforms.Compose
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class Transformer:  # kekas.transformations.Transformer: apply fn to one key of the sample dict
    def __init__(self, key, transform_fn):
        self.key = key
        self.transform_fn = transform_fn

    def __call__(self, datum):
        datum[self.key] = self.transform_fn(datum[self.key])
        return datum


def resize(x, size):
    return torch.nn.functional.interpolate(x[None], size=size)[0]


def get_transforms(dataset_key, size, p):
    PRE_TFMS = Transformer(dataset_key, lambda x: resize(x, (size, size)))  # hazard: GML212
    NRM_TFMS = Compose([Transformer(dataset_key, lambda x: (x - x.mean()) / (x.std() + 1e-6))])
    train_tfms = Compose([PRE_TFMS, NRM_TFMS])
    val_tfms = Compose([PRE_TFMS, NRM_TFMS])
    return train_tfms, val_tfms


class ImageDataset(Dataset):
    def __init__(self, n, transforms):
        self.n = n
        self.transforms = transforms

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        return self.transforms({"image": torch.rand(3, 16, 16), "label": idx % 2})


if __name__ == "__main__":
    train_tfms, val_tfms = get_transforms("image", 8, 0.5)
    loader = DataLoader(ImageDataset(16, train_tfms), batch_size=4, num_workers=2)
    for batch in loader:
        print(batch["image"].shape)
        break
