# source: https://github.com/huggingface/sentence-transformers/pull/1920 (code: sentence_transformers/
#   SentenceTransformer.py, start_multi_process_pool and _encode_multi_process_worker, with the PR's added line)
# family: memory-control APIs
# symptom: the PR empties the CUDA cache after each chunk a pool worker encodes ("empty GPU cache after moving data to
#   CPU (numpy) in each worker"); the maintainer closes it: emptying the cache is not recommended and nothing shows it
#   is needed (each call hands the cached blocks back to the driver, to be requested again for the next chunk)
# hazard: torch.cuda.empty_cache() inside the worker's loop, once per chunk
# runs-on-cpu: no (the pool's workers each take a CUDA device). A linear encoder stands in for the transformer
# printed (torch 2.13): - (CUDA only)
import queue

import torch
import torch.multiprocessing as mp


class SentenceTransformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)

    def encode(self, sentences, device, batch_size=32, convert_to_numpy=True):
        self.to(device)
        feats = torch.stack([torch.full((16,), float(len(s))) for s in sentences]).to(device)
        with torch.no_grad():
            return self.lin(feats).cpu().numpy()


def _encode_multi_process_worker(target_device, model, input_queue, results_queue):
    while True:
        try:
            id, batch_size, sentences = input_queue.get(timeout=5)
            embeddings = model.encode(sentences, device=target_device, batch_size=batch_size, convert_to_numpy=True)
            torch.cuda.empty_cache()  # hazard: GML406
            results_queue.put([id, embeddings])
        except queue.Empty:
            break


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    input_queue, output_queue = ctx.Queue(), ctx.Queue()
    model = SentenceTransformer()
    procs = [ctx.Process(target=_encode_multi_process_worker, args=(f"cuda:{i}", model, input_queue, output_queue),
                         daemon=True) for i in range(torch.cuda.device_count())]
    for p in procs:
        p.start()
    for chunk_id in range(20):
        input_queue.put([chunk_id, 32, ["a sentence"] * 64])
    results = sorted([output_queue.get() for _ in range(20)], key=lambda x: x[0])
    print(len(results))
