# source: https://github.com/Thrandis/EKFAC-pytorch/issues/8 (code: ekfac.py, EKFAC with sua=True, ra=True; the Conv2d paths kept)
# family: in-place writes on expanded tensors / overlapping memory
# symptom: the EKFAC preconditioner with sua=True fails at `m2.mul_(self.alpha).add_(...)` in _precond_sua_ra with
#   "unsupported operation: more than one element of the written-to tensor refers to a single memory location"
# hazard: `m2.mul_(self.alpha)` on state['m2'], which _compute_kfe stored as an `.expand(-1, -1, ws[2], ws[3])`
# runs-on-cpu: yes (torch.symeig, gone from torch 2.x, replaced by torch.linalg.eigh; the rest as in ekfac.py)
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
import torch
import torch.nn as nn
from torch.optim.optimizer import Optimizer

class EKFAC(Optimizer):

    def __init__(self, net, eps, sua=False, ra=False, update_freq=1, alpha=.75):
        self.eps, self.sua, self.ra, self.update_freq, self.alpha = eps, sua, ra, update_freq, alpha
        self.params, self._iteration_counter = [], 0
        for mod in net.modules():
            if mod.__class__.__name__ == 'Conv2d':
                mod.register_forward_pre_hook(self._save_input)
                mod.register_full_backward_hook(self._save_grad_output)
                self.params.append({'params': [mod.weight], 'mod': mod, 'layer_type': 'Conv2d'})
        super(EKFAC, self).__init__(self.params, {})

    def step(self, update_stats=True, update_params=True):
        for group in self.param_groups:
            weight = group['params'][0]; state = self.state[weight]
            if self._iteration_counter % self.update_freq == 0:
                self._compute_kfe(group, state)
            if group['layer_type'] == 'Conv2d' and self.sua and self.ra:
                self._precond_sua_ra(weight, None, group, state)
        self._iteration_counter += 1

    def _save_input(self, mod, i):
        self.state[mod]['x'] = i[0]
    def _save_grad_output(self, mod, grad_input, grad_output):
        self.state[mod]['gy'] = grad_output[0] * grad_output[0].size(0)

    def _precond_sua_ra(self, weight, bias, group, state):
        kfe_x, kfe_gy, m2 = state['kfe_x'], state['kfe_gy'], state['m2']
        g = weight.grad.data
        bs = self.state[group['mod']]['x'].size(0)
        g_kfe = self._to_kfe_sua(g, kfe_x, kfe_gy)
        m2.mul_(self.alpha).add_((1. - self.alpha) * bs, g_kfe**2)  # hazard: GML104
        weight.grad.data = self._to_kfe_sua(g_kfe / (m2 + self.eps), kfe_x.t(), kfe_gy.t())

    def _compute_kfe(self, group, state):
        x = self.state[group['mod']]['x'].data.permute(1, 0, 2, 3).contiguous().view(group['mod'].in_channels, -1)
        Ex, state['kfe_x'] = torch.linalg.eigh(torch.mm(x, x.t()) / float(x.shape[1]))
        gy = self.state[group['mod']]['gy'].data.permute(1, 0, 2, 3)
        state['num_locations'] = gy.shape[2] * gy.shape[3]; gy = gy.contiguous().view(gy.shape[0], -1)
        Eg, state['kfe_gy'] = torch.linalg.eigh(torch.mm(gy, gy.t()) / float(gy.shape[1]))
        state['m2'] = Eg.unsqueeze(1) * Ex.unsqueeze(0) * state['num_locations']
        ws = group['params'][0].grad.data.size()
        state['m2'] = state['m2'].view(Eg.size(0), Ex.size(0), 1, 1).expand(-1, -1, ws[2], ws[3])

    def _to_kfe_sua(self, g, vx, vg):
        sg = g.size(); g = torch.mm(vg.t(), g.view(sg[0], -1)).view(vg.size(1), sg[1], sg[2], sg[3])
        g = torch.mm(g.permute(0, 2, 3, 1).contiguous().view(-1, sg[1]), vx)
        return g.view(vg.size(1), sg[2], sg[3], vx.size(1)).permute(0, 3, 1, 2)

net = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.ReLU(), nn.Conv2d(8, 4, 3, bias=False))
precond = EKFAC(net, eps=0.0005, sua=True, ra=True, update_freq=50, alpha=0.75)
net(torch.randn(16, 3, 12, 12)).pow(2).mean().backward()
precond.step()
