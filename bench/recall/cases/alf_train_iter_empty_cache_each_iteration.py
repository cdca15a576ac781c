# source: https://github.com/HorizonRobotics/alf/pull/1649 (code: alf/algorithms/rl_algorithm.py, RLAlgorithm.train_iter
#   and the trainer's loop that calls it, with TrainerConfig.empty_cache)
# family: misuse of memory-control APIs
# symptom: "Previously, when TrainerConfig.empty_cache is set, torch.cuda.empty_cache() is used in
#   _train_experience(). With this PR, empty_cache() is also called at the beginning of train_iter()": with the option
#   on, every training iteration releases the allocator's cached blocks and the next one allocates them again
# hazard: `torch.cuda.empty_cache()` at the start of train_iter, which the trainer calls once per iteration, each
#   iteration running backward and an optimizer step
# runs-on-cpu: no (the cost is on a GPU). A small policy network and random experience stand in for alf's algorithm,
#   unroll and loss
# printed (torch 2.13): - (CUDA only)
from types import SimpleNamespace

import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class RLAlgorithm(nn.Module):
    def __init__(self, config):
        super().__init__()
        self._config = config
        self.on_policy = True
        self._net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
        self._optimizer = torch.optim.Adam(self._net.parameters(), lr=1e-3)

    def unroll(self, unroll_length):
        return torch.randn(unroll_length, 8, device=device)

    def _train_iter_on_policy(self):
        experience = self.unroll(self._config.unroll_length)
        loss = self._net(experience).pow(2).mean()
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return experience.shape[0]

    def train_iter(self):
        """Perform one iteration of training."""
        assert self.on_policy is not None

        if self._config.empty_cache:
            torch.cuda.empty_cache()  # hazard: GML406
        if self.on_policy:
            return self._train_iter_on_policy()


class RLTrainer:
    def __init__(self, config):
        self._config = config
        self._algorithm = RLAlgorithm(config)

    def _train(self):
        iter_num = 0
        while iter_num < self._config.num_iterations:
            train_steps = self._algorithm.train_iter()
            iter_num += 1
        return iter_num


config = SimpleNamespace(empty_cache=True, unroll_length=32, num_iterations=20)
trainer = RLTrainer(config)
print(trainer._train())
