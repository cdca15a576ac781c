# source: https://github.com/open-mmlab/OpenPCDet/pull/534 (code: pcdet/models/backbones_3d/pfe/voxel_set_abstraction.py,
#   VoxelSetAbstraction.get_sampled_points, the FPS branch that pads the keypoint indices)
# family: in-place writes on overlapping memory
# symptom: "RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to a
#   single memory location" when a scan has fewer than half of NUM_KEYPOINTS points
# hazard: `cur_pt_idxs[0, -empty_num:] = cur_pt_idxs[0, :empty_num]` copies one slice of the index row onto another
#   slice of the same row; they overlap once empty_num > NUM_KEYPOINTS / 2
# runs-on-cpu: yes. A CPU stand-in replaces pointnet2's CUDA furthest_point_sample (it returns the indices of the
#   points it has and zeros for the rest, as the CUDA kernel does when there are too few points)
# printed (torch 2.13): RuntimeError: unsupported operation: some elements of the input tensor and the written-to
#   tensor refer to a single memory location. Please clone() the tensor before performing the operation.
import torch


def furthest_point_sample(xyz, npoint):
    idx = torch.zeros(xyz.shape[0], npoint, dtype=torch.int32)
    n = min(xyz.shape[1], npoint)
    idx[:, :n] = torch.arange(n, dtype=torch.int32)
    return idx


class VoxelSetAbstraction:
    def __init__(self, num_keypoints):
        self.NUM_KEYPOINTS = num_keypoints

    def get_sampled_points(self, batch_dict):
        batch_size = batch_dict['batch_size']
        src_points = batch_dict['points'][:, 1:4]
        batch_indices = batch_dict['points'][:, 0].long()
        keypoints_list = []
        for bs_idx in range(batch_size):
            bs_mask = (batch_indices == bs_idx)
            sampled_points = src_points[bs_mask].unsqueeze(dim=0)  # (1, N, 3)
            cur_pt_idxs = furthest_point_sample(sampled_points[:, :, 0:3].contiguous(), self.NUM_KEYPOINTS).long()
            if sampled_points.shape[1] < self.NUM_KEYPOINTS:
                empty_num = self.NUM_KEYPOINTS - sampled_points.shape[1]
                cur_pt_idxs[0, -empty_num:] = cur_pt_idxs[0, :empty_num]  # hazard: GML110
            keypoints = sampled_points[0][cur_pt_idxs[0]].unsqueeze(dim=0)
            keypoints_list.append(keypoints)
        return torch.cat(keypoints_list, dim=0)  # (B, M, 3)


points = torch.cat([torch.zeros(300, 1), torch.randn(300, 3)], dim=1)  # one sparse scan: 300 points
vsa = VoxelSetAbstraction(num_keypoints=2048)
keypoints = vsa.get_sampled_points({'batch_size': 1, 'points': points})
print(keypoints.shape)
