# source: https://github.com/pytorch/pytorch/issues/67844 (the reproduction in the comment of mszhanyi, 2021-11-16)
# family: tensors crossing processes: a child sends a tensor on a queue and returns before the receiver takes it
# symptom: on Windows the writer fails with "RuntimeError: falseINTERNAL ASSERT FAILED at ..\aten\src\ATen\MapAllocator.cpp:135
#   ... Couldn't open shared file mapping"; the maintainer's analysis: "the producer process might exit earlier than the
#   consumer process to open the event" (a time.sleep(3) at the end of the producer makes it pass)
# hazard: `thequeue.put(torch.from_numpy(thearray))` in myproducer, which then returns while mywriter is still sleeping
# runs-on-cpu: yes
# printed (torch 2.13, Linux): in the writer process "ConnectionRefusedError: [Errno 111] Connection refused" from
#   rebuild_storage_fd (the producer that would hand over the shared memory's file descriptor has exited)
import time

import numpy
import torch
import torch.multiprocessing as mp


def myproducer(thequeue):
    for i in range(1):
        thearray = numpy.full((2048, 2048), 255, dtype=numpy.uint8)
        thequeue.put(torch.from_numpy(thearray))  # hazard: GML209


def mywriter(thequeue):
    filecounter = 0
    time.sleep(3)
    mytensor = thequeue.get(timeout=10)
    filecounter += 1
    mynumpyarray = mytensor.numpy()
    print("writer got", filecounter, "frame(s), mean", float(mynumpyarray.mean()))


if __name__ == "__main__":
    thequeue = mp.Queue()
    producer = mp.Process(target=myproducer, args=(thequeue,))
    writer = mp.Process(target=mywriter, args=(thequeue,))
    producer.start()
    writer.start()
    producer.join()
    writer.join()
    print("writer exit code:", writer.exitcode)
