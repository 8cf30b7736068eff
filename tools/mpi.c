/* The transport of a run spread over MPI processes (sim/par.h, FabParNet):
** `mpirun -np N fabsim run X.yaml`. Built only when Meson finds MPI (the
** `mpi` option); without it, fab_mpi_start says so. */
#include "mpi_net.h"

#ifdef FAB_HAVE_MPI
#include <mpi.h>
#include <string.h>

static int *counts(uint32_t n) { return g_new0(int, 4 * (size_t)n); } /* send counts, displs, recv counts, displs */

static void fail_big(size_t len) {
  if (len > (size_t)INT32_MAX) g_error("fabsim: an MPI message of %zu bytes is over MPI's 2 GiB count", len);
}

static void ex_exchange(void *ctx, GByteArray *const *out, GByteArray *const *in) {
  (void)ctx;
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int *c = counts((uint32_t)n), *sc = c, *sd = c + n, *rc = c + 2 * n, *rd = c + 3 * n;
  size_t total = 0;
  for (int k = 0; k < n; k++) {
    fail_big(out[k]->len);
    sc[k] = (int)out[k]->len;
    sd[k] = (int)total;
    total += out[k]->len;
  }
  fail_big(total);
  guint8 *send = g_malloc(total ? total : 1);
  for (int k = 0; k < n; k++) memcpy(send + sd[k], out[k]->data, out[k]->len);
  MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
  size_t rtotal = 0;
  for (int k = 0; k < n; k++) {
    rd[k] = (int)rtotal;
    rtotal += (size_t)rc[k];
  }
  fail_big(rtotal);
  guint8 *recv = g_malloc(rtotal ? rtotal : 1);
  MPI_Alltoallv(send, sc, sd, MPI_BYTE, recv, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
  for (int k = 0; k < n; k++) {
    g_byte_array_set_size(in[k], 0);
    g_byte_array_append(in[k], recv + rd[k], (guint)rc[k]);
  }
  g_free(send);
  g_free(recv);
  g_free(c);
}

static void ex_allgather(void *ctx, const GByteArray *mine, GByteArray *const *all) {
  (void)ctx;
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int *c = counts((uint32_t)n), *rc = c, *rd = c + n;
  fail_big(mine->len);
  int len = (int)mine->len;
  MPI_Allgather(&len, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
  size_t total = 0;
  for (int k = 0; k < n; k++) {
    rd[k] = (int)total;
    total += (size_t)rc[k];
  }
  fail_big(total);
  guint8 *recv = g_malloc(total ? total : 1);
  MPI_Allgatherv(mine->data, len, MPI_BYTE, recv, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
  for (int k = 0; k < n; k++) {
    g_byte_array_set_size(all[k], 0);
    g_byte_array_append(all[k], recv + rd[k], (guint)rc[k]);
  }
  g_free(recv);
  g_free(c);
}

static void ex_reduce(void *ctx, uint64_t *v, uint32_t nmin, uint32_t n) {
  (void)ctx;
  if (nmin) MPI_Allreduce(MPI_IN_PLACE, v, (int)nmin, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (n > nmin) MPI_Allreduce(MPI_IN_PLACE, v + nmin, (int)(n - nmin), MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
}

bool fab_mpi_start(int *argc, char ***argv, FabParNet *net, char **why) {
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    *why = g_strdup("MPI_Init failed");
    return false;
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  *net = (FabParNet){(uint32_t)rank, (uint32_t)size, NULL, ex_exchange, ex_allgather, ex_reduce};
  return true;
}

void fab_mpi_end(void) { MPI_Finalize(); }

#else

bool fab_mpi_start(int *argc, char ***argv, FabParNet *net, char **why) {
  (void)argc;
  (void)argv;
  (void)net;
  *why = g_strdup("this fabsim was built without MPI (Meson option mpi: install libopenmpi-dev or libmpich-dev "
                  "and configure again); a sweep's points spread over ranks with `mpirun -np N fabsim sweep ...`; "
                  "`fabsim validate SCENARIO --partition N` shows the cut a run would use");
  return false;
}

void fab_mpi_end(void) {}

#endif
