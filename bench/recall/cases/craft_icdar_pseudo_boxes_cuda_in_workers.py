# source: https://github.com/backtime92/CRAFT-Reimplementation/issues/7 (code: data_loader.py, craft_base_dataset and
#   ICDAR2015 (the pseudo-label path of pull_item), and trainic15data.py, which loads ICDAR2015 with a DataLoader)
# family: tensors crossing processes: CUDA used in DataLoader workers
# symptom: training on ICDAR2015 is slow with num_workers=0; "if I set it larger than 1, it would meet the below
#   problem when generating the pseudo label: File data_loader.py, line 125, in inference_pursedo_bboxes img_torch =
#   img_torch.type(torch.FloatTensor).cuda() RuntimeError: CUDA error: initialization error"
# hazard: `.cuda()` in inference_pursedo_bboxes, which the dataset's __getitem__ reaches (pull_item ->
#   load_image_gt_and_confidencemask) in the forked workers, after the main process put the net on the GPU
# runs-on-cpu: no (needs CUDA). A one-layer net stands in for CRAFT; random images and one box per image stand in for
#   the ICDAR files; the watershed that turns scores into character boxes is reduced to a mean
# printed (torch 2.13): - (CUDA only)
import numpy as np
import torch
import torch.nn as nn
import torch.utils.data as data


class craft_base_dataset(data.Dataset):
    def __init__(self, target_size=768, viz=False, debug=False):
        self.target_size = target_size
        self.viz = viz
        self.debug = debug

    def inference_pursedo_bboxes(self, net, image, word_bbox, word, viz=False):
        x0, y0, x1, y1 = word_bbox
        input = image[y0:y1, x0:x1].astype(np.float32) / 255.0
        img_torch = torch.from_numpy(input)
        img_torch = img_torch.permute(2, 0, 1).unsqueeze(0)
        img_torch = img_torch.type(torch.FloatTensor).cuda()  # hazard: GML205
        with torch.no_grad():
            scores = net(img_torch)
        region_scores = scores[0, 0].cpu().data.numpy()
        return region_scores, float(region_scores.mean())

    def pull_item(self, index):
        image, character_bboxes, confidences = self.load_image_gt_and_confidencemask(index)
        return torch.from_numpy(image).permute(2, 0, 1).float(), torch.tensor(confidences)

    def __getitem__(self, index):
        return self.pull_item(index)


class ICDAR2015(craft_base_dataset):
    def __init__(self, net, icdar2015_folder, target_size=768, viz=False, debug=False):
        super(ICDAR2015, self).__init__(target_size, viz, debug)
        self.net = net
        self.net.eval()
        self.img_folder = icdar2015_folder
        self.images_path = ["img_%d.jpg" % i for i in range(20)]

    def __len__(self):
        return len(self.images_path)

    def load_image_gt_and_confidencemask(self, index):
        image = np.random.randint(0, 255, (128, 128, 3), dtype=np.uint8)
        word_bboxes, words = [(10, 10, 74, 42)], ["word"]
        character_bboxes, confidences = [], []
        for i in range(len(word_bboxes)):
            pursedo_bboxes, confidence = self.inference_pursedo_bboxes(self.net, image, word_bboxes[i], words[i])
            character_bboxes.append(pursedo_bboxes)
            confidences.append(confidence)
        return image, character_bboxes, confidences


if __name__ == "__main__":
    net = nn.Conv2d(3, 2, 3, padding=1).cuda()
    realdata = ICDAR2015(net, "/data/CRAFT-pytorch/icdar2015", target_size=768)
    real_data_loader = torch.utils.data.DataLoader(realdata, batch_size=10, shuffle=True, num_workers=2,
                                                   drop_last=True, pin_memory=True)
    for images, confidences in real_data_loader:
        print(images.shape, confidences.shape)
