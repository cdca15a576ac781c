# source: https://github.com/kail8/UnsupDIS-pytorch/issues/26 (code: the H-transform spatial transformer of UnsupDIS-pytorch)
# family: autograd in-place write on a multi-output view (chunk), through a reshape view
# symptom: training raises "RuntimeError: Output 0 of ViewBackward is a view and is being modified inplace. This view
#   is an output of a function that returns multiple views." at `t_s_flat[t_s_flat.abs() < eps] = eps`; the
#   maintainers' fix builds t_s_flat out of place with a mask
# hazard: masked assignment into t_s_flat, a reshape view of t_s, an output of torch.chunk
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of View is a view and is being modified inplace. This view is the output of a function that returns multiple views. ...
import torch


def transformer(image2_tensor, H_tf, offsets=()):

    def _meshgrid(height, width):
        x_t = torch.mm(torch.ones(height, 1), torch.linspace(-1.0, 1.0, width).unsqueeze(0))
        y_t = torch.mm(torch.linspace(-1.0, 1.0, height).unsqueeze(1), torch.ones(1, width))

        x_t_flat = x_t.reshape(1, -1)
        y_t_flat = y_t.reshape(1, -1)

        ones = torch.ones_like(x_t_flat)
        grid = torch.cat([x_t_flat, y_t_flat, ones], dim=0)
        return grid

    bs, nc, height, width = image2_tensor.shape
    device = image2_tensor.device

    is_nan = torch.isnan(H_tf.reshape(bs, 9)).any(dim=1)
    assert is_nan.sum() == 0, f'{image2_tensor.shape} {len(offsets)}'
    H_tf = H_tf.reshape(-1, 3, 3).float()
    # grid of (x_t, y_t, 1)
    grid = _meshgrid(height, width).unsqueeze(0).expand(bs, -1, -1).to(device)

    # Transform A x (x_t, y_t, 1)^T -> (x_s, y_s)
    T_g = torch.bmm(H_tf, grid)  # [bs,3,3] x [bs,3,w*h] -> [bs,3,w*h]
    x_s, y_s, t_s = torch.chunk(T_g, 3, dim=1)
    # The problem may be here as a general homo does not preserve the parallelism
    # while an affine transformation preserves it.
    t_s_flat = t_s.reshape(-1)
    eps, maximal = 1e-2, 10.
    t_s_flat[t_s_flat.abs() < eps] = eps  # hazard: GML105
    # 1.25000 / 1.38283e-05 = inf   in float16 (6.55e4)

    #  batchsize * width * height
    x_s_flat = x_s.reshape(-1) / t_s_flat
    y_s_flat = y_s.reshape(-1) / t_s_flat
    return x_s_flat, y_s_flat


image = torch.rand(1, 3, 8, 8)
H = (torch.eye(3) + 0.01 * torch.randn(3, 3)).reshape(1, 9).requires_grad_()
try:
    x_s_flat, y_s_flat = transformer(image, H)
    (x_s_flat.sum() + y_s_flat.sum()).backward()
    print(H.grad.shape)
except RuntimeError as error:
    print("RuntimeError:", error)
