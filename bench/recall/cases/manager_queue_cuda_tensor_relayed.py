# source: https://github.com/pytorch/pytorch/issues/30401
# family: tensors crossing processes: a CUDA tensor sent through a Manager queue, which relays it from its own process
# symptom: the same producer/consumer pair works with `mp.Queue` and fails with `manager.Queue`: a Manager queue is a
#   proxy, the put sends the CUDA tensor to the manager's server process, which has to send it on to the consumer
#   ("Attempted to send CUDA tensor received from another process; this is not currently supported")
# hazard: `out_q.put(v)` of a CUDA tensor onto a queue made by `mp.Manager()`
# runs-on-cpu: no (CUDA; static-only). The report's flag that switches between the two kinds of queue is kept
import torch
import torch.multiprocessing as mp

USE_MANAGER = True


def produce(in_q, out_q):
    while True:
        t = in_q.get()
        v = torch.tensor(t, device="cuda")
        out_q.put(v)  # hazard: GML213


def consume(out_q):
    res = out_q.get()
    print("consumed", res)


def main():
    if USE_MANAGER:
        manager = mp.Manager()
        in_q = manager.Queue(10)
        out_q = manager.Queue(10)
    else:
        in_q = mp.Queue(10)
        out_q = mp.Queue(10)
    consumer = mp.Process(target=consume, args=[out_q])
    consumer.start()
    producer = mp.Process(target=produce, args=(in_q, out_q))
    producer.start()
    in_q.put(1)
    consumer.join()
    producer.terminate()
    print("done.")


if __name__ == "__main__":
    mp.set_start_method("spawn")
    main()
