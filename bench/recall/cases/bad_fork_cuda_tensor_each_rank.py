# source: https://github.com/pytorch/pytorch/issues/17357 (dist_bug.py in the description)
# family: tensors crossing processes: a child forked after the parent initialised CUDA
# symptom: each child fails in `torch.cuda.set_device(rank)` with "cuda runtime error (3) : initialization error"
#   (today: "Cannot re-initialize CUDA in forked subprocess"); the error goes away without the `.cuda()` line that
#   runs before each fork
# hazard: `Process(target=run, ...)` (fork, Linux's default) after `torch.rand(20, 2).cuda()` in the same loop
# runs-on-cpu: no (CUDA; static-only). A scaled sum stands in for the per-rank work
import torch
from torch.multiprocessing import Process


def run(rank):
    torch.cuda.set_device(rank)
    print(rank, torch.ones(3, device="cuda").sum().item())


def launch(size):
    processes = []
    for rank in range(size):
        x = torch.rand(20, 2).cuda()
        p = Process(target=run, args=(rank,))  # hazard: GML204
        p.start()
        processes.append(p)
    for p in processes:
        p.join()


if __name__ == "__main__":
    launch(2)
