# source: https://github.com/jonathanking/sidechainnet/issues/56 (code: sidechainnet/dataloaders/collate.py, get_collate_fn and prepare_dataloaders, before the fix)
# family: tensors crossing processes: a nested collate function, returned by a helper, pickled for spawned workers
# symptom: on macOS, iterating d["train"] fails: "AttributeError: Can't pickle local object
#   'get_collate_fn.<locals>.collate_fn'" (it works on Colab, Linux)
# hazard: `collate_fn=get_collate_fn(aggregate_model_input)` handed to a DataLoader with workers started by spawn
# runs-on-cpu: yes (under the spawn start method, the reporter's macOS default)
# printed (torch 2.13): AttributeError: Can't pickle local object 'get_collate_fn.<locals>.collate_fn' (run with multiprocessing.set_start_method("spawn"))
import torch
import torch.utils.data


def get_collate_fn(aggregate_input):
    def collate_fn(insts):
        seqs, angs = zip(*insts)
        longest = max(len(s) for s in seqs)
        padded_seqs = torch.zeros(len(seqs), longest, dtype=torch.long)
        padded_angs = torch.zeros(len(angs), longest, 12)
        for i, (s, a) in enumerate(zip(seqs, angs)):
            padded_seqs[i, : len(s)] = s
            padded_angs[i, : len(a)] = a
        if aggregate_input:
            return padded_seqs.unsqueeze(-1).float(), padded_angs
        return padded_seqs, padded_angs
    return collate_fn


def prepare_dataloaders(data, aggregate_model_input, batch_size=4, num_workers=2):
    train_loader = torch.utils.data.DataLoader(
        data["train"],
        batch_size=batch_size,
        num_workers=num_workers,
        collate_fn=get_collate_fn(aggregate_model_input))  # hazard: GML212
    return {"train": train_loader}


if __name__ == "__main__":
    lengths = [7, 9, 5, 12, 8, 6, 10, 11]
    data = {"train": [(torch.randint(0, 20, (n,)), torch.randn(n, 12)) for n in lengths]}
    d = prepare_dataloaders(data, aggregate_model_input=True)
    batches = []
    for batch in d["train"]:
        batches.append(batch)
    print(len(batches))
