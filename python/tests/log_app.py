"""xsprof's messages through Python's logging, 2 ranks of mpi4py under
mpiexec (test_logging.py). With the argument `logging` the program
configures logging (a handler writing each record of the logger "xsprof" at
once to DIR/py-log-RANK.txt, atexit included: stdout lines of two ranks may
interleave); with `plain` it configures nothing.

usage: log_app.py logging|plain DIR"""
import logging
import os
import sys
import time

OUT = open(os.path.join(sys.argv[2], "py-log-%s.txt" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")), "w")


class Keep(logging.Handler):
    def emit(self, record):
        OUT.write("REC %s %s %s %s\n" % (record.name, record.levelname, getattr(record, "xsprof_rank", "-"),
                                         record.getMessage()))
        OUT.flush()


if sys.argv[1] == "logging":
    logging.basicConfig(level=logging.INFO, handlers=[Keep()])

import xsprof  # noqa: E402  pylint: disable=wrong-import-position
from xsprof._lib import lib  # noqa: E402  pylint: disable=wrong-import-position
from mpi4py import MPI  # noqa: E402  pylint: disable=wrong-import-position

rank = MPI.COMM_WORLD.Get_rank()
xsprof.region_threshold("py_solve", 5)
for _ in range(3):
    with xsprof.record_function("py_solve"):
        time.sleep(0.010)
with xsprof.record_function("env_io"):  # XSPROF_WARN_REGION_MS=env_io=2
    time.sleep(0.004)
with xsprof.record_function("py_quick"):
    pass
lib.xsprof_session_stop()
lib.xsprof_session_start()
try:
    xsprof.region_threshold("", 5)
except ValueError as e:
    OUT.write("refused: %s\n" % e)
    OUT.flush()
MPI.COMM_WORLD.Barrier()
print("rank %d: log_app done" % rank, flush=True)
