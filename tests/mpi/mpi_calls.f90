! tests/mpi/mpi_calls.f90 — the Fortran twin of mpi_calls.c (same calls,
! same peers, tags and sizes), built with plain mpif90 and `use mpi`, so
! check_trace.py checks it with the same expectations.
program mpi_calls
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, right, left, i, k, round, hr, hs, bc, hsum
  integer :: half, dup, a, b, idx, idx2, cnt
  integer :: rq(6), p(2), ib(4, 3), ob(4, 3), sv(2), rv(2), inplace(4), mine(2)
  integer :: st(MPI_STATUS_SIZE)
  double precision :: buf(256), rbuf(256), one, total
  integer, allocatable :: all(:), counts(:), displs(:), gv(:), mv(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  do i = 1, 256
    buf(i) = rank * 1000 + i - 1
  end do

  if (mod(rank, 2) == 0) then
    call MPI_Send(buf, 10, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rbuf, 10, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  else
    call MPI_Recv(rbuf, 10, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
    call MPI_Send(buf, 10, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, ierr)
  end if

  do k = 1, 3
    do i = 1, 4
      ob(i, k) = rank + k + i
    end do
    call MPI_Irecv(ib(1, k), 4, MPI_INTEGER, left, 22, MPI_COMM_WORLD, rq(k), ierr)
    call MPI_Isend(ob(1, k), 4, MPI_INTEGER, right, 22, MPI_COMM_WORLD, rq(3 + k), ierr)
  end do
  call MPI_Waitall(6, rq, MPI_STATUSES_IGNORE, ierr)
  call MPI_Irecv(rbuf, 7, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 33, MPI_COMM_WORLD, a, ierr)
  call MPI_Isend(buf, 7, MPI_DOUBLE_PRECISION, right, 33, MPI_COMM_WORLD, b, ierr)
  call MPI_Wait(a, st, ierr)
  call MPI_Wait(b, MPI_STATUS_IGNORE, ierr)

  call MPI_Send_init(buf, 5, MPI_DOUBLE_PRECISION, right, 44, MPI_COMM_WORLD, p(1), ierr)
  call MPI_Recv_init(rbuf, 5, MPI_DOUBLE_PRECISION, left, 44, MPI_COMM_WORLD, p(2), ierr)
  do round = 1, 2
    call MPI_Startall(2, p, ierr)
    call MPI_Waitall(2, p, MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_Request_free(p(1), ierr)
  call MPI_Request_free(p(2), ierr)

  sv = rank
  call MPI_Sendrecv(sv, 2, MPI_INTEGER, right, 55, rv, 2, MPI_INTEGER, left, 55, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)

  ! Fortran-only: 1-based Waitany indices, status arrays and MPI_Get_count
  call MPI_Irecv(rv, 2, MPI_INTEGER, left, 56, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Issend(sv, 2, MPI_INTEGER, right, 56, MPI_COMM_WORLD, rq(2), ierr)
  call MPI_Waitany(2, rq, idx, st, ierr)
  call MPI_Waitany(2, rq, idx2, st, ierr)
  if (mod(rank, 2) == 0) then
    call MPI_Send(sv, 2, MPI_INTEGER, right, 57, MPI_COMM_WORLD, ierr)
    call MPI_Recv(rv, 2, MPI_INTEGER, left, 57, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_Recv(rv, 2, MPI_INTEGER, left, 57, MPI_COMM_WORLD, st, ierr)
    call MPI_Send(sv, 2, MPI_INTEGER, right, 57, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
  print '(a,i0,a,i0,a,i0,a,i0)', 'rank ', rank, ': waitany ', idx + idx2, ' count ', cnt, ' source ', st(MPI_SOURCE)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  one = rank
  call MPI_Allreduce(one, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  bc = 0
  if (rank == 1) bc = 77
  call MPI_Bcast(bc, 1, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  inplace = rank
  call MPI_Allreduce(MPI_IN_PLACE, inplace, 4, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  allocate(all(2 * nprocs), counts(nprocs), displs(nprocs), gv(nprocs * (nprocs + 1) / 2), mv(rank + 1))
  mine(1) = rank
  mine(2) = -rank
  call MPI_Gather(mine, 2, MPI_INTEGER, all, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), nprocs - rank, half, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_rank(half, hr, ierr)
  call MPI_Comm_size(half, hs, ierr)
  if (hs > 1) then
    if (hr == 0) then
      call MPI_Send(buf, 3, MPI_DOUBLE_PRECISION, 1, 66, half, ierr)
    else if (hr == 1) then
      call MPI_Recv(rbuf, 3, MPI_DOUBLE_PRECISION, 0, 66, half, MPI_STATUS_IGNORE, ierr)
    end if
  end if
  call MPI_Allreduce(rank, hsum, 1, MPI_INTEGER, MPI_SUM, half, ierr)
  do i = 1, nprocs
    counts(i) = i
    displs(i) = (i - 1) * i / 2
  end do
  mv = rank
  call MPI_Allgatherv(mv, rank + 1, MPI_INTEGER, gv, counts, displs, MPI_INTEGER, dup, ierr)
  call MPI_Barrier(dup, ierr)
  call MPI_Comm_free(half, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Pcontrol(0)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Pcontrol(1)

  print '(a,i0,a,f0.0,a,f0.0,a,i0,a,i0,a,i0,a,i0)', 'rank ', rank, ': check ', rbuf(4), ' sum ', total, &
        ' bcast ', bc, ' max ', inplace(1), ' hsum ', hsum, ' gv ', gv(nprocs * (nprocs + 1) / 2)
  deallocate(all, counts, displs, gv, mv)
  call MPI_Finalize(ierr)
end program mpi_calls
