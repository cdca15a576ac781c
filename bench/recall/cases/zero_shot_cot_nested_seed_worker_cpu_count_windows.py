# source: https://github.com/kojima-takeshi188/zero_shot_cot/issues/9 (code: utils.py, MyDataset and
#   setup_data_loader, and main.py, which iterates the loader)
# family: tensors crossing processes: an unpicklable callable for spawned DataLoader workers
# symptom: on Windows, running main.py: "for i, data in enumerate(dataloader): ... w.start() ...
#   AttributeError: Can't pickle local object 'setup_data_loader.<locals>.seed_worker'"
# hazard: `worker_init_fn=seed_worker`, the def nested in setup_data_loader, with num_workers =
#   min(multiprocessing.cpu_count(), args.max_num_worker) under spawn
# runs-on-cpu: yes, under spawn (Windows' start method; the case sets it). Four written-out questions stand in for
#   the dataset files data_reader reads; the language-model call is left out
# printed (torch 2.13): AttributeError: Can't pickle local object 'setup_data_loader.<locals>.seed_worker'
import argparse
import multiprocessing
import random

import numpy as np
import torch
from torch.utils.data import Dataset


def fix_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def data_reader(args):
    questions = ["There are 3 apples and 2 pears. How many fruits?"] * 4
    answers = ["5"] * 4
    return questions, answers


class MyDataset(Dataset):
    def __init__(self, args):
        super().__init__()
        self.questions, self.answers = data_reader(args)
        self.len = len(self.questions)

    def __len__(self):
        return self.len

    def __getitem__(self, index):
        input = self.questions[index]
        output = self.answers[index]
        return input, output


def setup_data_loader(args):
    # fix randomness of dataloader to ensure reproducibility
    fix_seed(args.random_seed)
    worker_seed = torch.initial_seed() % 2 ** 32
    print("worker_seed : {}".format(worker_seed))

    def seed_worker(worker_id):
        np.random.seed(worker_seed)
        random.seed(worker_seed)

    g = torch.Generator()
    g.manual_seed(worker_seed)

    dataloader_num_workers = multiprocessing.cpu_count()
    dataloader_num_workers = min(dataloader_num_workers, args.max_num_worker)
    print("dataloader_num_workers: " + str(dataloader_num_workers))

    dataset = MyDataset(args)

    dataloader = torch.utils.data.DataLoader(dataset,
                                             shuffle=True,
                                             batch_size=args.minibatch_size,
                                             drop_last=False,
                                             num_workers=dataloader_num_workers,
                                             worker_init_fn=seed_worker,  # hazard: GML212
                                             generator=g,
                                             pin_memory=True)
    return dataloader


def parse_arguments():
    parser = argparse.ArgumentParser(description="Zero-shot-CoT")
    parser.add_argument("--random_seed", type=int, default=1, help="random seed")
    parser.add_argument("--dataset", type=str, default="multiarith")
    parser.add_argument("--minibatch_size", type=int, default=1, choices=[1])
    parser.add_argument("--max_num_worker", type=int, default=3, help="maximum number of workers for dataloader")
    return parser.parse_args()


def main():
    args = parse_arguments()
    dataloader = setup_data_loader(args)
    for i, data in enumerate(dataloader):
        x, y = data
        print(i, x[0][:20], y[0])


if __name__ == "__main__":
    torch.multiprocessing.set_start_method("spawn")
    main()
