"""xsprof's messages through Python's logging, 2 ranks of mpi4py under
mpiexec (test_logging.py). With the argument `logging` the program
configures logging (a handler printing each record of the logger "xsprof"
at once, atexit included); with `plain` it configures nothing."""
import logging
import sys
import time


class Print(logging.Handler):
    def emit(self, record):
        print("REC %s %s %s %s" % (record.name, record.levelname, getattr(record, "xsprof_rank", "-"),
                                   record.getMessage()), flush=True)


if sys.argv[1] == "logging":
    logging.basicConfig(level=logging.INFO, handlers=[Print()])

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
    print("refused: %s" % e, flush=True)
MPI.COMM_WORLD.Barrier()
print("rank %d: log_app done" % rank, flush=True)
