# source: https://github.com/pyg-team/pytorch_geometric/pull/1126 (code: torch_geometric/data/dataloader.py before the
#   PR, DenseDataLoader and its nested dense_collate)
# family: tensors crossing processes: an unpicklable callable for spawned DataLoader workers
# symptom: "The original nested functions `collate` and `dense_collate` cause problems on Windows because subprocess
#   (on Win) uses pickle for serialization when multiprocessing. Lambda and nested functions cannot be pickled on
#   Windows."; the PR moves dense_collate to module level and turns collate into a Collater object
# hazard: `dense_collate`, defined inside DenseDataLoader.__init__ and handed to the DataLoader base as collate_fn; a
#   user's DenseDataLoader(..., num_workers=2) then pickles it for each spawned worker
# runs-on-cpu: yes, under spawn (Windows' start method; the case sets it). Small stand-ins replace torch_geometric's
#   Data and Batch, and a list of fixed-size graphs replaces the dataset
# printed (torch 2.13): AttributeError: Can't pickle local object 'DenseDataLoader.__init__.<locals>.dense_collate'
import torch
import torch.multiprocessing as mp
import torch.utils.data
from torch.utils.data.dataloader import default_collate


class Data(dict):
    @property
    def keys(self):
        return list(super().keys())


class Batch(Data):
    pass


class DenseDataLoader(torch.utils.data.DataLoader):
    def __init__(self, dataset, batch_size=1, shuffle=False, **kwargs):
        def dense_collate(data_list):
            batch = Batch()
            for key in data_list[0].keys:
                batch[key] = default_collate([d[key] for d in data_list])
            return batch

        super(DenseDataLoader, self).__init__(
            dataset, batch_size, shuffle, collate_fn=dense_collate, **kwargs)  # hazard: GML212


def main():
    dataset = [Data(x=torch.randn(10, 3), adj=torch.ones(10, 10), mask=torch.ones(10, dtype=torch.bool))
               for _ in range(32)]
    loader = DenseDataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
    for data in loader:
        print(data["x"].shape, data["adj"].shape)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    main()
