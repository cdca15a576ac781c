# source: https://github.com/deepinsight/insightface/issues/2578 (code: recognition/arcface_torch/dataset.py,
#   MXFaceDataset and get_dataloader, with the reporter's synthetic-face generator call added to __getitem__)
# family: tensors crossing processes: CUDA used in DataLoader workers
# symptom: ">>>latents = net(inputs.to("cuda").float(), randomize_noise=False, return_latents=True) RuntimeError:
#   Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start
#   method"; setting spawn instead led to a process-group barrier timeout
# hazard: `inputs.to("cuda")` in the dataset's __getitem__, which the forked DataLoader workers run
# runs-on-cpu: no (needs CUDA). A two-layer generator stands in for the reporter's pSp-style encoder; random
#   images stand in for the MXNet record file
# printed (torch 2.13): - (CUDA only)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class MXFaceDataset(Dataset):
    def __init__(self, root_dir, local_rank, net):
        super(MXFaceDataset, self).__init__()
        self.root_dir = root_dir
        self.local_rank = local_rank
        self.net = net
        self.imgidx = list(range(64))

    def __getitem__(self, index):
        inputs = torch.rand(1, 3, 112, 112)
        latents = self.net(inputs.to("cuda").float())  # hazard: GML205
        label = torch.tensor(index % 10, dtype=torch.long)
        return latents[0].detach().cpu(), label

    def __len__(self):
        return len(self.imgidx)


def get_dataloader(root_dir, local_rank, batch_size, net, num_workers=2):
    train_set = MXFaceDataset(root_dir=root_dir, local_rank=local_rank, net=net)
    return DataLoader(dataset=train_set, batch_size=batch_size, shuffle=True,
                      num_workers=num_workers, pin_memory=True, drop_last=True)


if __name__ == "__main__":
    net = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.Flatten(), nn.LazyLinear(512)).cuda()
    net(torch.rand(1, 3, 112, 112, device="cuda"))
    train_loader = get_dataloader("/train_tmp/ms1m", 0, 16, net)
    for img, local_labels in train_loader:
        print(img.shape, local_labels.shape)
        break
