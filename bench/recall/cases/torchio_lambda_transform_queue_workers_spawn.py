# source: https://github.com/TorchIO-project/torchio/issues/366
# family: tensors crossing processes: a lambda pickled for spawned DataLoader workers
# symptom: "Cannot employ a Lambda transform into SubjectsDatasets for Queue": with a `tio.Lambda` built from a
#   function of the script in the SubjectsDataset, the Queue's workers fail on macOS (spawn); the maintainer finds
#   it works once the function is a class defined in another file
# hazard: `tio.Lambda(lambda x: x.transpose(1, 2))` in the dataset that the Queue's num_workers=2 loader pickles
# runs-on-cpu: yes, with spawn set as macOS does. Stand-ins replace torchio's Subject, Lambda, SubjectsDataset and
#   Queue (a Dataset that fills itself from a DataLoader over the subjects with its own workers), and the sampler
# printed (torch 2.13): _pickle.PicklingError: Can't pickle <function <lambda> at 0x7f...>: attribute lookup <lambda>
#   on __main__ failed
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Lambda:
    def __init__(self, function):
        self.function = function

    def __call__(self, subject):
        return {k: self.function(v) for k, v in subject.items()}


class SubjectsDataset(Dataset):
    def __init__(self, subjects, transform=None):
        self._subjects, self._transform = subjects, transform

    def __len__(self):
        return len(self._subjects)

    def __getitem__(self, index):
        return self._transform(self._subjects[index])


class Queue(Dataset):
    def __init__(self, subjects_dataset, max_length, samples_per_volume, num_workers=0):
        self.subjects_dataset = subjects_dataset
        self.max_length, self.samples_per_volume = max_length, samples_per_volume
        self.num_workers = num_workers
        self.patches_list = []

    def __len__(self):
        return len(self.subjects_dataset) * self.samples_per_volume

    @staticmethod
    def _collate(batch):
        return batch[0]

    def _fill(self):
        loader = DataLoader(self.subjects_dataset, num_workers=self.num_workers, batch_size=1, collate_fn=self._collate)
        for subject in loader:
            self.patches_list.extend([subject["im"][:, :1]] * self.samples_per_volume)

    def __getitem__(self, _):
        if not self.patches_list:
            self._fill()
        return self.patches_list.pop()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    subject = {"im": torch.rand(1, 2, 3, 1)}
    transform = Lambda(lambda x: x.transpose(1, 2))  # hazard: GML212
    dataset = SubjectsDataset([subject, subject], transform=transform)
    queue = Queue(dataset, max_length=4, samples_per_volume=2, num_workers=2)
    loader = DataLoader(queue, batch_size=2)
    print(next(iter(loader)).shape)
