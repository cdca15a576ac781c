# source: https://github.com/dragen1860/MAML-Pytorch/issues/71 (code: MiniImagenet.py, MiniImagenet.__init__, and
#   miniimagenet_train.py, which loads it with DataLoader(..., num_workers=1))
# family: tensors crossing processes: an unpicklable callable for spawned DataLoader workers
# symptom: on Windows: "File ...\multiprocessing\reduction.py, line 60, in dump ForkingPickler(file,
#   protocol).dump(obj) AttributeError: Can't pickle local object 'MiniImagenet.__init__.<locals>.<lambda>'"
# hazard: the `lambda x: Image.open(x).convert('RGB')` that __init__ puts first in self.transform, pickled with the
#   dataset for the spawned worker
# runs-on-cpu: yes, under spawn (Windows' start method; the case sets it). A three-step Compose stands in for
#   torchvision's; random arrays stand in for the image files and the CSV split, so the lambda builds an array
# printed (torch 2.13): AttributeError: Can't pickle local object 'MiniImagenet.__init__.<locals>.<lambda>'
import numpy as np
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class MiniImagenet(Dataset):
    def __init__(self, root, mode, batchsz, n_way, k_shot, k_query, resize, startidx=0):
        self.batchsz = batchsz
        self.n_way = n_way
        self.k_shot = k_shot
        self.k_query = k_query
        self.setsz = self.n_way * self.k_shot
        self.resize = resize
        if mode == 'train':
            self.transform = Compose([lambda x: np.random.rand(resize, resize, 3).astype(np.float32),  # hazard: GML212
                                      lambda a: torch.from_numpy(a).permute(2, 0, 1),
                                      lambda t: (t - 0.45) / 0.225])
        else:
            self.transform = Compose([lambda x: np.random.rand(resize, resize, 3).astype(np.float32),
                                      lambda a: torch.from_numpy(a).permute(2, 0, 1)])
        self.support_x_batch = [['n0153282900000005.jpg'] * self.setsz for _ in range(batchsz)]

    def __getitem__(self, index):
        support_x = torch.FloatTensor(self.setsz, 3, self.resize, self.resize)
        for i, path in enumerate(self.support_x_batch[index]):
            support_x[i] = self.transform(path)
        return support_x, torch.zeros(self.setsz, dtype=torch.long)

    def __len__(self):
        return self.batchsz


def main():
    mini = MiniImagenet('miniimagenet/', mode='train', n_way=5, k_shot=1, k_query=15, batchsz=40, resize=84)
    db = DataLoader(mini, 4, shuffle=True, num_workers=1, pin_memory=True)
    for step, (x_spt, y_spt) in enumerate(db):
        print(step, x_spt.shape)


if __name__ == '__main__':
    mp.set_start_method('spawn')
    main()
