# source: https://github.com/pytorch/pytorch/issues/3491
# family: tensors crossing processes: CUDA tensors handed to forked children
# symptom: "RuntimeError: CUDA error (3): initialization error" in every child: A, B and the shared result D live on
#   the GPU, and mp.Process (fork, Linux's default) starts children that index them
# hazard: mp.Process(target=subprocesses, args=(A, B, D, ...)) started with CUDA tensors under fork
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch
import torch.multiprocessing as mp

def subprocesses(A, B, D, i, j, size):
    D[(j * size):((j + 1) * size), i] = torch.mul(B[:, i], A[j, i])

def task(A, B):

    size1 = A.shape
    size2 = B.shape
    D = torch.zeros([size1[0]*size2[0], size1[1]]).cuda()
    D.share_memory_()

    for i in range(1):
        processes = []
        for j in range(size1[0]):
            p = mp.Process(target=subprocesses, args=(A, B, D, i, j, size2[0]))  # hazard: GML203
            p.start()
            processes.append(p)
        for p in processes:
            p.join()

    return D

A = torch.rand(3, 3).cuda()
B = torch.rand(3, 3).cuda()
C = task(A,B)
print(C)
