# source: https://github.com/facebookresearch/SparseConvNet/issues/125 (code: examples/3d_segmentation/data.py, train)
# family: tensors crossing processes: a lambda collate_fn in a DataLoader built in a for statement's header, under spawn
# symptom: on Windows `unet.py` fails at `trainIterator=data.train()`, in data.py's `num_workers=12):` line:
#   "AttributeError: Can't pickle local object 'train.<locals>.<lambda>'"
# hazard: `collate_fn=lambda x: load(x, categ, 0, nClasses[categ])` in the loader iterated directly by `for x in ...`
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default; random point clouds stand in for the ShapeNet .pts files)
# printed (torch 2.13): AttributeError: Can't pickle local object 'train.<locals>.<lambda>' (run with multiprocessing.set_start_method("spawn"))
import numpy as np
import torch

categories = ["02691156", "02773838"]
nClasses = [4, 2]
classOffsets = np.cumsum([0] + nClasses)
categ = 0
batchSize = 4
files = {c: [f"train_val/{c}/{i}.pts.train" for i in range(8)] for c in categories}


def load(xF, c, classOffset, nc):
    xl = np.random.randn(32, 3)
    xl /= ((xl ** 2).sum(1).max() ** 0.5)
    y = np.random.randint(0, nc, 32).astype("int64") + classOffset
    return (xF[0], xl, y, c, classOffset, nc, np.random.randint(1e6))


def train():
    d = []
    for x in torch.utils.data.DataLoader(
            files[categories[categ]],
            collate_fn=lambda x: load(x, categ, 0, nClasses[categ]),  # hazard: GML212
            num_workers=12):
        d.append(x)
    print(len(d))
    return d


if __name__ == "__main__":
    trainIterator = train()
