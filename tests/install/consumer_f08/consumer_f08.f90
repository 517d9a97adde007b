! A Fortran user's MPI program (mpi_f08) linked with -lxsprof-mpi and no
! xsprof call: nothing in it refers to libxsprof-mpi's symbols, so a linker
! that drops unreferenced libraries (--as-needed, the default of Debian's and
! Ubuntu's gcc) would leave xsprof out unless its link flags keep it.
program consumer_f08
  use mpi_f08
  implicit none
  integer :: rank, total
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Finalize()
end program consumer_f08
