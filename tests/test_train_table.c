/*
** Measured compute (workload.compute_table, workloads/train_table.c): the
** table's time per layer, microbatch and rank replaces FLOPs / rate for
** the parts it names, exactly; the rest keep the FLOPs model; every bad
** table is refused naming the scenario key and the table's file:line:col.
*/
#include "testscen.h"
#include "testtrain.h"

static char *dir;

static void setup(void) { dir = g_dir_make_tmp("fabsim-table-XXXXXX", NULL); }

static void teardown(void) {
  testscen_rm_dir(dir);
  g_free(dir);
}

/* A table of `csv` in the scratch directory, and the scenario that names it (g_free both). */
static char *with_table(const char *csv, const char *model, const char *par, char **path) {
  *path = g_build_filename(dir, "c.csv", NULL);
  cr_assert(g_file_set_contents(*path, csv, -1, NULL));
  return g_strdup_printf("workload:\n  kind: training\n  model: %s\n  parallelism: %s\n  compute_table: %s\n"
                         "  gpu: {memory_bandwidth: 1TB/s}\n", model, par, *path);
}

#define TINY_MODEL "{layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1}"

TestSuite(train_table, .init = setup, .fini = teardown);

Test(train_table, measured_parts_replace_flops_exactly) {
  /* one rank, 2 layers: a layer's forward is one op (attention and MLP with no collective between them) */
  char *path, *y = with_table("part,pass,time\n# a profile of one layer\nattention, forward, 10us\n"
                              "attention,backward,25us\nmlp,forward,7us\nmlp,backward,12us\n\noptimizer,step,3us\n",
                              TINY_MODEL, "{}", &path);
  Gen g = gen_ok(y, 1);
  uint32_t c[16];
  cr_assert_eq(computes_of(g.d, EP(0), c, 16), 5);
  static const fab_time_t want[] = {17000000, 17000000, 37000000, 37000000, 3000000};
  for (uint32_t i = 0; i < 5; i++)
    cr_assert_eq(fab_dag_op(g.d, c[i])->dur, want[i], "op %u: %llu ps", i, (unsigned long long)fab_dag_op(g.d, c[i])->dur);
  done(&g);
  g_free(y);
  g_free(path);
  /* only attention measured: the MLP keeps FLOPs / rate (2 x 128 x 2hf = 8388608 FLOPs at 0.5e12: 16777216 ps),
  ** and the optimizer its memory traffic (2 x 49152 x 28 B at 1 TB/s) */
  y = with_table("attention,forward,10us\nattention,backward,25us\n", TINY_MODEL, "{}", &path);
  g = gen_ok(y, 1);
  computes_of(g.d, EP(0), c, 16);
  cr_assert_eq(fab_dag_op(g.d, c[0])->dur, 10000000 + 16777216);
  cr_assert_eq(fab_dag_op(g.d, c[2])->dur, 25000000 + 2 * 16777216);
  cr_assert_eq(fab_dag_op(g.d, c[4])->dur, 2752512);
  done(&g);
  g_free(y);
  g_free(path);
  /* tp 2: the times are a rank's at the job's parallelism, not divided again; the parts now apart */
  y = with_table("attention,forward,10us\nattention,backward,25us\nmlp,forward,7us\nmlp,backward,12us\n", TINY_MODEL,
                 "{tp: 2}", &path);
  g = gen_ok(y, 2);
  cr_assert_eq(computes_of(g.d, EP(1), c, 16), 9);
  static const fab_time_t tp2[] = {10000000, 7000000, 10000000, 7000000, 12000000, 25000000, 12000000, 25000000};
  for (uint32_t i = 0; i < 8; i++) cr_assert_eq(fab_dag_op(g.d, c[i])->dur, tp2[i], "op %u", i);
  done(&g);
  g_free(y);
  g_free(path);
  /* cp 2: the measured attention is cut as its FLOPs are (projections, 2 ring pieces, output projection), and
  ** its pieces still add up to the table's time */
  y = with_table("attention,forward,10us\nattention,backward,25us\n", TINY_MODEL, "{cp: 2}", &path);
  g = gen_ok(y, 2);
  uint32_t cc[24];
  cr_assert_eq(computes_of(g.d, EP(0), cc, 24), 17);
  /* of the attention's FLOPs per rank: projections 3/8, two ring pieces 1/4 each, the output projection 1/8
  ** (3.75 + 2.5 + 2.5 + 1.25 = 10 us); the output projection's op also holds the MLP's 8388608 ps */
  cr_assert_eq(fab_dag_op(g.d, cc[0])->dur, 3750000);
  cr_assert_eq(fab_dag_op(g.d, cc[1])->dur, 2500000);
  cr_assert_eq(fab_dag_op(g.d, cc[2])->dur, 2500000);
  cr_assert_eq(fab_dag_op(g.d, cc[3])->dur, 1250000 + 8388608);
  done(&g);
  g_free(y);
  g_free(path);
}

Test(train_table, explain_names_the_measured_parts) {
  char *path, *y = with_table("attention,forward,10us\nattention,backward,25us\noptimizer,step,3us\n", TINY_MODEL,
                              "{}", &path);
  Gen g = gen_ok(y, 1);
  const char *note = g_array_index(g.d->jobs, FabJobDef, 0).note;
  cr_assert(strstr(note, "measured per layer and microbatch (compute_table): attention 10 us forward, 25 backward, "
                         "optimizer 3 us a step"), "%s", note);
  done(&g);
  g_free(y);
  g_free(path);
}

Test(train_table, bad_tables) {
  static const struct { const char *csv, *model, *what; } cases[] = {
    {"attention,forward,10us\nattention,backward,25us\nffn,forward,1us\n", TINY_MODEL,
     "c.csv:3:1: part: 'ffn' is not one of attention, mlp, moe, logits, optimizer"},
    {"attention, sideways, 10us\n", TINY_MODEL, "c.csv:1:12: pass: 'sideways': expected forward or backward"},
    {"optimizer,forward,3us\n", TINY_MODEL, "c.csv:1:11: pass: 'forward': expected step"},
    {"attention,forward,10\n", TINY_MODEL, "c.csv:1:19: time:"},
    {"attention,forward,0us\nattention,backward,1us\n", TINY_MODEL, "c.csv:1:19: time:"},
    {"attention,forward,1us\nattention,forward,2us\n", TINY_MODEL, "c.csv:2:1: a second row for attention, forward"},
    {"attention,forward,1us\n", TINY_MODEL, "c.csv:1:1: attention has a forward row but no backward row"},
    {"attention,forward,1us,extra\n", TINY_MODEL, "c.csv:1:23: expected 3 fields: part, pass, time"},
    {"attention,forward\n", TINY_MODEL, "c.csv:1:18: expected 3 fields: part, pass, time"},
    {"# nothing\n\n", TINY_MODEL, "c.csv:1:1: the compute table has no rows"},
    {"moe,forward,1us\nmoe,backward,2us\n", TINY_MODEL, "c.csv:1: moe rows, but the model has no MoE layers"},
    {"logits,forward,1us\nlogits,backward,2us\n", TINY_MODEL, "c.csv:1: logits rows, but the model has no output"},
    {"mlp,forward,1us\nmlp,backward,2us\n", "{layers: 2, hidden: 64, ffn: 256, seq: 128, global_batch: 1, experts: 2}",
     "c.csv:1: mlp rows, but every layer is an MoE layer"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *path, *y = with_table(cases[i].csv, cases[i].model, "{}", &path);
    expect_error(y, 1, 1e12, "t.yaml:5:18: workload.compute_table: ", cases[i].what);
    g_free(y);
    g_free(path);
  }
  /* a table that is not there */
  char *y = g_strdup_printf("workload:\n  kind: training\n  model: " TINY_MODEL "\n  compute_table: %s/none.csv\n", dir);
  expect_error(y, 1, 1e12, "t.yaml:4:18: workload.compute_table: ", "cannot read the compute table");
  g_free(y);
}
