# source: https://github.com/huggingface/trl/issues/2686 (code: trl/trainer/ppo_trainer.py at 801582e, PPOTrainer.train,
#   the empty_cache the issue points at (line 454) and the one after each update)
# family: memory-control APIs
# symptom: "Shouldn't we torch.cuda.empty_cache() after computing the logprobs ... also after loss computation?
#   #grpo ... we wipe the cache in same scenario in ppo"; the maintainer, closing it: the freed memory "goes straight
#   back to PyTorch's caching allocator for reuse; empty_cache() only hands already-free blocks back to the OS, so in
#   the hot loop it mostly just costs throughput"
# hazard: `torch.cuda.empty_cache()` after each rollout forward chunk, inside the update loop that runs backward and
#   optimizer.step()
# runs-on-cpu: no (the cost is the CUDA allocator's). A linear policy and value head stand in for the language
#   models, random token ids for the dataset, and a plain policy-gradient loss for PPO's clipped one
# printed (torch 2.13): - (CUDA only)
import torch
import torch.nn as nn
import torch.nn.functional as F


class PPOTrainer:
    def __init__(self, policy, value_model, optimizer, num_total_batches=8, local_rollout_forward_batch_size=4,
                 num_ppo_epochs=2):
        self.model = nn.ModuleDict({"policy": policy, "value_model": value_model})
        self.optimizer = optimizer
        self.num_total_batches = num_total_batches
        self.local_rollout_forward_batch_size = local_rollout_forward_batch_size
        self.num_ppo_epochs = num_ppo_epochs

    def train(self, device):
        for update in range(1, self.num_total_batches + 1):
            queries = torch.randint(0, 32, (16, 8), device=device)
            with torch.no_grad():
                logprobs = []
                for i in range(0, queries.shape[0], self.local_rollout_forward_batch_size):
                    query = queries[i: i + self.local_rollout_forward_batch_size]
                    logits = self.model["policy"](F.one_hot(query, 32).float())
                    logprob = torch.log_softmax(logits, dim=-1).max(-1).values
                    del logits
                    torch.cuda.empty_cache()  # hazard: GML406
                    logprobs.append(logprob)
                logprobs = torch.cat(logprobs, 0)
            for ppo_epoch_idx in range(self.num_ppo_epochs):
                new_logits = self.model["policy"](F.one_hot(queries, 32).float())
                new_logprobs = torch.log_softmax(new_logits, dim=-1).max(-1).values
                vpred = self.model["value_model"](F.one_hot(queries, 32).float()).squeeze(-1)
                loss = -(torch.exp(new_logprobs - logprobs) * vpred.detach()).mean() + vpred.pow(2).mean()
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            del logprobs, new_logits, new_logprobs, vpred, loss
            torch.cuda.empty_cache()


if __name__ == "__main__":
    device = torch.device("cuda")
    policy, value_model = nn.Linear(32, 32).to(device), nn.Linear(32, 1).to(device)
    optimizer = torch.optim.Adam(list(policy.parameters()) + list(value_model.parameters()), lr=1e-4)
    PPOTrainer(policy, value_model, optimizer).train(device)
