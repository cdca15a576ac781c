# source: https://github.com/Quantum-Cheese/DeepReinforcementLearning_Pytorch/issues/3 (code: Actor_Critic/A3C/
#   agent_a3c.py, worker.py, untils.py and a3c_main.py)
# family: tensors crossing processes: fork after CUDA
# symptom: the A3C code: "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must
#   use the 'spawn' start method"; "on the CPU alone there are problems too"
# hazard: `[w.start() for w in self.workers]` forks the Worker processes (multiprocessing's default on Linux) after
#   A3C.__init__ put the global networks on cuda:0; each worker's run() moves its states to the GPU
# runs-on-cpu: no (needs CUDA). A small stand-in environment replaces gym's CartPole; the three modules are written
#   out in one file
# printed (torch 2.13): - (CUDA only)
import multiprocessing as mp

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

GAMMA = 0.9
LR = 1e-4
GLOBAL_MAX_EPISODE = 50

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class CartPoleStandIn:
    def reset(self):
        self.t = 0
        return np.random.rand(4).astype(np.float32)

    def step(self, action):
        self.t += 1
        return np.random.rand(4).astype(np.float32), 1.0, self.t >= 10, {}


class ValueNetwork(nn.Module):
    def __init__(self, input_dim, output_dim):
        super(ValueNetwork, self).__init__()
        self.fc1 = nn.Linear(input_dim, 256)
        self.fc2 = nn.Linear(256, output_dim)

    def forward(self, state):
        return self.fc2(F.relu(self.fc1(state)))


class ActorDiscrete(nn.Module):
    def __init__(self, state_size, action_size):
        super(ActorDiscrete, self).__init__()
        self.fc1 = nn.Linear(state_size, 128)
        self.fc2 = nn.Linear(128, action_size)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))), dim=1)

    def act(self, state):
        probs = self.forward(state)
        action = Categorical(probs).sample()
        return action.item(), probs[:, action.item()].item()


class Worker(mp.Process):
    def __init__(self, env, state_size, action_size, id, global_valueNet, global_policyNet, global_epi, rew_queue,
                 max_epi, gamma):
        super(Worker, self).__init__()
        self.env = env
        self.name = str(id)
        self.memory = []
        self.global_valueNet, self.global_policyNet = global_valueNet, global_policyNet
        self.global_epi = global_epi
        self.rew_queue = rew_queue
        self.max_epi = max_epi
        self.gamma = gamma
        self.local_policyNet = ActorDiscrete(state_size, action_size).to(device)
        self.local_valueNet = ValueNetwork(state_size, 1).to(device)

    def run(self):
        while self.global_epi.value < self.max_epi:
            state = self.env.reset()
            total_reward = 0
            while True:
                state = torch.from_numpy(state).float().unsqueeze(0).to(device)
                action, prob = self.local_policyNet.act(state)
                next_state, reward, done, _ = self.env.step(action)
                self.memory.append([state, action, reward, next_state, done])
                total_reward += reward
                state = next_state
                if done:
                    with self.global_epi.get_lock():
                        self.global_epi.value += 1
                    self.rew_queue.put(total_reward)
                    break
            self.memory = []
        self.rew_queue.put(None)


class A3C():
    def __init__(self, env, state_size, action_size):
        self.max_episode = GLOBAL_MAX_EPISODE
        self.global_episode = mp.Value('i', 0)
        self.rew_queue = mp.Queue()
        self.worker_num = mp.cpu_count()

        self.global_valueNet = ValueNetwork(state_size, 1).to(device)
        self.global_valueNet.share_memory()
        self.global_policyNet = ActorDiscrete(state_size, action_size).to(device)
        self.global_policyNet.share_memory()
        self.global_optimizer_policy = optim.Adam(self.global_policyNet.parameters(), lr=LR)

        self.workers = [Worker(env, state_size, action_size, i, self.global_valueNet, self.global_policyNet,
                               self.global_episode, self.rew_queue, self.max_episode, GAMMA)
                        for i in range(self.worker_num)]

    def train_worker(self):
        scores = []
        [w.start() for w in self.workers]  # hazard: GML204
        while True:
            r = self.rew_queue.get()
            if r is not None:
                scores.append(r)
            else:
                break
        [w.join() for w in self.workers]
        return scores


def train_agent_for_env(continuous):
    env = CartPoleStandIn()
    agent = A3C(env, 4, 2)
    scores = agent.train_worker()
    return agent, scores


if __name__ == "__main__":
    agent, scores_cartPole = train_agent_for_env(False)
    print(len(scores_cartPole))
