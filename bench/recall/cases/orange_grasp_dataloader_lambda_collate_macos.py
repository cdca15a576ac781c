# source: https://github.com/nickgkan/orange/issues/7 (code: src/data_loaders/base_data_loader.py GraspDataLoader,
#   src/train_testers/base_train_tester.py BaseTrainTester.train)
# family: tensors crossing processes: a lambda collate_fn, set by a DataLoader subclass, pickled for spawned workers
# symptom: on a MacBook, `python main.py --dataset=cornell --model=unet ...` stops at the first training batch:
#   "Can't pickle local object 'GraspDataLoader.__init__.<locals>.<lambda>'"
# hazard: `collate_fn=lambda data: grasp_collate_fn(data, dataset.features)` in GraspDataLoader.__init__ (a closure over
#   the dataset's feature set), with num_workers from the config and workers started by spawn (macOS' default)
# runs-on-cpu: yes, under the spawn start method (the case sets it; under Linux's fork it trains). A dataset of random
#   depth images and grasp maps stands in for the Cornell annotations, a conv for the U-Net; the trainer keeps the
#   loader set-up and the epoch loop, without checkpoints, early stopping or tqdm
# printed (torch 2.13): AttributeError: Can't pickle local object 'GraspDataLoader.__init__.<locals>.<lambda>'
import multiprocessing

import torch

multiprocessing.set_start_method('spawn', force=True)


class BaseDataset(torch.utils.data.Dataset):
    def __init__(self, annotations, features):
        self._annotations = annotations
        self.features = features

    def __getitem__(self, index):
        return {'depth_images': torch.rand(1, 32, 32), 'grasp_targets': torch.rand(1, 32, 32), 'ids': index}

    def __len__(self):
        return len(self._annotations)


def grasp_collate_fn(batch_data, features):
    """Collate function for custom data loading."""
    return_batch = {'ids': [item['ids'] for item in batch_data]}
    for feature in features:
        return_batch[feature] = torch.stack([item[feature].float() for item in batch_data])
    return return_batch


class GraspDataLoader(torch.utils.data.DataLoader):
    """Custom data loader for Jacquard dataset."""

    def __init__(self, dataset, batch_size, shuffle=True, num_workers=2, drop_last=False, use_cuda=False):
        """Initialize loader for given dataset and annotations."""
        super().__init__(
            dataset, batch_size=batch_size, shuffle=shuffle,
            num_workers=num_workers, drop_last=drop_last,
            collate_fn=lambda data: grasp_collate_fn(data, dataset.features)  # hazard: GML212
        )
        self._use_cuda = use_cuda


class GraspTrainTester:
    def __init__(self, net, batch_size=8, num_workers=2):
        self.net = net
        self._batch_size = batch_size
        self._num_workers = num_workers

    def _set_data_loaders(self, mode_ids={'train': 0, 'val': 1}):
        annotations = {split: list(range(16)) for split in mode_ids}
        datasets = {split: BaseDataset(annotations[split], {'depth_images', 'grasp_targets'}) for split in mode_ids}
        self._data_loaders = {
            split: GraspDataLoader(datasets[split], batch_size=self._batch_size, shuffle=split == 'train',
                                   num_workers=self._num_workers)
            for split in mode_ids
        }

    def train(self, optimizer, epochs=1):
        self.net.train()
        self._set_data_loaders({'train': 0, 'val': 1})
        self.data_loader = self._data_loaders['train']
        for epoch in range(epochs):
            for batch in self.data_loader:
                optimizer.zero_grad()
                loss = (self.net(batch['depth_images']) - batch['grasp_targets']).pow(2).mean()
                loss.backward()
                optimizer.step()


if __name__ == '__main__':
    net = torch.nn.Conv2d(1, 1, 3, padding=1)
    GraspTrainTester(net).train(torch.optim.Adam(net.parameters(), 0.002))
