# source: https://github.com/open-mmlab/mmdetection3d/issues/277 (code: mmdet3d/core/bbox/structures/base_box3d.py
#   and mmdet3d/core/evaluation/indoor_eval.py, January 2021)
# family: aliasing that silently changes values: the numpy bridge (torch.as_tensor shares a float32 array)
# symptom: "Bug in BaseInstance3DBoxes": torch.as_tensor in __init__ keeps the caller's float32 numpy array, and the
#   origin shift `self.tensor[:, :3] += ...` then rewrites it; in indoor_eval the z of
#   gt_anno['gt_boxes_upright_depth'] would be overwritten after each validation step (float64 data escaped by chance)
# hazard: the in-place origin shift on self.tensor, which torch.as_tensor made from the caller's numpy array
# runs-on-cpu: yes
# printed (torch 2.13): epoch 0 gt z after validation: 1.0, epoch 1 ... 0.5, epoch 2 ... 0.0 (the ground truth starts at 1.5 and drifts)
import numpy as np
import torch


class BaseInstance3DBoxes(object):
    def __init__(self, tensor, box_dim=7, with_yaw=True, origin=(0.5, 0.5, 0)):
        if isinstance(tensor, torch.Tensor):
            device = tensor.device
        else:
            device = torch.device('cpu')
        tensor = torch.as_tensor(tensor, dtype=torch.float32, device=device)
        if tensor.numel() == 0:
            tensor = tensor.reshape((0, box_dim)).to(dtype=torch.float32, device=device)
        assert tensor.dim() == 2 and tensor.size(-1) == box_dim, tensor.size()
        self.box_dim = box_dim
        self.with_yaw = with_yaw
        self.tensor = tensor

        if origin != (0.5, 0.5, 0):
            dst = self.tensor.new_tensor((0.5, 0.5, 0))
            src = self.tensor.new_tensor(origin)
            self.tensor[:, :3] += self.tensor[:, 3:6] * (dst - src)  # hazard: GML106


class DepthInstance3DBoxes(BaseInstance3DBoxes):
    pass


def indoor_eval(gt_annos, dt_annos, box_type_3d=DepthInstance3DBoxes):
    for img_id in range(len(dt_annos)):
        gt_anno = gt_annos[img_id]
        if gt_anno['gt_num'] != 0:
            gt_boxes = box_type_3d(
                gt_anno['gt_boxes_upright_depth'],
                box_dim=gt_anno['gt_boxes_upright_depth'].shape[-1],
                origin=(0.5, 0.5, 0.5))
        else:
            gt_boxes = box_type_3d(np.array([], dtype=np.float32))
    return gt_boxes


gt_annos = [{'gt_num': 1, 'gt_boxes_upright_depth': np.array([[1.0, 2.0, 1.5, 0.4, 0.6, 1.0, 0.0]], np.float32)}]
for epoch in range(3):
    indoor_eval(gt_annos, [{}])
    print('epoch', epoch, 'gt z after validation:', gt_annos[0]['gt_boxes_upright_depth'][0, 2])
