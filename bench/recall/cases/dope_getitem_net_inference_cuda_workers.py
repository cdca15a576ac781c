# source: https://github.com/NVlabs/Deep_Object_Pose/issues/13 (code: scripts/train.py, MultipleVertexJson and the
#   DataLoader over it, with the reporter's network inference added to __getitem__, as the comment quotes it)
# family: tensors crossing processes: CUDA used in DataLoader workers
# symptom: "this Code (in the __getitem__ Method in class MultipleVertexJson(data.Dataset)): image_tensor =
#   transform_tmp(img); out, seg = net(image_tensor) ... File test2.py, line 657, in __getitem__ data =
#   Variable(image_tensor).cuda() RuntimeError: cuda runtime error (3) : initialization error"
# hazard: `Variable(image_tensor).cuda()` in __getitem__, run by the forked workers of the testing loader, after the
#   main process put the network on the GPU
# runs-on-cpu: no (needs CUDA). A small conv net stands in for DopeNetwork, random images for the JSON/PNG pairs
# printed (torch 2.13): - (CUDA only)
import torch
import torch.nn as nn
import torch.utils.data as data
from torch.autograd import Variable


class DopeNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.belief = nn.Conv2d(3, 9, 3, padding=1)
        self.affinity = nn.Conv2d(3, 16, 3, padding=1)

    def forward(self, x):
        return [self.belief(x)], [self.affinity(x)]


def transform_tmp(img):
    return (img - 0.5) / 0.5


class MultipleVertexJson(data.Dataset):
    def __init__(self, root, transform=None, test=False, sigma=16, save=False):
        self.root = root
        self.test = test
        self.sigma = sigma
        self.imgs = ["%06d.png" % i for i in range(16)]

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, index):
        img = torch.rand(3, 64, 64)
        # Run network inference
        image_tensor = transform_tmp(img).unsqueeze(0)
        data = Variable(image_tensor).cuda()  # hazard: GML205
        out, seg = net(data)
        beliefs = out[-1][0].detach().cpu()
        return {'img': img, 'beliefs': beliefs, 'affinities': seg[-1][0].detach().cpu()}


if __name__ == '__main__':
    net = DopeNetwork().cuda()
    testingdata = torch.utils.data.DataLoader(
        MultipleVertexJson(root='data/test', test=True), batch_size=4, shuffle=False, num_workers=4,
        pin_memory=True)
    for batch_idx, targets in enumerate(testingdata):
        print(batch_idx, targets['beliefs'].shape)
