# source: https://github.com/pytorch/pytorch/issues/148835 (the eager reproduction in the maintainer's comment)
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: "Error detected in ReluBackward0" under torch.compile; the maintainer shows eager fails too: relu saves
#   its result for backward, and relu_() on that result mutates the saved tensor
# hazard: F.relu_ on the output that the previous F.relu saved
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [10]], which is output 0 of Relu, is at version 1; expected version 0 instead. ...
import torch
torch.set_grad_enabled(True)


class SimpleModel(torch.nn.Module):
    def __init__(self):
        super(SimpleModel, self).__init__()
        self.linear = torch.nn.Linear(10, 10)

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.relu(x)
        x = torch.nn.functional.relu_(x)  # hazard: GML109
        return x


model = SimpleModel()
inputs = torch.randn(1, 10)
compiled_model = model
compiled_out = compiled_model(*inputs)
try:
    compiled_out.sum().backward()
except RuntimeError as error:
    print("RuntimeError:", error)
