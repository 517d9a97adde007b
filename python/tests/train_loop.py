"""A training loop as people write it with torch.profiler, over xsprof: a
schedule, steps, record_function as context manager and decorator, shapes,
marks and counters, an exception inside a region, and a data-loader thread.
test_training.py runs it, merges and checks the merged output.

usage: train_loop.py   (XSPROF_OUTPUT names the run directory)
"""
import json
import sys
import threading
import time

import xsprof


class Tensor:  # anything with .shape is a shape argument
    def __init__(self, *shape):
        self.shape = shape


@xsprof.record_function("forward")
def forward(x):
    with xsprof.record_function("aten::linear", args={"input": x, "bias": True, "scale": 0.5}):
        time.sleep(0.002)
    for op in ("aten::add", "aten::mul", "aten::relu"):  # names computed at run time
        with xsprof.record_function(op):
            pass
    return x


def loader(stop):
    while not stop.is_set():
        with xsprof.record_function("load_batch"):
            time.sleep(0.001)


ready = []
with xsprof.profile(schedule=xsprof.schedule(wait=1, warmup=1, active=3, repeat=2),
                    on_trace_ready=lambda p: ready.append((p.cycle, p.run_dir, p.step_num)),
                    record_shapes=True) as prof:
    done = threading.Event()
    t = threading.Thread(target=loader, args=(done,), name="data-loader")
    t.start()
    for step in range(12):
        with xsprof.record_function("train_step"):
            forward(Tensor(32, 128))
            try:
                with xsprof.record_function("optimizer"):
                    raise FloatingPointError("nan in the gradients")
            except FloatingPointError:
                xsprof.mark("skipped_update")
            xsprof.counter("loss", 1.0 / (step + 1))
        prof.step()
    done.set()
    t.join()

table = prof.key_averages()
print(table.table(sort_by="self_cpu_time_total", row_limit=10))
print("SUMMARY " + json.dumps({e.key: e.count for e in table}))
print("READY " + json.dumps(ready))
sys.stdout.flush()
