# source: https://github.com/snap-stanford/pretrain-gnns/issues/75 (code: chem/dataloader.py DataLoaderMasking, chem/pretrain_masking.py)
# family: tensors crossing processes: a lambda collate_fn, set by a DataLoader subclass, pickled for spawned workers
# symptom: on Windows, pretrain_masking.py stops at the first batch: "AttributeError: Can't pickle local object
#   'DataLoaderMasking.__init__.<locals>.<lambda>'"
# hazard: `collate_fn=lambda data_list: ...` in DataLoaderMasking.__init__, with the workers started by spawn
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default)
# printed (torch 2.13): AttributeError: Can't pickle local object 'DataLoaderMasking.__init__.<locals>.<lambda>' (run with multiprocessing.set_start_method("spawn"))
import torch
import torch.utils.data


class BatchMasking:
    # stand-in for batch.BatchMasking (a torch_geometric Batch of masked molecules)
    def __init__(self, x):
        self.x = x

    @staticmethod
    def from_data_list(data_list):
        return BatchMasking(torch.cat(data_list))


class DataLoaderMasking(torch.utils.data.DataLoader):
    def __init__(self, dataset, batch_size=1, shuffle=True, **kwargs):
        super(DataLoaderMasking, self).__init__(
            dataset,
            batch_size,
            shuffle,
            collate_fn=lambda data_list: BatchMasking.from_data_list(data_list),  # hazard: GML212
            **kwargs)


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch.x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    dataset = [torch.randn(5, 8) for _ in range(64)]  # stand-in for MoleculeDataset with MaskAtom
    loader = DataLoaderMasking(dataset, batch_size=16, shuffle=True, num_workers=4)
    model = torch.nn.Linear(8, 8)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, 3):
        print("====epoch " + str(epoch))
        train(model, loader, optimizer)


if __name__ == "__main__":
    main()
