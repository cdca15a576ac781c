# source: https://github.com/pytorch/pytorch/issues/68861 (the full program in the comment of Sanster, 2023-01-11)
# family: tensors crossing processes: gunicorn forks its workers after the master process touched CUDA
# symptom: the gunicorn workers' `post_worker_init` (conv.cuda()) fails with "Cannot re-initialize CUDA in forked
#   subprocess"; "the key is not run any cuda relate code in master process (including torch.cuda.device_count())"
# hazard: `torch.cuda.device_count()` in the master at module level, before gunicorn forks the workers that use CUDA
# runs-on-cpu: no (CUDA and gunicorn: static only)
# printed (torch 2.13): - (CUDA only)
import torch
from gunicorn.app.base import BaseApplication


class StandaloneApplication(BaseApplication):
    def __init__(self, app, options=None):
        self.options = options or {}
        self.application = app
        super().__init__()

    def load_config(self):
        config = {key: value for key, value in self.options.items() if key in self.cfg.settings and value is not None}
        for key, value in config.items():
            self.cfg.set(key.lower(), value)

    def load(self):
        return self.application


print("GPUs:", torch.cuda.device_count())  # hazard: GML204


def post_worker_init(worker):
    conv = torch.nn.Conv2d(330, 330, 3, 3, 3, 3)
    conv.cuda()
    print("finish post_worker_init")


def handler_app(environ, start_response):
    data = b"Hello, World!\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])
    return iter([data])


if __name__ == "__main__":
    options = {"bind": "127.0.0.1:8080", "workers": 2, "post_worker_init": post_worker_init}
    StandaloneApplication(handler_app, options).run()
