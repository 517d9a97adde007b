"""Two ranks of an mpi4py program with xsprof regions: xsprof imported
first, so its MPI calls are recorded without LD_PRELOAD. test_mpi4py.py
runs it under mpiexec with and without LD_PRELOAD and checks the merge."""
import time

import xsprof  # before mpi4py: libxsprof-mpi is bound before libmpi
from mpi4py import MPI  # noqa: E402  pylint: disable=wrong-import-position

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
with xsprof.profile() as prof:
    for step in range(3):
        with xsprof.record_function("compute"):
            time.sleep(0.002 * (rank + 1))  # rank 1 is late: rank 0 waits in its receive
        with xsprof.record_function("exchange"):
            if rank == 0:
                comm.recv(source=1, tag=step)
            else:
                comm.send(step, dest=0, tag=step)
            total = comm.allreduce(rank + step)
        prof.step()
print("rank %d of %d: library %s, allreduce %d" % (rank, size, xsprof.library_path, total), flush=True)
