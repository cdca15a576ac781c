# source: https://github.com/huggingface/transformers/issues/47741 (code: models/canine/modeling_canine.py,
#   CanineForQuestionAnswering.forward)
# family: aliasing that silently changes values: a model's forward writes a tensor its caller passed in
# symptom: "Several models modify caller-provided tensors in place during forward": after
#   `canine(input_ids=..., start_positions=start_positions, end_positions=...)` the caller's label tensor
#   `torch.tensor([9999])` has been rewritten (to the sequence length), so anything the caller computes from that
#   batch afterwards uses other labels
# hazard: `start_positions.clamp_(0, ignored_index)` on the tensor the caller passed as start_positions
# runs-on-cpu: yes. A small encoder (embedding and linear) stands in for the Canine encoder; the QA head as in the
#   model
# printed (torch 2.13): start_positions after forward: tensor([4]) (passed tensor([9999]))
import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss


class CanineForQuestionAnswering(nn.Module):
    def __init__(self, hidden_size=16, vocab=32):
        super().__init__()
        self.canine = nn.Sequential(nn.Embedding(vocab, hidden_size), nn.Linear(hidden_size, hidden_size))
        self.qa_outputs = nn.Linear(hidden_size, 2)

    def forward(self, input_ids=None, start_positions=None, end_positions=None):
        sequence_output = self.canine(input_ids)
        logits = self.qa_outputs(sequence_output)
        start_logits, end_logits = logits.split(1, dim=-1)
        start_logits = start_logits.squeeze(-1)
        end_logits = end_logits.squeeze(-1)

        total_loss = None
        if start_positions is not None and end_positions is not None:
            if len(start_positions.size()) > 1:
                start_positions = start_positions.squeeze(-1)
            if len(end_positions.size()) > 1:
                end_positions = end_positions.squeeze(-1)
            ignored_index = start_logits.size(1)
            start_positions.clamp_(0, ignored_index)  # hazard: GML107
            end_positions.clamp_(0, ignored_index)

            loss_fct = CrossEntropyLoss(ignore_index=ignored_index)
            start_loss = loss_fct(start_logits, start_positions)
            end_loss = loss_fct(end_logits, end_positions)
            total_loss = (start_loss + end_loss) / 2
        return total_loss, start_logits, end_logits


torch.manual_seed(0)
canine = CanineForQuestionAnswering().eval()
start_positions = torch.tensor([9999])
end_positions = torch.tensor([9999])
canine(input_ids=torch.tensor([[1, 2, 3, 4]]), start_positions=start_positions, end_positions=end_positions)
print("start_positions after forward:", start_positions, "(passed tensor([9999]))")
