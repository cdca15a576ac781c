# source: https://github.com/pytorch/pytorch/issues/10375 (the comment of neerajprad, 2018-10-24)
# family: tensors crossing processes: CUDA tensors put on a queue by worker processes that exit right after
# symptom: with two worker processes each putting one CUDA tensor on a shared queue and returning, the main process's
#   first queue.get() fails ("THCudaCheck FAIL ... StorageSharing.cpp ... unknown error", "invalid device pointer");
#   with CPU tensors, or one worker, it works
# hazard: `queue.put(torch.tensor(2).cuda())` in _producer, which returns right after
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch
import torch.multiprocessing as mp


def _producer(queue, value):
    queue.put(torch.tensor(value).cuda())  # hazard: GML209
    print("put", value)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    queue = mp.Queue()
    workers = [mp.Process(target=_producer, args=(queue, v)) for v in (1, 2)]
    for w in workers:
        w.start()
    r1 = queue.get()
    r2 = queue.get()
    for w in workers:
        w.join()
    print(r1, r2)
    print("end")
