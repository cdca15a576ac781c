# source: https://github.com/leffff/graphormer-pyg/issues/10 (code: graphormer/functional.py, batched_shortest_path_distance, as quoted there)
# family: tensors crossing processes: CUDA tensors handed to a multiprocessing.Pool (fork) inside the model's forward
# symptom: running testing.ipynb on the GPU fails with "RuntimeError: Cannot re-initialize CUDA in forked subprocess.
#   To use CUDA with multiprocessing, you must use the 'spawn' start method"; the maintainer removed the Pool
# hazard: `pool.map(to_networkx, data.to_data_list())`: graphs whose tensors are on CUDA handed to forked pool workers
# runs-on-cpu: no (CUDA: static only; a small Batch class stands in for torch_geometric's)
# printed (torch 2.13): - (CUDA only)
from multiprocessing import Pool

import torch
import torch.nn as nn


class Graph:
    def __init__(self, edge_index, num_nodes):
        self.edge_index = edge_index
        self.num_nodes = num_nodes


class Batch:
    def __init__(self, graphs):
        self.graphs = graphs

    def to_data_list(self):
        return self.graphs


def to_networkx(graph):
    src, dst = graph.edge_index.tolist()
    return {"nodes": graph.num_nodes, "edges": list(zip(src, dst))}


def all_pairs_shortest_path(graph):
    return {n: [n] for n in range(graph["nodes"])}


def batched_shortest_path_distance(data):
    pool = Pool()
    relabeled_graphs = []
    for graph in pool.map(to_networkx, data.to_data_list()):  # hazard: GML203
        relabeled_graphs.append(graph)
    node_paths = {}
    for path in pool.map(all_pairs_shortest_path, relabeled_graphs):
        node_paths.update(path)
    return node_paths


class Graphormer(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.node_in = nn.Linear(4, dim)

    def forward(self, x, data):
        node_paths = batched_shortest_path_distance(data)
        return self.node_in(x).sum() + len(node_paths)


if __name__ == "__main__":
    device = torch.device("cuda")
    model = Graphormer().to(device)
    graphs = [Graph(torch.randint(0, 5, (2, 8), device=device), 5) for _ in range(4)]
    out = model(torch.randn(20, 4, device=device), Batch(graphs))
    print(out.item())
