# source: https://github.com/PaccMann/paccmann_datasets/issues/99 (code: pytoda/smiles/smiles_language.py, _set_token_len_fn)
# family: tensors crossing processes: a lambda kept on an object the dataset holds, pickled for spawned workers
# symptom: "AttributeError: Can't pickle local object 'SMILESTokenizer._set_token_len_fn.<locals>.<lambda>'": datasets
#   and training scripts using the 'spawn' start method fail
# hazard: the lambda `_set_token_len_fn` stores on the language object, which the dataset keeps and the spawned
#   DataLoader workers receive by pickling
# runs-on-cpu: yes (the script chooses spawn, as the reporter's training scripts do). A few SMILES strings and a
#   per-character tokenizer stand in for pytoda's vocabulary and tokenizer
# printed (torch 2.13): AttributeError: Can't pickle local object
#   'SMILESLanguage._set_token_len_fn.<locals>.<lambda>' (ForkingPickler.dump, popen_spawn_posix)
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class SMILESLanguage:
    def __init__(self, add_start_and_stop=False):
        self.token_to_index = {"<PAD>": 0, "<START>": 1, "<STOP>": 2}
        self.add_start_and_stop = add_start_and_stop
        self.max_token_sequence_length = 0
        self._set_token_len_fn(add_start_and_stop)

    def _set_token_len_fn(self, add_start_and_stop):
        # how many token indexes a naive token list becomes after the encoding transforms
        if add_start_and_stop:
            self._get_total_number_of_tokens_fn = lambda tokens: len(tokens) + 2  # hazard: GML212
        else:
            self._get_total_number_of_tokens_fn = len

    def add_smiles(self, smiles):
        tokens = list(smiles)
        for token in tokens:
            self.token_to_index.setdefault(token, len(self.token_to_index))
        length = self._get_total_number_of_tokens_fn(tokens)
        self.max_token_sequence_length = max(self.max_token_sequence_length, length)

    def smiles_to_token_indexes(self, smiles):
        indexes = [self.token_to_index[token] for token in smiles]
        if self.add_start_and_stop:
            indexes = [1] + indexes + [2]
        return torch.tensor(indexes + [0] * (self.max_token_sequence_length - len(indexes)))


class SMILESTokenizer(SMILESLanguage):
    def __init__(self, padding=True, add_start_and_stop=True):
        super().__init__(add_start_and_stop=add_start_and_stop)
        self.padding = padding


class SMILESTokenizerDataset(Dataset):
    def __init__(self, smiles, smiles_language):
        self.smiles = smiles
        self.smiles_language = smiles_language
        for s in smiles:
            self.smiles_language.add_smiles(s)

    def __len__(self):
        return len(self.smiles)

    def __getitem__(self, index):
        return self.smiles_language.smiles_to_token_indexes(self.smiles[index])


def main():
    language = SMILESTokenizer(add_start_and_stop=True)
    dataset = SMILESTokenizerDataset(["CCO", "c1ccccc1", "CC(=O)O", "CCN"], language)
    loader = DataLoader(dataset, batch_size=2, shuffle=True, num_workers=2)
    for batch in loader:
        print(batch.shape)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    main()
