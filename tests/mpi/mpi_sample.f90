! tests/mpi/mpi_sample.f90 — the Fortran twin of mpi_sample.c for
! XSPROF_SAMPLE_HZ (check_sampling.py --lang fortran): each step burns 7
! units of CPU in heavy and 3 in light (mpi_sample_f_hot.f90), then an
! MPI_Allreduce. usage: mpi_sample_f [UNITS]
program sample
  use mpi
  implicit none
  integer :: ierr, it, units, nargs
  character(len=32) :: arg
  double precision :: s
  call MPI_Init(ierr)
  units = 40
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) units
  end if
  s = 1d0
  do it = 1, units
    call step(s)
    call MPI_Allreduce(MPI_IN_PLACE, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  print *, s
  call MPI_Finalize(ierr)
contains
  subroutine step(s)
    double precision, intent(inout) :: s
    call heavy(7_8 * 2000000_8, s)
    call light(3_8 * 2000000_8, s)
  end subroutine step
end program sample
