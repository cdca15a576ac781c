# source: https://github.com/Maclory/SPSR/issues/20 (code: code/test.py, code/data/__init__.py create_dataloader)
# family: tensors crossing processes: DataLoader workers started by top-level code (no `if __name__ == "__main__":`)
# symptom: running the test code: "RuntimeError: An attempt has been made to start a new process before the current
#   process has finished its bootstrapping phase ... you are not using fork to start your child processes and you
#   have forgotten to use the proper idiom in the main module"; the maintainer points to the freeze_support idiom
# hazard: test.py's module-level loop `for data in test_loader:` over the loaders create_dataloader built (the test
#   phase's loader has num_workers=1); each spawned worker imports test.py again and reaches the same loop
# runs-on-cpu: yes, under the spawn start method (Windows' default; the case sets it, as under Linux's fork it runs).
#   Random LR images stand in for the LR dataset, a conv for the SPSR generator; options are a dict, not a JSON file
# printed (torch 2.13): in the worker "RuntimeError: An attempt has been made to start a new process before the
#   current process has finished its bootstrapping phase.", then "RuntimeError: DataLoader worker (pid(s) ...) exited
#   unexpectedly"
import logging
import multiprocessing
import time

import torch
import torch.nn as nn
import torch.utils.data

multiprocessing.set_start_method('spawn', force=True)


def create_dataloader(dataset, dataset_opt):
    '''create dataloader '''
    phase = dataset_opt['phase']
    if phase == 'train':
        return torch.utils.data.DataLoader(
            dataset, batch_size=dataset_opt['batch_size'], shuffle=dataset_opt['use_shuffle'],
            num_workers=dataset_opt['n_workers'], drop_last=True, pin_memory=True)
    else:
        return torch.utils.data.DataLoader(
            dataset, batch_size=1, shuffle=False, num_workers=1, pin_memory=True)


class LRDataset(torch.utils.data.Dataset):
    def __init__(self, opt):
        self.opt = opt
        self.images = [torch.rand(3, 16, 16) for _ in range(4)]

    def __getitem__(self, index):
        return {'LR': self.images[index], 'LR_path': 'img_%d.png' % index}

    def __len__(self):
        return len(self.images)


def create_dataset(dataset_opt):
    return LRDataset(dataset_opt)


opt = {'datasets': {'test_1': {'name': 'set5', 'phase': 'test', 'mode': 'LR', 'dataroot_HR': None}}}
logger = logging.getLogger('base')

# Create test dataset and dataloader
test_loaders = []
for phase, dataset_opt in sorted(opt['datasets'].items()):
    test_set = create_dataset(dataset_opt)
    test_loader = create_dataloader(test_set, dataset_opt)
    test_loaders.append(test_loader)

# Create model
model = nn.Conv2d(3, 3, 3, padding=1)

for test_loader in test_loaders:
    test_set_name = test_loader.dataset.opt['name']
    test_start_time = time.time()
    for data in test_loader:  # hazard: GML211
        need_HR = False if test_loader.dataset.opt['dataroot_HR'] is None else True
        with torch.no_grad():
            sr_img = model(data['LR'])
        print(data['LR_path'][0], tuple(sr_img.shape))
