# source: https://github.com/pytorch/pytorch/issues/51849
# family: tensors crossing processes: a numpy view of a tensor read after the tensor was pickled for a worker
# symptom: "DataLoader has a side-effect on Numpy arrays?": after `next(iter(data_loader))` the numpy array passed
#   (inside functools.partial) as worker_init_fn's data holds other values: "original data" and "after data loader
#   data" print different min/max, the worker sees garbage
# hazard: `data = (tensor, tensor.numpy())` handed to the workers; pickling `tensor` for the spawned worker moves its
#   storage into shared memory and leaves the array on the freed buffer, which is read afterwards
# runs-on-cpu: yes. mp.spawn, as in the report (its children spawn the DataLoader's worker too); the gloo backend on
#   a file store stands in for nccl on tcp://127.0.0.1:29500
# printed (torch 2.13): original data | (-1.0115291, 2.1784658) / worker data | (-269480.3, 9.630553e+27) / after
#   data loader data | (0.0, 2.1784658) (the stale values differ from run to run; in three runs of three they differ)
import functools
import os
import tempfile

import numpy as np
import torch
import torch.distributed
import torch.multiprocessing
import torch.utils.data
from torch.utils.data.dataloader import DataLoader

world_size = 1

torch.manual_seed(1234)


def print_min_max(prefix, data):
    print("%s | (%s, %s)" % (prefix, np.min(data[1]), np.max(data[1])), flush=True)


def worker_init_fn(_, data):
    print_min_max("worker data", data)


def run_worker(rank, init_file):
    print("Started worker %d" % rank)
    torch.distributed.init_process_group("gloo", "file://" + init_file, world_size=world_size, rank=rank)

    # 1. Create Data
    tensor = torch.randn(10)
    data = (tensor, tensor.numpy())
    print_min_max("original data", data)

    # 2. Launch `DataLoader` with `worker_init_fn(data=data)`
    partial = functools.partial(worker_init_fn, data=data)
    data_loader = DataLoader(list(range(1000)), num_workers=1, worker_init_fn=partial)
    data_iter = iter(data_loader)
    next(data_iter)

    # 3. Data has been mutated???
    print_min_max("after data loader data", data)  # hazard: GML214
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    print("Spawning")
    init_file = os.path.join(tempfile.mkdtemp(), "store")
    torch.multiprocessing.spawn(run_worker, args=(init_file,), nprocs=world_size)
