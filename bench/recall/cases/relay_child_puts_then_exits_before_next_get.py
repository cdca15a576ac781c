# source: https://github.com/pytorch/pytorch/issues/7181
# family: tensors crossing processes: a child puts a tensor on a queue and exits before the next process takes it
# symptom: works on a Mac, fails on Linux: the second relay process crashes taking the tensor from the queue with
#   "ConnectionRefusedError: [Errno 111] Connection refused" (the first relay, which put it, has already exited)
# hazard: `queue.put(torch.ones(10))` in relay, which then returns; the parent joins it before the next relay gets
# runs-on-cpu: yes (Linux's file_descriptor sharing strategy; the script chooses spawn, as the report did)
# printed (torch 2.13): the first relay checks its tensor; the second fails in queue.get() with
#   ConnectionRefusedError: [Errno 111] Connection refused (rebuild_storage_fd)
import os

import torch
import torch.multiprocessing as mp


def check(tensor):
    print("[{}] checking".format(os.getpid()), tensor.sum().item())
    if (tensor - torch.ones(10)).norm() > 1e-4:
        raise RuntimeError("bad tensor")


def relay(queue):
    tensor = queue.get()
    check(tensor)
    queue.put(torch.ones(10))  # hazard: GML209


def run_chain(stages):
    queue = mp.Queue()
    queue.put(torch.ones(10))
    for _ in range(stages):
        p = mp.Process(target=relay, args=(queue,))
        p.start()
        p.join(10)
    check(queue.get())


if __name__ == "__main__":
    mp.set_start_method("spawn")
    run_chain(2)
