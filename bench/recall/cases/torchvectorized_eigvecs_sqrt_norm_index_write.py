# source: https://github.com/banctilrobitaille/torch-vectorized/pull/6 (code: torchvectorized/vlinalg.py before the PR,
#   _compute_eigenvalues, _compute_eigenvectors and vSymEig, and the PR's tests/test_backprop.py loop)
# family: autograd in-place errors: a tensor saved for backward then modified
# symptom: "Fixed undefined square-root derivative at 0, remove inplace modification of vector norm" (branch
#   fix/Eigenvec-backprop-error): optimising a volume of 3x3 matrices through vSymEig(..., eigenvectors=True) fails
#   in backward; the PR replaces `norm[torch.where(norm == 0)] = 1` by a sqrt with an epsilon
# hazard: `norm[torch.where(norm == 0)] = 1` writes the output of torch.sqrt, which sqrt saved for its backward
# runs-on-cpu: yes. Small volumes; a local sym() stands in for torchvectorized.utils.sym; 2 optimiser steps
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.DoubleTensor [2, 3, 2, 2, 2]], which is output 0 of Sqrt, is at version 1;
#   expected version 0 instead. ...
from math import pi

import torch


def sym(inputs):
    return (inputs + inputs[:, [0, 3, 6, 1, 4, 7, 2, 5, 8], :, :, :]) / 2.0


def _compute_eigenvalues(input: torch.Tensor):
    b, c, d, h, w = input.size()
    a11 = input[:, 0, :, :, :].double()
    a12 = input[:, 1, :, :, :].double()
    a13 = input[:, 2, :, :, :].double()
    a22 = input[:, 4, :, :, :].double()
    a23 = input[:, 5, :, :, :].double()
    a33 = input[:, 8, :, :, :].double()
    eig_vals = torch.zeros(b, 3, d, h, w).to(input.device).double()

    nd = torch.pow(a12, 2) + torch.pow(a13, 2) + torch.pow(a23, 2)

    if torch.any(nd != 0):
        q = (a11 + a22 + a33) / 3.0
        p = torch.pow((a11 - q), 2) + torch.pow((a22 - q), 2) + torch.pow((a33 - q), 2) + 2.0 * nd
        p = torch.sqrt(p / 6.0)

        r = torch.pow((1.0 / p), 3) * ((a11 - q) * ((a22 - q) * (a33 - q) - a23 * a23) - a12 * (
                a12 * (a33 - q) - a13 * a23) + a13 * (a12 * a23 - a13 * (a22 - q))) / 2.0

        phi = torch.acos(r) / 3.0
        phi[r <= -1] = pi / 3
        phi[r >= 1] = 0

        eig_vals[:, 0, :, :, :] = q + 2 * p * torch.cos(phi)
        eig_vals[:, 2, :, :, :] = q + 2 * p * torch.cos(phi + pi * (2.0 / 3.0))
        eig_vals[:, 1, :, :, :] = 3 * q - eig_vals[:, 0, :, :, :] - eig_vals[:, 2, :, :, :]

    return eig_vals


def _compute_eigenvectors(input: torch.Tensor, eigenvalues: torch.Tensor):
    a11 = input[:, 0, :, :, :].unsqueeze(1).expand(eigenvalues.size()).double()
    a12 = input[:, 1, :, :, :].unsqueeze(1).expand(eigenvalues.size()).double()
    a13 = input[:, 2, :, :, :].unsqueeze(1).expand(eigenvalues.size()).double()
    a22 = input[:, 4, :, :, :].unsqueeze(1).expand(eigenvalues.size()).double()
    a23 = input[:, 5, :, :, :].unsqueeze(1).expand(eigenvalues.size()).double()

    u0 = a12 * a23 - a13 * (a22 - eigenvalues)
    u1 = a12 * a13 - a23 * (a11 - eigenvalues)
    u2 = (a11 - eigenvalues) * (a22 - eigenvalues) - a12 * a12
    norm = torch.sqrt(torch.pow(u0, 2) + torch.pow(u1, 2) + torch.pow(u2, 2))
    norm[torch.where(norm == 0)] = 1  # hazard: GML109
    u0 = u0 / norm
    u1 = u1 / norm
    u2 = u2 / norm

    return torch.cat([u0.unsqueeze(1), u1.unsqueeze(1), u2.unsqueeze(1)], dim=1)


def vSymEig(inputs, eigenvectors=False, descending_eigenvals=False):
    eig_vals = _compute_eigenvalues(inputs)
    eig_vecs = _compute_eigenvectors(inputs, eig_vals) if eigenvectors else None
    eig_vals, sort_idx = torch.sort(eig_vals, dim=1, descending=descending_eigenvals)
    if eigenvectors:
        sort_idx = sort_idx.unsqueeze(1).expand(eig_vecs.size())
        eig_vecs = eig_vecs.gather(dim=2, index=sort_idx)
    return eig_vals.float(), eig_vecs.float() if eig_vecs is not None else None


if __name__ == "__main__":
    gt_vals, gt_vecs = vSymEig(sym(torch.rand(2, 9, 2, 2, 2)), eigenvectors=True, descending_eigenvals=True)
    input = torch.nn.Parameter(sym(torch.rand(2, 9, 2, 2, 2)), requires_grad=True)
    optimizer = torch.optim.Adam([input], lr=0.001, betas=[0.5, 0.999])

    for optim_step in range(2):
        optimizer.zero_grad()
        eig_vals, eig_vecs = vSymEig(input, eigenvectors=True, descending_eigenvals=True)
        loss_eig_val = torch.nn.functional.l1_loss(eig_vals, gt_vals)
        loss_eig_vecs = torch.nn.functional.l1_loss(eig_vecs, gt_vecs)
        total_loss = loss_eig_vecs + loss_eig_val
        total_loss.backward()
        optimizer.step()
        print(optim_step, total_loss.item())
