# source: https://github.com/abetlen/llama-cpp-python/issues/1308
# family: environment variable set too late (CUDA_VISIBLE_DEVICES after torch initialised the driver)
# symptom: calling `torch.cuda.is_available()` once before setting CUDA_VISIBLE_DEVICES makes the next Llama(...)
#   follow the value CUDA_VISIBLE_DEVICES had when is_available() ran, not the one set afterwards
# hazard: `os.environ["CUDA_VISIBLE_DEVICES"] = ...` after torch.cuda.is_available(), before the model is loaded
# runs-on-cpu: no (CUDA and llama_cpp: static only)
# printed (torch 2.13): - (CUDA only)
import argparse
import os

import torch
from llama_cpp import Llama


def pick_backend():
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(model_path, gpu):
    backend = pick_backend()
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # hazard: GML301
    n_gpu_layers = -1 if backend == "cuda" else 0
    return Llama(model_path=model_path, n_gpu_layers=n_gpu_layers, verbose=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="model.gguf")
    parser.add_argument("--gpu", type=int, default=1)
    args = parser.parse_args()
    llm = load_model(args.model, args.gpu)
    print(llm("Q: What is the capital of France? A:", max_tokens=8)["choices"][0]["text"])
