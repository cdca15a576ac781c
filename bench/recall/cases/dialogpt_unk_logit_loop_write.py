# source: https://github.com/microsoft/DialoGPT/issues/57 (code: the GPT2-chitchat style interact loop it quotes)
# family: autograd in-place errors: writes on the outputs of unbind (iterating a tensor)
# symptom: `next_token_logit[tokenizer.convert_tokens_to_ids('[UNK]')] = -float('Inf')` raises "RuntimeError: Output 0
#   of UnbindBackward is a view and is being modified inplace. This view is the output of a function that returns
#   multiple views."
# hazard: the item write on next_token_logit, a row that `for ... in next_token_logits` takes by unbind
# runs-on-cpu: yes (a small language model stands in for GPT2LMHeadModel, a dict for the tokenizer)
# printed (torch 2.13): RuntimeError: Output 0 of Select is a view and is being modified inplace. This view is the output of a function that returns multiple views. [...] (at the hazard line)
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab_size=50, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, input_ids):
        return (self.head(self.embed(input_ids)),)


class Tokenizer:
    vocab = {'[UNK]': 1, '[SEP]': 2}
    sep_token_id = 2

    def convert_tokens_to_ids(self, token):
        return self.vocab[token]


model, tokenizer = TinyLM(), Tokenizer()
batch_size, repetition_penalty, temperature = 2, 1.2, 0.8
curr_input_tensors = torch.tensor([[3, 4, 5]] * batch_size, dtype=torch.long)
generated = []
for _ in range(5):
    outputs = model(input_ids=curr_input_tensors)
    next_token_logits = outputs[0][:, -1, :]
    for index in range(batch_size):
        for token_id in set([token_ids[index] for token_ids in generated]):
            next_token_logits[index][token_id] /= repetition_penalty
    next_token_logits = next_token_logits / temperature
    for next_token_logit in next_token_logits:
        next_token_logit[tokenizer.convert_tokens_to_ids('[UNK]')] = -float('Inf')  # hazard: GML105
    next_token = torch.multinomial(F.softmax(next_token_logits, dim=-1), num_samples=1)
    generated.append([token.item() for token in next_token[:, 0]])
    curr_input_tensors = torch.cat((curr_input_tensors, next_token), dim=-1)
print(generated)
