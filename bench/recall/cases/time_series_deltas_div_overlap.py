# source: https://github.com/pytorch/pytorch/issues/24843
# family: in-place op whose source overlaps its destination (each element divided by its predecessor, in place)
# symptom: "in-place operations over ranges with overlap can lead to unexpected results": converting a time series into
#   ratios with `a[1:] /= a[:len(a)-1]` gave [10.0, 1.1, 10.9091, 1.1917, 11.7483, ...] instead of
#   a[1:] / a[:len(a)-1] = [1.1, 1.0909, 1.0833, ...] (each step reads a value already overwritten)
# hazard: `prices[1:] /= prices[:len(prices) - 1]` in the ratios helper
# runs-on-cpu: yes (a helper that turns a price series into step ratios stands in for the report's REPL lines)
# printed (torch 2.13): RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor
#   refer to a single memory location. Please clone() the tensor before performing the operation.
#   (the torch of the report returned the wrong values silently)
import torch


def step_ratios(series):
    prices = series.clone()
    prices[1:] /= prices[:len(prices) - 1]  # hazard: GML110
    prices[0] = 1.0
    return prices


a = torch.tensor([10, 11, 12, 13, 14, 13, 12, 11], dtype=torch.float)
print("expected:", a[1:] / a[:len(a) - 1])
print("in place:", step_ratios(a))
