# source: https://github.com/pytorch/pytorch/issues/65418
# family: tensors crossing processes: a tensor sent through a queue by a process that exits before it is received
# symptom: "Sending tensors from short-lived multiprocessing process fails on Linux": the child puts 333 tensors and a
#   StopIteration marker and returns; the parent's q.get() fails in rebuild_storage_fd (resource_sharer,
#   ConnectionRefusedError / FileNotFoundError) once the child has exited
# hazard: the child's `q.put((th.randn(3, 5), None))`, after which proc_fn returns while the tensors are unread
# runs-on-cpu: yes
# printed (torch 2.13): the two sharing strategies and file_descriptor, then q.get() fails in rebuild_storage_fd: FileNotFoundError: [Errno 2] No such file or directory (3 runs of 3)
import torch.multiprocessing as mp
import torch as th

print(mp.get_all_sharing_strategies())
print(mp.get_sharing_strategy())
# mp.set_sharing_strategy("file_system")

def proc_fn(q):
    for x in range(333):
        q.put((th.randn(3, 5), None))  # hazard: GML209
    q.put((None, StopIteration()))

q = mp.Queue(maxsize=100)
proc = mp.Process(target=proc_fn, args=(q,), daemon=True)
proc.start()

while True:
    x = q.get()
    if x[1] is not None:
        break
print("received all")
