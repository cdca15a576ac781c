# source: https://github.com/AIM-Harvard/foundation-cancer-image-biomarker/issues/293 (code: fmcib/run.py get_features,
#   fmcib/preprocessing/__init__.py get_transforms and get_dataloader)
# family: tensors crossing processes: a lambda pickled for spawned DataLoader workers
# symptom: "AttributeError: Can't pickle local object 'get_transforms.<locals>.<lambda>'" from get_features on an M2
#   Mac (macOS starts DataLoader workers with spawn), at `for batch in tqdm(dataloader, ...)`
# hazard: the `Lambda(lambda x: x["image_path"].as_tensor())` that get_transforms puts last in its Compose, handed to
#   get_dataloader's 4 workers through the CSVDataset's transform
# runs-on-cpu: yes, with spawn set as macOS does. Stand-ins replace monai's Compose, CSVDataset and DataLoader (a
#   torch DataLoader subclass, as monai's is), torchvision's Lambda, the ITK loading chain and the ResNet50
# printed (torch 2.13): AttributeError: Can't pickle local object 'get_transforms.<locals>.<lambda>'
import torch
import torch.multiprocessing as mp


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Lambda:
    def __init__(self, lambd):
        self.lambd = lambd

    def __call__(self, x):
        return self.lambd(x)


class Tensorish(dict):
    def as_tensor(self):
        return torch.zeros(1, 50, 50, 50)


class LoadImaged:
    def __init__(self, keys):
        self.keys = keys

    def __call__(self, row):
        return {k: Tensorish(path=row[k]) for k in self.keys}


class CSVDataset(torch.utils.data.Dataset):
    def __init__(self, rows, transform=None):
        self.rows, self.transform = rows, transform

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.transform(self.rows[i])


class DataLoader(torch.utils.data.DataLoader):
    pass


def get_transforms(spatial_size=(50, 50, 50)):
    return Compose([LoadImaged(keys=["image_path"]),
                    Lambda(lambda x: x["image_path"].as_tensor())])  # hazard: GML212


def get_dataloader(csv_rows, batch_size=4, num_workers=4, spatial_size=(50, 50, 50)):
    T = get_transforms(spatial_size=spatial_size)
    dataset = CSVDataset(csv_rows, transform=T)
    return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, shuffle=False)


def get_features(csv_rows, spatial_size=(50, 50, 50)):
    dataloader = get_dataloader(csv_rows, spatial_size=spatial_size)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(125000, 8))
    feature_list = []
    for batch in dataloader:
        feature_list.append(model(batch).detach().cpu().numpy())
    return feature_list


if __name__ == "__main__":
    mp.set_start_method("spawn")
    rows = [{"image_path": f"scan_{i}.nrrd", "coordX": 0.0} for i in range(8)]
    print(len(get_features(rows)))
