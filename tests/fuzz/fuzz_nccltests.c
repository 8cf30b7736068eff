/* Fuzz target: an nccl-tests log, as `fabsim compare` reads the measured
** one (tools/libfabsim/nccltests.c). When it parses, the table is printed
** back in nccl-tests' layout and compared with itself (every row matched,
** every error 0), side by side and as the summary line.
**
** Seeds: tests/fuzz/corpus/nccltests/ (tests/data/ *.log, copied by
** tests/fuzz/make_corpus.py); dictionary: tests/fuzz/nccltests.dict. */
#include <glib.h>

#include "fuzz.h"
#include "tools/libfabsim/nccltests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  GError *err = NULL;
  FabNcclTestsTable *t = fab_nccltests_parse_text(text, "fuzz.log", &err);
  if (t) {
    g_free(fab_nccltests_format(t));
    FabNcclTestsCmp *c = fab_nccltests_compare(t, t);
    g_assert(c->rows->len == t->rows->len); /* every measured row has its line */
    g_free(fab_nccltests_cmp_format(c));
    g_free(fab_nccltests_cmp_summary(c));
    fab_nccltests_cmp_free(c);
    fab_nccltests_table_free(t);
  } else {
    g_assert(err != NULL);
    g_error_free(err);
  }
  g_free(text);
  return 0;
}
