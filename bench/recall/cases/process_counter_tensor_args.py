# source: https://github.com/pytorch/pytorch/issues/86467
# family: tensors crossing processes: a child's in-place write to a tensor from Process(args=...)
# symptom: "tensor obj automatically moved to shared memory upon Process launch": a tensor counter passed in a
#   Process' args is shared, and the children's `counter += 1` shows in the parent; an int counter is not
# hazard: `counter += 1` in the child on the tensor the parent handed over
# runs-on-cpu: yes (reproduces under the spawn start method, the default on macOS and Windows)
# printed (torch 2.13): under spawn, tensor counter: "is counter shared: True", then "outside proc: counter: 2" (the int counter stays 0); under Linux's fork the tensor is not shared and stays 0
import os
import torch
import torch.multiprocessing as mp


def setup(rank: int, world_size: int):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '29531'
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world_size)


def worker_fn(rank, num_procs, counter):
    setup(rank, num_procs)
    counter += 1  # hazard: GML202
    if rank == 0:
        if torch.torch.is_tensor(counter):
            print(f'\tinside multiproc, rank_{rank}:\tis counter shared:', counter.is_shared())
        print(f'\t{"inside proc after push:":<35} {"counter":>10}: {counter}')
    torch.distributed.destroy_process_group()


def run(counter, num_procs):
    print(f'\t{"start:":<35} {"counter":>10}: {counter}')
    processes = [mp.Process(target=worker_fn, args=(rank, num_procs, counter)) for rank in range(num_procs)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()

    print(f'\t{"outside proc:":<35} {"counter":>10}: {counter}')

    counter += 1

    print(f'\t{"outside proc after one more push:":<35} {"counter":>10}: {counter}')


if __name__ == '__main__':
    print('int counter:')
    run(0, 2)
    print('tensor counter:')
    run(torch.tensor(0), 2)
