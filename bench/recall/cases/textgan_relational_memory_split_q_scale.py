# source: https://github.com/williamSYSU/TextGAN-PyTorch/pull/69 (also issue #46; code: models/relational_rnn_general.py, RelationalMemory.multihead_attention, before the fix)
# family: autograd in-place error on a multi-output view (split with a list of sizes)
# symptom: run_relgan.py fails in pretraining: "Output 0 of SplitWithSizesBackward0 is a view and is being modified
#   inplace. This view is the output of a function that returns multiple views." at `q *= (self.key_size ** -0.5)`
# hazard: `q *= ...` on the first output of torch.split(qkv_transpose, [key, key, value], -1) in the attention helper
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of SplitWithSizes is a view and is being modified inplace. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class RelationalMemory(nn.Module):
    def __init__(self, mem_slots, head_size, input_size, num_heads=2):
        super().__init__()
        self.mem_slots = mem_slots
        self.head_size = head_size
        self.num_heads = num_heads
        self.mem_size = head_size * num_heads
        self.key_size = head_size
        self.qkv_size = 2 * self.key_size + head_size
        self.qkv_projector = nn.Linear(self.mem_size, self.qkv_size * num_heads)
        self.qkv_layernorm = nn.LayerNorm([mem_slots + 1, self.qkv_size * num_heads])
        self.input_projector = nn.Linear(input_size, self.mem_size)
        self.attended_memory_layernorm = nn.LayerNorm([mem_slots + 1, self.mem_size])

    def initial_state(self, batch_size):
        state = torch.stack([torch.eye(self.mem_slots) for _ in range(batch_size)])
        pad = torch.zeros(batch_size, self.mem_slots, self.mem_size - self.mem_slots)
        return torch.cat([state, pad], -1)

    def multihead_attention(self, memory):
        qkv = self.qkv_layernorm(self.qkv_projector(memory))
        mem_slots = memory.shape[1]
        qkv_reshape = qkv.view(qkv.shape[0], mem_slots, self.num_heads, self.qkv_size)
        qkv_transpose = qkv_reshape.permute(0, 2, 1, 3)
        q, k, v = torch.split(qkv_transpose, [self.key_size, self.key_size, self.head_size], -1)
        q *= (self.key_size ** -0.5)  # hazard: GML105
        weights = F.softmax(torch.matmul(q, k.permute(0, 1, 3, 2)), dim=-1)
        output = torch.matmul(weights, v).permute(0, 2, 1, 3).contiguous()
        return output.view(output.shape[0], output.shape[1], -1)

    def forward_step(self, inputs, memory):
        inputs = self.input_projector(inputs.view(inputs.shape[0], -1)).unsqueeze(1)
        memory_plus_input = torch.cat([memory, inputs], dim=1)
        attended = self.multihead_attention(memory_plus_input)
        next_memory = self.attended_memory_layernorm(memory_plus_input + attended)[:, :-1, :]
        return next_memory.reshape(next_memory.shape[0], -1), next_memory

    def forward(self, inputs, memory):
        memory = memory.detach()
        logits = []
        for step in range(inputs.shape[1]):
            logit, memory = self.forward_step(inputs[:, step], memory)
            logits.append(logit.unsqueeze(1))
        return torch.cat(logits, dim=1), memory


gen = RelationalMemory(mem_slots=1, head_size=8, input_size=6)
optimizer = torch.optim.Adam(gen.parameters(), lr=1e-3)
hidden = gen.initial_state(batch_size=4)
out, hidden = gen(torch.randn(4, 5, 6), hidden)
loss = out.pow(2).mean()
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("pretrain loss", loss.item())
