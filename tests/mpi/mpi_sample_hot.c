/* tests/mpi/mpi_sample_hot.c — heavy(): 70 % of mpi_sample's compute. */
double burn(long units);

double heavy(long units)
{
    double s = 1.0;
    for (long i = 0; i < units * 2000000; i++) /* HEAVY_LOOP */
        s = s * 1.0000001 + 1e-9;
    return s;
}
