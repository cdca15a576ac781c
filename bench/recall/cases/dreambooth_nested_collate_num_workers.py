# source: https://github.com/huggingface/diffusers/issues/1466 (code: examples/dreambooth/train_dreambooth.py, main)
# family: tensors crossing processes: a collate_fn defined inside main, pickled for spawned DataLoader workers
# symptom: "Dreambooth example is not compatible with Windows or MacOS": the DataLoader has num_workers=1 and the
#   collate_fn is not a top-level function; the first `for step, batch in enumerate(train_dataloader)` fails pickling it
# hazard: `collate_fn=collate_fn` (the function nested in main) with num_workers=1 under spawn
# runs-on-cpu: yes (under the spawn start method, the reporter's macOS default)
# printed (torch 2.13): AttributeError: Can't pickle local object 'main.<locals>.collate_fn' (run with multiprocessing.set_start_method("spawn"))
import torch
from torch.utils.data import Dataset


class DreamBoothDataset(Dataset):
    def __init__(self, n=8, size=16):
        self.images = [torch.randn(3, size, size) for _ in range(n)]
        self.prompt_ids = [torch.randint(0, 1000, (77,)) for _ in range(n)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return {"instance_images": self.images[index], "instance_prompt_ids": self.prompt_ids[index]}


def main(train_batch_size=2, with_prior_preservation=False):
    train_dataset = DreamBoothDataset()

    def collate_fn(examples):
        input_ids = [example["instance_prompt_ids"] for example in examples]
        pixel_values = [example["instance_images"] for example in examples]
        if with_prior_preservation:
            input_ids += input_ids
            pixel_values += pixel_values
        pixel_values = torch.stack(pixel_values).to(memory_format=torch.contiguous_format).float()
        return {"input_ids": torch.stack(input_ids), "pixel_values": pixel_values}

    train_dataloader = torch.utils.data.DataLoader(
        train_dataset, batch_size=train_batch_size, shuffle=True, collate_fn=collate_fn, num_workers=1  # hazard: GML212
    )
    for step, batch in enumerate(train_dataloader):
        print(step, batch["pixel_values"].shape)


if __name__ == "__main__":
    main()
