# source: https://github.com/pytorch/pytorch/issues/70041
# family: tensors crossing processes (a child writes the tensor its parent handed over)
# symptom: a tensor passed in a multiprocessing.Process's args, never share_memory_()'d, is printed by
#   the parent as tensor([999, 999, 999, 7]) after the children ran `data[:3] = 999`; the reporter
#   expected each child to get its own copy (is_shared() printed True inside the child)
# hazard: the slice write in the child's target, on the tensor it received
# runs-on-cpu: yes (the reporter's notebook pickles the args, as spawn does; under Linux's fork the
#   write stays in the child and the parent prints the original)
# printed (torch 2.13, spawn): True, True, tensor([999, 999, 999,   7]); (fork): False, False, tensor([1, 3, 5, 7])
import multiprocessing as mp

import torch


def train(data):
    print(data.is_shared())
    data[:3] = 999  # hazard: GML202


if __name__ == "__main__":
    data = torch.tensor([1, 3, 5, 7])
    print(data.is_shared())
    processes = []
    num_processes = 2
    for rank in range(num_processes):
        p = mp.Process(target=train, args=(data,))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    print(data)
