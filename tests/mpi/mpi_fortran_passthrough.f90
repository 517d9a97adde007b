! tests/mpi/mpi_fortran_passthrough.f90 — Fortran calls whose arguments
! xsprof does not translate (strings with hidden lengths, callbacks, handle
! arrays): xsprof times them around Open MPI's own binding. The program
! checks every result itself (stop 1 on a wrong one), so the same output
! with and without xsprof proves the arguments went through untouched;
! check_trace.py (mode fpass) counts the records.
program mpi_fortran_passthrough
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, rlen, newtype, myop, info
  logical :: flag
  integer :: sc(64), sd(64), rc(64), rd(64), st(64), rt(64), sb(64), rb(64)
  integer :: blens(2), types(2)
  integer(kind=MPI_ADDRESS_KIND) :: disps(2)
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  character(len=32) :: val
  double precision :: x, y
  external :: maxabs

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! strings in and out, hidden lengths passed through
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'world of tests', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, rlen, ierr)
  if (cname(1:rlen) /= 'world of tests' .or. rlen /= 14) stop 1
  call MPI_Get_processor_name(pname, rlen, ierr)
  if (rlen <= 0) stop 1
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'xsprof_key', 'value-42', ierr)
  call MPI_Info_get(info, 'xsprof_key', 32, val, flag, ierr)
  if (.not. (flag .and. val == 'value-42')) stop 1
  call MPI_Info_free(info, ierr)

  ! a user reduction (callback)
  call MPI_Op_create(maxabs, .true., myop, ierr)
  x = -(rank + 1.5d0)
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, myop, MPI_COMM_WORLD, ierr)
  if (abs(y - (nprocs + 0.5d0)) > 1d-12) stop 1
  call MPI_Op_free(myop, ierr)

  ! handle arrays: alltoallw with per-peer types, a struct type
  do i = 1, nprocs
    sc(i) = 1
    rc(i) = 1
    sd(i) = (i - 1) * 4
    rd(i) = (i - 1) * 4
    st(i) = MPI_INTEGER
    rt(i) = MPI_INTEGER
    sb(i) = rank * 100 + i - 1
  end do
  call MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD, ierr)
  do i = 1, nprocs
    if (rb(i) /= (i - 1) * 100 + rank) stop 1
  end do
  blens = (/1, 1/)
  disps = (/0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND/)
  types = (/MPI_INTEGER, MPI_DOUBLE_PRECISION/)
  call MPI_Type_create_struct(2, blens, disps, types, newtype, ierr)
  call MPI_Type_commit(newtype, ierr)
  call MPI_Type_set_name(newtype, 'pair', ierr)
  call MPI_Type_get_name(newtype, cname, rlen, ierr)
  if (cname(1:rlen) /= 'pair') stop 1
  call MPI_Type_free(newtype, ierr)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'passthrough ok on ', nprocs, ' ranks'
  call MPI_Finalize(ierr)
end program

subroutine maxabs(invec, inoutvec, len, dtype)
  use mpi
  implicit none
  integer :: len, dtype, i
  double precision :: invec(len), inoutvec(len)
  if (dtype /= MPI_DOUBLE_PRECISION) stop 1
  do i = 1, len
    inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
  end do
end subroutine
