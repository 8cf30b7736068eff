/* The run report's lines (tools/libfabsim/report.c), on results made by
** hand: the per-purpose collectives line of a training job. */
#include <criterion/criterion.h>
#include <glib.h>
#include <string.h>

#include "tools/libfabsim/report.h"

#define MS ((fab_time_t)1000000000) /* ps */

static FabCollRec coll(const char *tag, uint32_t job, fab_time_t start, fab_time_t end) {
  FabCollRec c = {0};
  c.op = "allreduce";
  c.tag = tag;
  c.job = job;
  c.ranks = 2;
  c.start = start;
  c.end = end;
  return c;
}

static FabSpanRec span(uint32_t rank, uint32_t job, int32_t coll, fab_time_t start, fab_time_t end) {
  FabSpanRec s = {0};
  s.rank = rank;
  s.job = job;
  s.kind = 1;
  s.coll = coll;
  s.start = start;
  s.end = end;
  return s;
}

/* Two DP allreduces, 0-10 ms and 5-20 ms (25 ms summed). Rank 0 is in both:
** busy 0-20 ms, the overlap counted once; rank 1 in both, 1-9 and 12-18 ms:
** 14 ms. One TP allreduce, 0-3 ms. A collective of job 1 and a compute span
** do not count. */
Test(report, purposes_per_rank_beside_sums) {
  FabCollRec colls[] = {coll("dp", 0, 0, 10 * MS), coll("dp", 0, 5 * MS, 20 * MS), coll("tp", 0, 0, 3 * MS),
                        coll("dp", 1, 0, 100 * MS)};
  FabSpanRec spans[] = {span(0, 0, 0, 0, 10 * MS), span(1, 0, 0, 1 * MS, 9 * MS), span(0, 0, 1, 5 * MS, 20 * MS),
                        span(1, 0, 1, 12 * MS, 18 * MS), span(2, 0, 2, 0, 3 * MS), span(0, 1, 3, 0, 100 * MS),
                        span(0, 0, -1, 0, 50 * MS)};
  spans[6].kind = 0; /* compute */
  FabResults r;
  memset(&r, 0, sizeof r);
  r.colls = colls;
  r.n_colls = G_N_ELEMENTS(colls);
  r.spans = spans;
  r.n_spans = G_N_ELEMENTS(spans);
  char *s = fab_report_purposes(&r, 0, 1);
  cr_assert_str_eq(s, "dp 2 x allreduce (2 per rank, busiest rank 20.000 ms; 25.000 ms summed), "
                      "tp 1 x allreduce (1 per rank, busiest rank 3.000 ms; 3.000 ms summed)");
  g_free(s);
  /* over 2 steps: per rank and step */
  s = fab_report_purposes(&r, 0, 2);
  cr_assert_str_eq(s, "dp 2 x allreduce (1 per rank and step, busiest rank 10.000 ms per step; 25.000 ms summed), "
                      "tp 1 x allreduce (0.5 per rank and step, busiest rank 1.500 ms per step; 3.000 ms summed)");
  g_free(s);
  s = fab_report_purposes(&r, 1, 1);
  cr_assert_str_eq(s, "dp 1 x allreduce (1 per rank, busiest rank 100.000 ms; 100.000 ms summed)");
  g_free(s);
}

/* Without a timeline (no spans) only the count and the sum are known. */
Test(report, purposes_without_timeline) {
  FabCollRec colls[] = {coll(NULL, 0, 0, 2 * MS)};
  FabResults r;
  memset(&r, 0, sizeof r);
  r.colls = colls;
  r.n_colls = 1;
  char *s = fab_report_purposes(&r, 0, 1);
  cr_assert_str_eq(s, "allreduce 1 x allreduce (2.000 ms summed)");
  g_free(s);
}
