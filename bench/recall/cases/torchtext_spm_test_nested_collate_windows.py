# source: https://github.com/pytorch/text/issues/1076 (code: test/experimental/test_transforms_with_asset.py,
#   TestTransformsWithAsset.test_sentencepiece_with_dataloader, as the issue quotes it)
# family: tensors crossing processes: an unpicklable callable for spawned DataLoader workers
# symptom: "We added a test to cover the compatibility between SentencePiece and DataLoader. The test passes in the
#   Linux platform but fails under the Windows platform"; the traceback ends in the DataLoader's iterator
# hazard: `batch_func`, a function defined inside the test method, given as collate_fn to a DataLoader with
#   num_workers=2, which Windows' spawned workers receive by pickling
# runs-on-cpu: yes, under spawn (Windows' start method; the case sets it). A small tokenizer class stands in for the
#   downloaded SentencePiece model and torchtext's sentencepiece_processor
# printed (torch 2.13): AttributeError: Can't pickle local object
#   'TestTransformsWithAsset.test_sentencepiece_with_dataloader.<locals>.batch_func'
import unittest

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader


class SentencePieceProcessor:
    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, text):
        return [self.vocab.setdefault(w, len(self.vocab)) for w in text.split()]


def sentencepiece_processor(sp_model_path):
    return SentencePieceProcessor({"the": 13, "pretrained": 1465, "spm": 12824, "model": 304, "names": 24935})


class TestTransformsWithAsset(unittest.TestCase):
    def test_sentencepiece_with_dataloader(self):
        spm_processor = sentencepiece_processor('.data/text_bpe_25000.model')
        example_strings = ['the pretrained spm model names'] * 64
        ref_results = torch.tensor([[13, 1465, 12824, 304, 24935]] * 16, dtype=torch.long)

        def batch_func(data):
            return torch.tensor([spm_processor(text) for text in data], dtype=torch.long)

        dataloader = DataLoader(example_strings, batch_size=16, num_workers=2, collate_fn=batch_func)  # hazard: GML212
        for item in dataloader:
            self.assertEqual(item.tolist(), ref_results.tolist())


if __name__ == '__main__':
    mp.set_start_method('spawn')
    unittest.main()
