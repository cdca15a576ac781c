# source: https://github.com/huggingface/datasets/issues/6435 (the program: diffusers examples/text_to_image/train_text_to_image_sdxl.py, with num_proc=6 added to the embedding map)
# family: CUDA initialised before a fork: `Dataset.map(num_proc=...)` forks workers that run the text encoders on the GPU
# symptom: "I ran dataset mapping with `num_proc=6` in it and got this error: RuntimeError: Cannot re-initialize CUDA in
#   forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method" (6x A100, Linux)
# hazard: `train_dataset.map(compute_embeddings_fn, batched=True, num_proc=6)` after the text encoders were moved to CUDA;
#   datasets runs map's workers in a fork-started multiprocess Pool, each calling encode_prompt on the GPU
# runs-on-cpu: no (CUDA, and datasets is absent from the venv; static-only). Two small embedding encoders stand in for
#   CLIP's, a whitespace tokenizer for the CLIP tokenizers, an in-memory Dataset for the captions
import functools

import torch
import torch.nn as nn
from datasets import Dataset

device = torch.device("cuda")


class TextEncoder(nn.Module):
    def __init__(self, vocab=1000, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, ids):
        return self.emb(ids)


def tokenize(captions, max_len=8):
    ids = torch.zeros(len(captions), max_len, dtype=torch.long)
    for i, caption in enumerate(captions):
        toks = [hash(w) % 1000 for w in caption.split()][:max_len]
        ids[i, : len(toks)] = torch.tensor(toks)
    return ids


def encode_prompt(batch, text_encoders, caption_column):
    prompt_embeds_list = []
    with torch.no_grad():
        ids = tokenize(batch[caption_column])
        for text_encoder in text_encoders:
            prompt_embeds_list.append(text_encoder(ids.to(text_encoder.emb.weight.device)))
    prompt_embeds = torch.cat(prompt_embeds_list, dim=-1)
    return {"prompt_embeds": prompt_embeds.cpu(), "pooled_prompt_embeds": prompt_embeds.mean(1).cpu()}


def main():
    text_encoder_one = TextEncoder().to(device)
    text_encoder_two = TextEncoder().to(device)
    train_dataset = Dataset.from_dict({"text": [f"a photo of object {i}" for i in range(64)]})
    compute_embeddings_fn = functools.partial(
        encode_prompt, text_encoders=[text_encoder_one, text_encoder_two], caption_column="text"
    )
    train_dataset = train_dataset.map(compute_embeddings_fn, batched=True, num_proc=6)  # hazard: GML204
    print(train_dataset)


if __name__ == "__main__":
    main()
