# source: https://github.com/huggingface/accelerate/issues/1372
# family: environment variables set too late
# symptom: "setting CUDA_VISIBLE_DEVICES will not work when import get_peft_model (only import this method) before
#   loading model by invoking load_checkpoint_and_dispatch": with the peft import above the os.environ line, the
#   ChatGLM-6B shards are dispatched over all 8 T4 cards instead of the 4 named
# hazard: CUDA_VISIBLE_DEVICES set after `from peft import get_peft_model`, whose import initialises CUDA (peft
#   imports bitsandbytes and accelerate's device utilities)
# runs-on-cpu: no (needs several GPUs, transformers, accelerate, peft and the reporter's local ChatGLM copy)
# printed (torch 2.13): - (CUDA only)
import torch
from transformers.models.localglm.modeling_chatglm import ChatGLMForConditionalGeneration
from transformers.models.localglm.tokenization_chatglm import ChatGLMTokenizer
from transformers.models.localglm.configuration_chatglm import ChatGLMConfig
from accelerate import init_empty_weights, load_checkpoint_and_dispatch
import os
from peft import get_peft_model

os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"  # hazard: GML301

BASE_DIR = "/path/llama/chatglm-6b/"

CONFIG_PATH = BASE_DIR + "config.json"
TOKENIZER_PATH = BASE_DIR + "tokenizer_config.json"

config = ChatGLMConfig.from_pretrained(CONFIG_PATH)
tokenizer = ChatGLMTokenizer.from_pretrained(BASE_DIR)
with init_empty_weights():
    model = ChatGLMForConditionalGeneration(config)

model = load_checkpoint_and_dispatch(model, BASE_DIR, device_map="auto", no_split_module_classes=["GLMBlock"])
print(model.hf_device_map, torch.cuda.device_count())
