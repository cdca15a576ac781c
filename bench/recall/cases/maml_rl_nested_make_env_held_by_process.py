# source: https://github.com/tristandeleu/pytorch-maml-rl/issues/51 (code: maml_rl/samplers/sampler.py make_env, maml_rl/samplers/multi_task_sampler.py MultiTaskSampler and SamplerWorker)
# family: tensors crossing processes: a nested function kept by a Process subclass started under spawn
# symptom: after adding `mp.set_start_method('spawn')` (to use CUDA in the samplers), `python train.py` fails at
#   `worker.start()` in MultiTaskSampler.__init__: "AttributeError: Can't pickle local object 'make_env.<locals>._make_env'"
#   (each SamplerWorker keeps a vector env built from the closures make_env returns, and spawn pickles the worker)
# hazard: `worker.start()` on SamplerWorker processes whose `self.envs` holds the `_make_env` closures
# runs-on-cpu: yes (a counter env and a list-holding vector env stand in for gym and SyncVectorEnv)
# printed (torch 2.13): AttributeError: Can't pickle local object 'make_env.<locals>._make_env' (the script sets spawn
#   itself, as the reporter did, so it fails the same way under Linux)
import torch
import torch.multiprocessing as mp


class CounterEnv:
    def __init__(self, name, seed=None):
        self.name = name
        self.state = 0 if seed is None else seed

    def step(self, action):
        self.state += int(action)
        return self.state


def make_env(env_name, env_kwargs={}, seed=None):
    def _make_env():
        return CounterEnv(env_name, seed=seed, **env_kwargs)
    return _make_env


class SyncVectorEnv:
    def __init__(self, env_fns):
        self.env_fns = env_fns
        self.envs = [fn() for fn in env_fns]


class SamplerWorker(mp.Process):
    def __init__(self, index, env_name, env_kwargs, batch_size, task_queue, train_queue):
        super().__init__()
        env_fns = [make_env(env_name, env_kwargs=env_kwargs) for _ in range(batch_size)]
        self.envs = SyncVectorEnv(env_fns)
        self.index = index
        self.task_queue = task_queue
        self.train_queue = train_queue

    def run(self):
        while True:
            task = self.task_queue.get()
            if task is None:
                break
            rewards = torch.tensor([env.step(task) for env in self.envs.envs])
            self.train_queue.put((self.index, rewards))


class MultiTaskSampler:
    def __init__(self, env_name, env_kwargs, batch_size, num_workers=2):
        self.task_queue = mp.Queue()
        self.train_queue = mp.Queue()
        self.workers = [SamplerWorker(index, env_name, env_kwargs, batch_size, self.task_queue, self.train_queue)
                        for index in range(num_workers)]
        for worker in self.workers:
            worker.daemon = True
            worker.start()  # hazard: GML212

    def sample(self, tasks):
        for task in tasks:
            self.task_queue.put(task)
        return [self.train_queue.get() for _ in tasks]

    def close(self):
        for _ in self.workers:
            self.task_queue.put(None)
        for worker in self.workers:
            worker.join()


def main():
    sampler = MultiTaskSampler("2DNavigation-v0", {}, batch_size=4)
    print(sampler.sample([1, 2, 3]))
    sampler.close()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    main()
