# source: https://github.com/pytorch/pytorch/issues/149155
# family: tensors crossing processes: a CUDA tensor put on a queue by a process that returns before it is received
# symptom: "torch.multiprocessing.Queue Zeroes Out Tensors on Retrieval": f1 sends tensor([1, 2]) on cuda:0 and
#   returns; f2, polling the queue, prints "Tensor received: tensor([0, 0], device='cuda:0')" (Windows, torch 2.5/2.6)
# hazard: `shared_queue.put(t)` in f1, which then returns: its process exits while the CUDA tensor is in flight
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch
import torch.multiprocessing as mp


def f1(shared_queue):
    t = torch.tensor((1, 2), device="cuda:0")
    print("Tensor sent: ", t)
    shared_queue.put(t)  # hazard: GML209


def f2(shared_queue):
    while True:
        if shared_queue.empty():
            continue
        t = shared_queue.get()
        print(f"Tensor received: {t}")
        break


if __name__ == "__main__":
    mp.set_start_method("spawn", True)
    shared_queue = torch.multiprocessing.Queue()
    p1 = mp.Process(target=f1, args=(shared_queue,))
    p2 = mp.Process(target=f2, args=(shared_queue,))
    p1.start()
    p2.start()
    p1.join()
    p2.join()
