# source: https://github.com/hppRC/bert-classification-tutorial/issues/3 (code: src/train.py, main, at e833030)
# family: tensors crossing processes: a collate_fn nested in main, handed to DataLoader workers by a nested helper
# symptom: on Windows (Anaconda, Python 3.10) `python src/train.py` fails in the first epoch:
#   "AttributeError: Can't pickle local object 'main.<locals>.collate_fn'" (spawn pickles the collate_fn for the workers)
# hazard: `collate_fn=collate_fn` (nested in main) in the DataLoader that the nested create_loader builds with num_workers=4
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default; a character-code stand-in for the tokenizer)
# printed (torch 2.13): AttributeError: Can't pickle local object 'main.<locals>.collate_fn' (run with multiprocessing.set_start_method("spawn"))
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def load_dataset(n=32):
    return [{"title": f"title {i}", "body": "body " * (i % 5 + 1), "label": i % 3} for i in range(n)]


def tokenize(titles, bodies, max_length):
    ids = [[ord(c) % 100 for c in (t + " " + b)][:max_length] for t, b in zip(titles, bodies)]
    return torch.tensor([x + [0] * (max_length - len(x)) for x in ids])


def main(batch_size=8, max_seq_len=32, epochs=1):
    model = nn.Sequential(nn.Embedding(100, 16), nn.Flatten(1), nn.Linear(16 * 32, 3))
    train_dataset = load_dataset()
    val_dataset = load_dataset(8)

    def collate_fn(data_list):
        title = [d["title"] for d in data_list]
        body = [d["body"] for d in data_list]
        input_ids = tokenize(title, body, max_length=max_seq_len)
        labels = torch.LongTensor([d["label"] for d in data_list])
        return {"input_ids": input_ids, "labels": labels}

    def create_loader(dataset, batch_size=None, shuffle=False):
        return DataLoader(
            dataset,
            collate_fn=collate_fn,  # hazard: GML212
            batch_size=batch_size or 8,
            shuffle=shuffle,
            num_workers=4,
            pin_memory=False,
        )

    train_dataloader = create_loader(train_dataset, batch_size=batch_size, shuffle=True)
    val_dataloader = create_loader(val_dataset)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for epoch in range(epochs):
        model.train()
        for batch in train_dataloader:
            loss = nn.functional.cross_entropy(model(batch["input_ids"]), batch["labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(b["input_ids"]).argmax(-1) == b["labels"]).sum().item() for b in val_dataloader)
        print("epoch", epoch, "val correct", correct)


if __name__ == "__main__":
    main()
