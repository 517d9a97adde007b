"""tests/mpi/mpi4py_prog.py — an mpi4py program (no xsprof import): pickled
and buffer point-to-point, persistent requests (Startall), a collective, a
split communicator."""
from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
out = np.arange(16, dtype="f8") + rank
inb = np.empty(16, dtype="f8")
if rank % 2 == 0:
    comm.Send(out, dest=right, tag=7)
    comm.Recv(inb, source=left, tag=7)
else:
    comm.Recv(inb, source=left, tag=7)
    comm.Send(out, dest=right, tag=7)
req = comm.isend({"from": rank}, dest=right, tag=8)
obj = comm.recv(source=left, tag=8)
req.wait()
# persistent requests started together, three rounds (tag 9)
pr = [comm.Recv_init(inb, source=left, tag=9), comm.Send_init(out, dest=right, tag=9)]
for _ in range(3):
    MPI.Prequest.Startall(pr)
    MPI.Request.Waitall(pr)
for p in pr:
    p.Free()
total = comm.allreduce(rank, op=MPI.SUM)
half = comm.Split(rank % 2, rank)
hs = half.allreduce(1)
half.Free()
comm.Barrier()
print("rank %d: got %.0f from %d, total %d, half %d" % (rank, inb[0], obj["from"], total, hs), flush=True)
