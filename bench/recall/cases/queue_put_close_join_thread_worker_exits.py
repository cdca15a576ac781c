# source: https://github.com/pytorch/pytorch/issues/60654
# family: tensors crossing processes: a tensor put on a queue by a child that exits before the parent gets it
# symptom: "FileNotFoundError: [Errno 2] No such file or directory" in the parent's q.get() when each of five
#   spawned workers puts a torch.rand tensor, closes the queue, joins its feeder thread and returns; with
#   `q.put(x.numpy())` it works
# hazard: the worker's `q.put(x)` of a tensor as its last act before exiting (close/join_thread only flush the pipe)
# runs-on-cpu: yes (spawn, as the report sets); a race the parent may win, it failed in each of three runs here
# printed (torch 2.13): FileNotFoundError: [Errno 2] No such file or directory; in other runs EOFError or
#   ConnectionResetError: [Errno 104] Connection reset by peer, in the parent's q.get()
from torch import multiprocessing as mp
import torch


def f(q):
    x = torch.rand(5, 5)
    q.put(x)  # hazard: GML209
    q.close()
    q.join_thread()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    nworkers = 5
    q = mp.Queue()
    workers = [mp.Process(target=f, args=(q,)) for _ in range(nworkers)]
    [w.start() for w in workers]

    for _ in range(nworkers):
        x = q.get()
        print(x.sum())

    [w.join() for w in workers]
