/* tests/mpi/mpi_more.c — the less common paths, built without xsprof:
 * every communicator creation path (dup, idup, split, split_type, create,
 * create_group, intercomm create/merge, cart create/sub, graph, dist_graph),
 * nonblocking collectives, Waitany/Waitsome/Testany/Testsome/Test loops,
 * probe/iprobe/mprobe, ANY_TAG, Sendrecv_replace, cancel, a request freed
 * before completion, v/w collectives, neighbourhood collectives, RMA and
 * MPI-IO, erroneous calls under MPI_ERRORS_RETURN. check_trace.py (mode "more") checks what must be recorded. Needs
 * an even number of ranks >= 4. Prints results that must not change. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long acc = 0;

    /* communicator creation paths */
    MPI_Comm idup, stype, created, cgroup, inter, merged, cart, sub, graph, dgraph;
    MPI_Request r;
    MPI_Comm_idup(MPI_COMM_WORLD, &idup, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &stype);
    MPI_Group world, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ev[64], nev = 0;
    for (int i = 0; i < size; i += 2)
        ev[nev++] = i;
    MPI_Group_incl(world, nev, ev, &evens);
    MPI_Comm_create(MPI_COMM_WORLD, evens, &created); /* MPI_COMM_NULL on odd ranks */
    if (rank % 2 == 0)
        MPI_Comm_create_group(MPI_COMM_WORLD, evens, 5, &cgroup);
    /* intercommunicator between the lower and the upper half */
    MPI_Comm halfc;
    int lower = rank < size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, lower, rank, &halfc);
    MPI_Intercomm_create(halfc, 0, MPI_COMM_WORLD, lower ? size / 2 : 0, 9, &inter);
    int ir = -1;
    if (lower) /* rank i of the lower half talks to rank i of the upper half */
        MPI_Send(&rank, 1, MPI_INT, rank, 77, inter);
    else
        MPI_Recv(&ir, 1, MPI_INT, rank - size / 2, 77, inter, MPI_STATUS_IGNORE);
    MPI_Barrier(inter);
    MPI_Intercomm_merge(inter, !lower, &merged);
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int keep[2] = {1, 0};
    MPI_Cart_sub(cart, keep, &sub);
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * (size_t)size * 2);
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + 1) % size;
        edges[2 * i + 1] = (i + size - 1) % size;
    }
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
    int srcs[1] = {left}, dsts[1] = {right}, wts[1] = {1};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, wts, 1, dsts, wts, MPI_INFO_NULL,
                                   0, &dgraph);

    /* nonblocking collectives and the completion calls */
    int v = rank + 1, sum = 0, mx = 0;
    MPI_Request rq[3];
    MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, idup, &rq[0]);
    MPI_Ibarrier(idup, &rq[1]);
    MPI_Ireduce(&v, &mx, 1, MPI_INT, MPI_MAX, 0, idup, &rq[2]);
    int idx, done = 0, outc, ind[3];
    MPI_Waitany(3, rq, &idx, MPI_STATUS_IGNORE);
    MPI_Waitsome(3, rq, &outc, ind, MPI_STATUSES_IGNORE);
    while (!done)
        MPI_Testall(3, rq, &done, MPI_STATUSES_IGNORE);
    acc += sum + mx;

    /* point-to-point with Testany / Testsome / Test, ANY_TAG, probes */
    int a = rank, b = -1, c = -1;
    MPI_Request pr[2];
    MPI_Irecv(&b, 1, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &pr[0]);
    MPI_Isend(&a, 1, MPI_INT, right, 101, MPI_COMM_WORLD, &pr[1]);
    int n_done = 0;
    while (n_done < 2) {
        int k, flag;
        MPI_Testany(2, pr, &k, &flag, MPI_STATUS_IGNORE);
        if (flag && k != MPI_UNDEFINED)
            n_done++;
        if (flag && k == MPI_UNDEFINED)
            break;
    }
    MPI_Irecv(&c, 1, MPI_INT, left, 102, MPI_COMM_WORLD, &pr[0]);
    MPI_Isend(&a, 1, MPI_INT, right, 102, MPI_COMM_WORLD, &pr[1]);
    n_done = 0;
    while (n_done < 2) {
        int cnt, ids[2];
        MPI_Testsome(2, pr, &cnt, ids, MPI_STATUSES_IGNORE);
        if (cnt == MPI_UNDEFINED)
            break;
        n_done += cnt;
    }
    MPI_Status st;
    MPI_Send(&a, 1, MPI_INT, right, 103, MPI_COMM_WORLD);
    MPI_Probe(left, 103, MPI_COMM_WORLD, &st);
    MPI_Recv(&c, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Message msg;
    MPI_Isend(&a, 1, MPI_INT, right, 104, MPI_COMM_WORLD, &pr[1]);
    MPI_Mprobe(MPI_ANY_SOURCE, 104, MPI_COMM_WORLD, &msg, &st);
    MPI_Mrecv(&c, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    MPI_Wait(&pr[1], MPI_STATUS_IGNORE);
    int flag = 0;
    MPI_Isend(&a, 1, MPI_INT, right, 105, MPI_COMM_WORLD, &pr[1]);
    while (!flag)
        MPI_Improbe(left, 105, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Imrecv(&c, 1, MPI_INT, &msg, &pr[0]);
    MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
    int rep[2] = {rank, rank};
    MPI_Sendrecv_replace(rep, 2, MPI_INT, right, 106, left, 106, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    acc += b + c + rep[0];

    /* a receive that never matches, cancelled; a send freed before completion */
    int never;
    MPI_Irecv(&never, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &pr[0]);
    MPI_Cancel(&pr[0]);
    MPI_Wait(&pr[0], &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    MPI_Isend(&a, 1, MPI_INT, right, 107, MPI_COMM_WORLD, &pr[1]);
    MPI_Request_free(&pr[1]);
    MPI_Recv(&c, 1, MPI_INT, left, 107, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* v / w collectives and in-place variants */
    int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
    int *big = calloc((size_t)size * (size_t)size, sizeof(int)), *big2 = calloc((size_t)size * (size_t)size, sizeof(int));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int i = 0; i < size; i++) {
        cnt[i] = 1;
        dsp[i] = i;
        types[i] = MPI_INT;
    }
    int wdsp[64];
    for (int i = 0; i < size; i++)
        wdsp[i] = i * (int)sizeof(int);
    MPI_Scatterv(big, cnt, dsp, MPI_INT, &c, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Alltoallw(big, cnt, wdsp, types, big2, cnt, wdsp, types, MPI_COMM_WORLD);
    MPI_Reduce_scatter(big, &c, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, big, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(big, 1, MPI_INT, big2, 1, MPI_INT, merged);
    MPI_Scan(&v, &c, 1, MPI_INT, MPI_SUM, cart);
    MPI_Bcast(&v, 1, MPI_INT, 0, sub);
    MPI_Neighbor_allgather(&a, 1, MPI_INT, big, 1, MPI_INT, dgraph);
    MPI_Neighbor_alltoall(big2, 1, MPI_INT, big, 1, MPI_INT, graph);
    if (rank % 2 == 0) {
        MPI_Allreduce(&v, &c, 1, MPI_INT, MPI_SUM, created);
        MPI_Allreduce(&v, &c, 1, MPI_INT, MPI_SUM, cgroup);
    }
    MPI_Allreduce(&v, &c, 1, MPI_INT, MPI_SUM, stype);

    /* RMA: fence epochs with put/get/accumulate to the right neighbour */
    int *wbuf, got = -1;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int) * 4, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
    wbuf[0] = wbuf[1] = 0;
    MPI_Win_fence(0, win);
    MPI_Put(&a, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Accumulate(&a, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* MPI-IO: each rank writes and reads back its own 4 ints */
    char path[4200];
    snprintf(path, sizeof path, "%s/io.dat", argc > 1 ? argv[1] : ".");
    MPI_File fh;
    int out4[4] = {rank, rank, rank, rank}, in4[4] = {0};
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, (MPI_Offset)rank * 16, out4, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, (MPI_Offset)rank * 16, in4, 4, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);

    /* errors come back as codes, with or without xsprof */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int e1 = MPI_Send(&a, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    int e2 = MPI_Send(&a, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD);
    int e3 = MPI_Allreduce(&v, &c, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
    MPI_Error_class(e1, &e1);
    MPI_Error_class(e2, &e2);
    MPI_Error_class(e3, &e3);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    printf("rank %d: acc %ld inter %d got %d cancelled %d io %d dims %dx%d errors %d %d %d\n", rank, acc, ir, got,
           cancelled, in4[3], dims[0], dims[1], e1, e2, e3);
    MPI_Comm *all[] = {&idup, &stype, &halfc, &inter, &merged, &cart, &sub, &graph, &dgraph};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        MPI_Comm_free(all[i]);
    if (rank % 2 == 0) {
        MPI_Comm_free(&created);
        MPI_Comm_free(&cgroup);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world);
    free(index);
    free(edges);
    free(cnt);
    free(dsp);
    free(big);
    free(big2);
    free(types);
    MPI_Finalize();
    return 0;
}
