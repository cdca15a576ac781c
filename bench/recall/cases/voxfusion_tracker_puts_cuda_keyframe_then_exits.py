# source: https://github.com/zju3dv/Vox-Fusion/issues/9 (also #7 and #24; code: src/voxslam.py VoxSLAM.start, src/tracking.py Tracking.spin and check_keyframe)
# family: tensors crossing processes: a child puts CUDA tensors on a queue and exits before the receiver has them
# symptom: "[W CudaIPCTypes.cpp:15] Producer process has been terminated before all shared CUDA tensors released. See Note
#   [Sharing CUDA tensors]" when the tracking process dies; reporters also get "No such file or directory" when the mapping
#   process's last kf_buffer.get() opens a keyframe whose producer is gone, and no result
# hazard: `kf_buffer.put(check_frame, block=True)` in the tracking process, whose spin() then returns without waiting
# runs-on-cpu: no (CUDA; static-only). A small frame class with CUDA tensors stands in for RGBDFrame, a sum for the
#   voxel map update; the manager-shared state is a plain mp.Event
import time

import torch
import torch.multiprocessing as mp


class RGBDFrame:
    def __init__(self, fid, rgb, depth):
        self.stamp = fid
        self.rgb = rgb.cuda()
        self.depth = depth.cuda()
        self.pose = torch.eye(4, device="cuda")


class Tracking:
    def __init__(self, n_frames):
        self.n_frames = n_frames

    def check_keyframe(self, check_frame, kf_buffer):
        try:
            kf_buffer.put(check_frame, block=True)  # hazard: GML209
        except Exception:
            pass

    def do_tracking(self, current_frame, kf_buffer):
        current_frame.pose[:3, 3] += 0.01 * current_frame.stamp
        self.check_keyframe(current_frame, kf_buffer)

    def spin(self, stop_mapping, kf_buffer):
        print("******* tracking process started! *******")
        for frame_id in range(1, self.n_frames):
            frame = RGBDFrame(frame_id, torch.rand(48, 64, 3), torch.rand(48, 64))
            self.do_tracking(frame, kf_buffer)
        stop_mapping.set()
        print("******* tracking process died *******")


class Mapping:
    def spin(self, stop_mapping, kf_buffer):
        print("mapping process started!")
        total = 0.0
        while True:
            if stop_mapping.is_set() and kf_buffer.empty():
                break
            if not kf_buffer.empty():
                frame = kf_buffer.get()
                time.sleep(0.2)
                total += float(frame.depth.sum())
        print("******* mapping process died *******", total)


class VoxSLAM:
    def __init__(self, n_frames=20):
        mp.set_start_method("spawn", force=True)
        self.stop_mapping = mp.Event()
        self.kf_buffer = mp.Queue(maxsize=1)
        self.tracker = Tracking(n_frames)
        self.mapper = Mapping()
        self.processes = []

    def start(self):
        mapping_process = mp.Process(target=self.mapper.spin, args=(self.stop_mapping, self.kf_buffer))
        mapping_process.start()
        tracking_process = mp.Process(target=self.tracker.spin, args=(self.stop_mapping, self.kf_buffer))
        tracking_process.start()
        self.processes = [tracking_process, mapping_process]

    def wait_child_processes(self):
        for p in self.processes:
            p.join()


if __name__ == "__main__":
    slam = VoxSLAM()
    slam.start()
    slam.wait_child_processes()
