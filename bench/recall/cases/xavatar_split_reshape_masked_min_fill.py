# source: https://github.com/Skype-line/X-Avatar/issues/12 (code: code/lib/xavatar_basic_model.py XAVATARModel.forward,
#   code/lib/model/helpers.py masked_softmax)
# family: autograd in-place errors: an output of split (a multi-output view) modified in place
# symptom: training the RGB-D model: "masked_softmax ... vec[~mask.bool()] = 1  RuntimeError: Output 0 of
#   ReshapeAliasBackward0 is a view and is being modified inplace. This view is the output of a function that returns
#   multiple views. Such functions do not allow the output views to be modified inplace."
# hazard: the shape network's output is cut by torch.split into one chunk per body part; each chunk, reshaped (still a
#   view of the split output), goes to masked_softmax, whose 'min' mode fills the masked entries in place
# runs-on-cpu: yes. A Linear stands in for the ImplicitNetwork and a random deformer output for ForwardDeformer;
#   representation 'sdf' in eval mode (the path of the traceback)
# printed (torch 2.13): RuntimeError: Output 0 of View is a view and is being modified inplace. This view is the
#   output of a function that returns multiple views. Such functions do not allow the output views to be modified
#   inplace. You should replace the inplace operation by an out-of-place one.
from types import SimpleNamespace

import torch
import torch.nn as nn


def masked_softmax(vec, mask, dim=-1, mode='softmax', soft_blend=1):
    if mode == 'softmax':
        vec = torch.distributions.Bernoulli(logits=vec).probs
        masked_exps = torch.exp(soft_blend * vec) * mask.float()
        masked_exps_sum = masked_exps.sum(dim)
        output = torch.zeros_like(vec)
        output[masked_exps_sum > 0, :] = masked_exps[masked_exps_sum > 0, :] / masked_exps_sum[masked_exps_sum > 0].unsqueeze(-1)
        output = (output * vec).sum(dim, keepdim=True)
        value = torch.distributions.Bernoulli(probs=output).logits
        index = None
    elif mode == 'max':
        vec[~mask.bool()] = -100
        value, index = torch.max(vec, dim, keepdim=True)
    elif mode == 'min':
        vec[~mask.bool()] = 1  # hazard: GML105
        value, index = torch.min(vec, dim, keepdim=True)
    else:
        raise NotImplementedError
    return value, index


class ShapeNet(nn.Module):
    def __init__(self, d_in=3, d_out=1):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, pts, cond, return_feature=False):
        return self.lin(pts)


class XAVATARModel(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.shape_net = ShapeNet()

    def deformer(self, pts_d_split, smpl_tfs, part_type, eval_mode=True):
        num_batch, num_point, _ = pts_d_split.shape
        pts_c = pts_d_split.unsqueeze(2).repeat(1, 1, 9, 1) + torch.randn(num_batch, num_point, 9, 3)
        return pts_c, {'valid_ids': torch.rand(num_batch, num_point, 9) > 0.3}

    def forward(self, pts_d, smpl_tfs, cond, eval_mode=True, split_numbers=None, part_type_list=None):
        accum_shape, pts_c_list, mask_list, split_num_list, index_list = [], [], [], [], []
        for part_type, pts_d_split in zip(part_type_list, torch.split(pts_d, split_numbers, dim=1)):
            pts_c, intermediates = self.deformer(pts_d_split, smpl_tfs, part_type, eval_mode=eval_mode)
            mask_list.append(intermediates['valid_ids'])
            num_batch, num_point, num_init, num_dim = pts_c.shape
            pts_c = pts_c.reshape(num_batch, num_point * num_init, num_dim)
            pts_c_list.append(pts_c)
            split_num_list.append(pts_c.shape[1])
        pts_c = torch.cat(pts_c_list, dim=1)
        shape_pd = self.shape_net(pts_c, cond, return_feature=False)
        shape_pd_list = torch.split(shape_pd, split_num_list, dim=1)

        for shape_pd, mask in zip(shape_pd_list, mask_list):
            num_batch, num_point, num_init = mask.shape
            shape_pd = shape_pd.reshape(num_batch, num_point, num_init)
            if eval_mode:
                mode = 'max' if self.opt.network.representation == 'occ' else 'min'
                shape_pd, index = masked_softmax(shape_pd, mask, dim=-1, mode=mode)  # hazard-via: GML105
            else:
                shape_pd, index = masked_softmax(shape_pd, mask, dim=-1, mode=self.opt.network.softmax_mode)
            accum_shape.append(shape_pd)
            index_list.append(index)
        return torch.cat(accum_shape, 1)


opt = SimpleNamespace(network=SimpleNamespace(representation='sdf', softmax_mode='softmax'))
model = XAVATARModel(opt)
pts_d = torch.randn(1, 12, 3)
shape_pd = model(pts_d, None, None, eval_mode=True, split_numbers=[6, 4, 2], part_type_list=['body', 'hand', 'face'])
shape_pd.mean().backward()
