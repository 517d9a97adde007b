! tests/mpi/mpi_callsites.f90 - the Fortran call-site test (mpif.h-style
! bindings through "use mpi"): rank 0 sends from two lines, found by
! check_callsites.py through their marker comments.
program callsites
  use mpi
  implicit none
  integer :: ierr, rank, x, i
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = 7
  if (rank == 0) then
    do i = 1, 2
      call MPI_Send(x, 1, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr) ! SEND_A
    end do
    call MPI_Send(x, 1, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, ierr) ! SEND_B
  else if (rank == 1) then
    do i = 1, 3
      call MPI_Recv(x, 1, MPI_INTEGER, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end do
  end if
  call MPI_Finalize(ierr)
end program callsites
