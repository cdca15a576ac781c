# source: https://github.com/pytorch/pytorch/issues/91894
# family: in-place write whose source overlaps its destination (a rolling frame buffer shifted by one step)
# symptom: shifting frames [0, 8] into [1, 9] of a CUDA buffer with `buffer[:, 1:num_steps] = buffer[:, 0:num_steps-1]`
#   gives a different sum on every run (the same seed, deterministic algorithms on); cloning the source slice fixes it
# hazard: the overlapping slice assignment on the CUDA buffer in the step function
# runs-on-cpu: no (CUDA: static only)
# printed (torch 2.13): - (CUDA only)
import torch

torch.use_deterministic_algorithms(True)

frame_dim = 140
num_steps = 10
num_envs = 512


class FrameStack:
    def __init__(self, device="cuda"):
        self.buffer = torch.zeros(num_envs, num_steps, frame_dim, device=device)

    def push(self, frame):
        self.buffer[:, 1:num_steps] = self.buffer[:, 0:(num_steps - 1)]  # hazard: GML110
        self.buffer[:, 0] = frame
        return self.buffer


def go():
    torch.manual_seed(0)
    src = torch.randn(num_envs, num_steps, frame_dim).cuda()
    stack = FrameStack()
    stack.buffer.copy_(src)
    out = stack.push(torch.randn(num_envs, frame_dim).cuda())
    print("Sum:", out.cpu().sum().item(), src.cpu().sum().item())


for i in range(10):
    go()
