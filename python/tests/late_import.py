"""xsprof imported after mpi4py.MPI: one warning, regions still recorded."""
from mpi4py import MPI  # noqa: F401  pylint: disable=unused-import
import xsprof  # noqa: E402  pylint: disable=wrong-import-position

with xsprof.record_function("after_mpi4py"):
    MPI.COMM_WORLD.Barrier()
print("late import done", flush=True)
