# source: https://github.com/2U1/Qwen-VL-Series-Finetune/pull/178 (code: src/train/monkey_patch_forward.py, the
#   mixed-modality forward; transformers' enable_input_require_grads)
# family: autograd in-place errors: an in-place write on a view of a leaf that requires grad
# symptom: with Qwen2.5-VL 3B, QLoRA and gradient_checkpointing, training fails at `flat.index_copy_(0, row_idx, img)`
#   with "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation"; the
#   PR replaces it by `flat = flat.index_copy(0, row_idx, img)`
# hazard: the embeddings come out of a frozen embedding whose forward hook (enable_input_require_grads, needed by
#   gradient checkpointing) makes them a leaf that requires grad; `flat` is a view of them, written by index_copy_
# runs-on-cpu: yes. A small embedding, a linear "visual" tower and a linear language model stand in for Qwen2.5-VL
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place
#   operation.
import torch
import torch.nn as nn

IMAGE_TOKEN_ID = 7


class TinyVLModel(nn.Module):
    def __init__(self, vocab=16, hidden=8):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.visual = nn.Linear(12, hidden)
        self.language_model = nn.Linear(hidden, vocab)

    def get_input_embeddings(self):
        return self.embed_tokens

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)


def qwen2_5_mixed_modality_forward(self, input_ids, pixel_values=None):
    inputs_embeds = self.get_input_embeddings()(input_ids)
    if pixel_values is not None:
        img = self.visual(pixel_values).to(inputs_embeds.dtype)
        B, S, H = inputs_embeds.shape
        flat = inputs_embeds.view(-1, H)
        row_idx = (input_ids.view(-1) == IMAGE_TOKEN_ID).nonzero(as_tuple=True)[0]
        flat.index_copy_(0, row_idx, img)  # hazard: GML108
    return self.language_model(inputs_embeds)


TinyVLModel.forward = qwen2_5_mixed_modality_forward

model = TinyVLModel()
for p in model.embed_tokens.parameters():
    p.requires_grad_(False)  # the base model is frozen under QLoRA
model.enable_input_require_grads()
input_ids = torch.tensor([[1, IMAGE_TOKEN_ID, IMAGE_TOKEN_ID, 3, 4]])
pixel_values = torch.randn(2, 12)
logits = model(input_ids, pixel_values=pixel_values)
logits.sum().backward()
print("step done")
