# source: https://github.com/pytorch/pytorch/issues/45831 (also https://github.com/pytorch/pytorch/issues/70536)
# family: tensors crossing processes (the sender exits before the receiver reads)
# symptom: a child that puts a tensor on a torch.multiprocessing Queue and returns at once makes the
#   parent's queue.get() fail (ConnectionRefusedError / FileNotFoundError); sleeping after put() hides it
# hazard: the put() of a fresh tensor as the child's last act
# runs-on-cpu: yes
# printed (torch 2.13): the third get() failed in 2 of 3 runs: ConnectionResetError: [Errno 104] Connection reset by peer (ConnectionRefusedError in another run)
import time

import torch
import torch.multiprocessing as mp


def func_return_list(queue):
    queue.put([[0, 0], [0, 0]])


def func(queue):
    queue.put(torch.zeros((2, 2)))
    time.sleep(1)


def func_with_bug(queue):
    queue.put(torch.zeros((2, 2)))  # hazard: GML209


if __name__ == "__main__":
    queue = mp.Queue()

    first = mp.Process(target=func_return_list, args=(queue,))
    first.start()
    print(queue.get())
    first.join()

    second = mp.Process(target=func, args=(queue,))
    second.start()
    print(queue.get())
    second.join()

    third = mp.Process(target=func_with_bug, args=(queue,))
    third.start()
    print(queue.get())
    third.join()
