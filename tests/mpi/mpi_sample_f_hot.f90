! tests/mpi/mpi_sample_f_hot.f90 — heavy and light of mpi_sample.f90, in a
! file of their own so that they stay calls (no inlining across files).
! The loops differ by a constant: the same cost, but not the same code.
subroutine heavy(n, s)
  integer(8), intent(in) :: n
  double precision, intent(inout) :: s
  integer(8) :: i
  do i = 1, n ! HEAVY_LOOP
    s = s * 1.0000001d0 + 1d-9
  end do
end subroutine heavy

subroutine light(n, s)
  integer(8), intent(in) :: n
  double precision, intent(inout) :: s
  integer(8) :: i
  do i = 1, n ! LIGHT_LOOP
    s = s * 1.0000002d0 + 1d-9 ! not heavy's code: identical code folding would merge them
  end do
end subroutine light
