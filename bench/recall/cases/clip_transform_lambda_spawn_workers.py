# source: https://github.com/openai/CLIP/pull/151 (code: clip/clip.py, _transform and load, before the fix)
# family: tensors crossing processes: pickling a lambda for spawned DataLoader workers
# symptom: "In Compose, replace lambda function with named function": on Windows, a multi-process DataLoader over
#   images preprocessed with CLIP's `preprocess` fails with "AttributeError: Can't pickle local object
#   '_transform.<locals>.<lambda>'"
# hazard: the lambda inside the Compose that _transform returns, kept by the dataset as its preprocess and pickled
#   for the spawned loader workers
# runs-on-cpu: no (needs torchvision and PIL, absent from the venv; the user's side follows the PR's description:
#   a Dataset applying `preprocess` in DataLoader workers)
# printed (torch 2.13): - (not run)
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

BICUBIC = InterpolationMode.BICUBIC


def _transform(n_px):
    return Compose([
        Resize(n_px, interpolation=BICUBIC),
        CenterCrop(n_px),
        lambda image: image.convert("RGB"),  # hazard: GML212
        ToTensor(),
        Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    ])


def load(name, device="cpu"):
    model = torch.nn.Conv2d(3, 8, 32, stride=32).to(device)  # stands in for the CLIP model
    return model, _transform(224)


class ImageDataset(Dataset):
    def __init__(self, images, preprocess):
        self.images = images
        self.preprocess = preprocess

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.preprocess(self.images[index])


if __name__ == "__main__":
    model, preprocess = load("ViT-B/32")
    images = [Image.new("L", (256, 256)) for _ in range(8)]
    loader = DataLoader(ImageDataset(images, preprocess), batch_size=4, num_workers=2)
    with torch.no_grad():
        for batch in loader:
            print(model(batch).shape)
