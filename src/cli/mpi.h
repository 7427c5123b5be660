/* The CLI's MPI glue (mpi.c): the ranks of an `mpirun -n R ptreg batch`
 * or `ptreg multiway`, the collectives the library's shared runs ask for,
 * and batch's outputs written together with MPI-IO (batch_cli.h). Without
 * MPI in the build, or not started by mpirun: one process. */
#ifndef PTREG_CLI_MPI_H
#define PTREG_CLI_MPI_H

#include <stddef.h>

#include "ptreg/core.h"

typedef struct cli_comm {
    int rank, size;
    int joined; /* MPI was initialised here */
} cli_comm;

/* Joins the ranks when this process was started by mpirun and ptreg was
 * built with MPI; otherwise one process (rank 0 of 1). */
int cli_comm_open(cli_comm *c);
/* Leaves (MPI_Finalize); returns rc. */
int cli_comm_close(cli_comm *c, int rc);
/* The worst exit code of every rank (collective); rc on one process. */
int cli_comm_agree(const cli_comm *c, int rc);
/* This rank's share of n items: a contiguous range, the first ranks
 * taking one more when n does not divide. */
void cli_comm_split(const cli_comm *c, size_t n, size_t *first, size_t *count);
/* The library's view of the ranks (ptreg_ranks): the largest value and the
 * sum of doubles over every rank (multiway's pairs); rank 0 of 1 without MPI. */
ptreg_ranks cli_comm_ranks(const cli_comm *c);

#endif
