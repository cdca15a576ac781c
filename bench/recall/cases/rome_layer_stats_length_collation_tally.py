# source: https://github.com/zjunlp/EasyEdit/issues/336 (code: easyeditor/util/runningstats.py, tally and make_loader; the layer_stats loop of its ROME/MEMIT code, as the traceback shows)
# family: tensors crossing processes: a nested collate function from a factory, handed to DataLoader workers under spawn
# symptom: on Windows, computing the layer statistics for ROME fails at `yield from loader` in tally's wrapped_loader:
#   "AttributeError: Can't pickle local object 'length_collation.<locals>.collate_fn'"
# hazard: `collate_fn=length_collation(batch_tokens)` passed through tally(**kwargs) to a DataLoader with num_workers=2
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default; random token ids stand in for
#   wikitext and a mean of embeddings for the MLP key statistics)
# printed (torch 2.13): AttributeError: Can't pickle local object 'length_collation.<locals>.collate_fn' (run with
#   multiprocessing.set_start_method("spawn"); under Linux's fork it prints the mean)
import torch
from torch.utils.data import DataLoader


class Mean:
    def __init__(self):
        self.count = 0
        self._mean = None

    def add(self, a):
        batch_mean = a.mean(0)
        n = a.shape[0]
        if self._mean is None:
            self._mean, self.count = batch_mean, n
            return
        self.count += n
        self._mean += (batch_mean - self._mean) * (n / self.count)

    def mean(self):
        return self._mean


def make_loader(dataset, sample_size=None, batch_size=1, **kwargs):
    if sample_size is not None:
        dataset = torch.utils.data.Subset(dataset, range(min(sample_size, len(dataset))))
    return DataLoader(dataset, batch_size=batch_size, **kwargs)


def tally(stat, dataset, cache=None, **kwargs):
    loader = make_loader(dataset, **kwargs)

    def wrapped_loader():
        yield from loader
        if cache is not None:
            torch.save(stat.mean(), cache)

    return wrapped_loader()


def length_collation(token_size):
    def collate_fn(items):
        batches = []
        batch = []
        for item in sorted(items, key=len, reverse=True):
            if sum(len(x) for x in batch) + len(item) > token_size and batch:
                batches.append(torch.nn.utils.rnn.pad_sequence(batch, batch_first=True))
                batch = []
            batch.append(item)
        if batch:
            batches.append(torch.nn.utils.rnn.pad_sequence(batch, batch_first=True))
        return batches
    return collate_fn


def layer_stats(embed, ds, batch_tokens=64, sample_size=32):
    stat = Mean()
    loader = tally(
        stat,
        ds,
        sample_size=sample_size,
        batch_size=8,
        collate_fn=length_collation(batch_tokens),  # hazard: GML212
        num_workers=2,
    )
    with torch.no_grad():
        for batch_group in loader:
            for batch in batch_group:
                stat.add(embed(batch).flatten(0, 1))
    return stat


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = [torch.randint(1, 100, (int(n),)) for n in torch.randint(3, 12, (40,))]
    embed = torch.nn.Embedding(100, 4)
    print(layer_stats(embed, ds).mean())
