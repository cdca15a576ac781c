# source: https://github.com/khorrams/IGOS_pp/issues/2
# family: in-place write whose input overlaps the written-to tensor
# symptom: line_search's `indices[indices] = losses > ...` raises "unsupported operation: some elements
#   of the input tensor and the written-to tensor refer to a single memory location"; the reporter's
#   fix is `indices[indices.clone()] = ...`
# hazard: the boolean mask indexes the very tensor it is written into
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. ...
import torch


def line_search(masks, total_grads, loss_func, alpha=8, beta=0.0001, decay=0.2):
    t = torch.ones(masks.shape[0], 1, 1, 1) * alpha
    indices = torch.ones(masks.shape[0], dtype=torch.bool)
    with torch.no_grad():
        base_losses = loss_func(masks)
        grad_norms = (total_grads ** 2).flatten(1).sum(1)
        alphas = beta * grad_norms
        for _ in range(10):
            candidate = (masks[indices] - t[indices] * total_grads[indices]).clamp(0, 1)
            losses = loss_func(candidate)
            indices[indices] = losses > base_losses[indices] - alphas[indices] * t[indices].flatten()  # hazard: GML110
            t[indices] *= decay
            if not indices.any():
                break
    return t


def IGOS(model, images, baselines, iterations=3):
    masks = torch.full((images.shape[0], 1, 4, 4), 0.5, requires_grad=True)

    def loss_function(m):
        up = torch.nn.functional.interpolate(m, size=images.shape[-2:])
        return model(images * up + baselines * (1 - up)).sum(1)

    for _ in range(iterations):
        total_grads = torch.autograd.grad(loss_function(masks).sum(), masks)[0]
        alphas = line_search(masks.detach(), total_grads, loss_function)
        masks = (masks - alphas * total_grads).clamp(0, 1).detach().requires_grad_(True)
    return masks


net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 2), torch.nn.Softmax(1))
print(IGOS(net, torch.rand(4, 3, 16, 16), torch.zeros(4, 3, 16, 16)).shape)
