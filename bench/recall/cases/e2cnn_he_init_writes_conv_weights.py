# source: https://github.com/QUVA-Lab/e2cnn/issues/34 (code: e2cnn/nn/init.py, generalized_he_init; the reporter's
#   caller is AllanYangZhou/metalearning-symmetries generate_synthetic_data.py, which passes `conv.weights`)
# family: autograd in-place errors: a leaf that requires grad, or a view of one, written in place
# symptom: "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation." under
#   PyTorch 1.8 (the code worked on 1.1); the maintainer: the init methods write in place, pass `conv.weights.data`
# hazard: `tensor[:] = ...` in the init helper, with `tensor` the R2Conv's `weights` Parameter
# runs-on-cpu: yes. A two-method stand-in replaces e2cnn's BasisExpansion (dimension() and get_basis_info()), and a
#   small module holding `self.weights = Parameter(...)` stands in for R2Conv
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
#   (2.13 words it for the Parameter itself: `tensor[:] = ...` covers all of it)
import math
from collections import defaultdict

import torch
from torch.nn import Module, Parameter


class BasisExpansion:
    def __init__(self, infos):
        self.infos = infos

    def dimension(self):
        return len(self.infos)

    def get_basis_info(self):
        return iter(self.infos)


def generalized_he_init(tensor, basisexpansion):
    assert tensor.shape == (basisexpansion.dimension(),)
    vars = torch.ones_like(tensor)
    inputs_count = defaultdict(set)
    basis_count = defaultdict(int)
    for attr in basisexpansion.get_basis_info():
        inputs_count[attr["out_irreps_position"]].add(attr["in_irrep"])
        basis_count[(attr["in_irrep"], attr["out_irreps_position"])] += 1
    for w, attr in enumerate(basisexpansion.get_basis_info()):
        o = attr["out_irreps_position"]
        vars[w] = 1. / math.sqrt(len(inputs_count[o]) * basis_count[(attr["in_irrep"], o)])
    tensor[:] = vars * torch.randn_like(tensor)  # hazard: GML108


class R2Conv(Module):
    def __init__(self, infos):
        super().__init__()
        self.basisexpansion = BasisExpansion(infos)
        self.weights = Parameter(torch.zeros(self.basisexpansion.dimension()), requires_grad=True)


infos = [{"in_irrep": i % 2, "out_irreps_position": i % 3} for i in range(12)]
conv = R2Conv(infos)
generalized_he_init(conv.weights, conv.basisexpansion)  # hazard-via: GML108
print(conv.weights)
