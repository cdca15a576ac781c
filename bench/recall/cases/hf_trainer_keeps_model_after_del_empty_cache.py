# source: https://github.com/huggingface/transformers/issues/26571
# family: memory-control APIs: `del model` then empty_cache() while something else still refers to the model
# symptom: "Can't release memory occupied by model after trainer.train() with del model and gc.collect()":
#   memory_allocated stays at the model's size after `del model; gc.collect(); torch.cuda.empty_cache()`; the
#   maintainer: the Trainer still holds the model, `del model, trainer` frees it
# hazard: `del model`, then torch.cuda.empty_cache() while `trainer` (trainer.model and its optimizer) still refers
#   to the model
# runs-on-cpu: no (CUDA; needs transformers and datasets). imdb as in the reporter's script
# printed (torch 2.13): - (CUDA only)
import gc

import torch
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)


def memory_stats():
    return f"Memory allocated: {torch.cuda.memory_allocated()/1024**2}\nMemory reserved: {torch.cuda.memory_reserved()/1024**2}"


imdb = load_dataset("imdb", split="train[:256]").train_test_split(test_size=0.5)
tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")


def preprocess_function(examples):
    return tokenizer(examples["text"], truncation=True)


tokenized_imdb = imdb.map(preprocess_function, batched=True)
data_collator = DataCollatorWithPadding(tokenizer=tokenizer)

model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
training_args = TrainingArguments(output_dir="my_awesome_model", learning_rate=2e-5, per_device_train_batch_size=16,
                                  num_train_epochs=1, weight_decay=0.01, save_strategy="no", report_to=[])
trainer = Trainer(model=model, args=training_args, train_dataset=tokenized_imdb["train"],
                  eval_dataset=tokenized_imdb["test"], tokenizer=tokenizer, data_collator=data_collator)
trainer.train()
print(memory_stats())

del model
gc.collect()
torch.cuda.empty_cache()  # hazard: GML407
print(memory_stats())
