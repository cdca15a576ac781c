# source: https://github.com/NVIDIA/apex/issues/1923 (the reporter's diffs to apex/contrib/nccl_allocator/
#   nccl_allocator.py and to Megatron-LM's megatron/training/training.py train_step)
# family: memory-control APIs
# symptom: "Report error when apply nccl_allocator to torch.cuda.memory.change_current_allocator": pre-training with
#   the swap added to train_step fails at its first step (the thread's traceback is cut short; the allocator can only
#   be changed before the first CUDA allocation, and torch raises "Can't swap an already initialized allocator")
# hazard: `torch.cuda.memory.change_current_allocator(my_nccl_allocator)` inside train_step, called by the training
#   loop after the model, optimizer and batches already live on the GPU
# runs-on-cpu: no (CUDA). A CUDAPluggableAllocator over libc's malloc/free stands in for apex's
#   _apex_nccl_allocator.get_nccl_allocator() (it is never called: the swap is refused first); a Linear for the GPT
#   model, a tensor iterator for the data iterator, get_args/get_timers and the rerun state machine are dropped
# printed (torch 2.11, on the device machine): RuntimeError: Can't swap an already initialized allocator
import torch
import torch.nn as nn


def get_nccl_allocator():
    _allocator = torch.cuda.memory.CUDAPluggableAllocator("libc.so.6", "malloc", "free")
    return _allocator


def forward_step(data_iterator, model):
    tokens = next(data_iterator)
    return model(tokens).float().pow(2).mean()


def train_step(forward_step_func, data_iterator, model, optimizer):
    """Single training step."""
    my_nccl_allocator = get_nccl_allocator()
    torch.cuda.memory.change_current_allocator(my_nccl_allocator)  # hazard: GML403
    optimizer.zero_grad()
    loss = forward_step_func(data_iterator, model)
    loss.backward()
    optimizer.step()
    return loss.item()


def train(forward_step_func, model, optimizer, train_data_iterator, train_iters):
    iteration = 0
    while iteration < train_iters:
        loss = train_step(forward_step_func, train_data_iterator, model, optimizer)  # hazard-via: GML403
        iteration += 1
        print("iteration", iteration, "lm loss", loss)


def pretrain():
    model = nn.Linear(64, 64).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    train_data_iterator = iter([torch.randn(8, 64, device="cuda") for _ in range(4)])
    train(forward_step, model, optimizer, train_data_iterator, train_iters=4)


if __name__ == "__main__":
    pretrain()
