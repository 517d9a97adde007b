/* tests/mpi/mpi_sample_cold.c — light(): 30 % of mpi_sample's compute
 * (the same loop as heavy), and burn() for the thread and the child. */
double light(long units)
{
    double s = 1.0;
    for (long i = 0; i < units * 2000000; i++) /* LIGHT_LOOP */
        s = s * 1.0000001 + 1e-9;
    return s;
}

double burn(long units)
{
    double s = 1.0;
    for (long i = 0; i < units * 2000000; i++)
        s = s * 1.0000002 + 1e-9;
    return s;
}
