/*
** What the fuzz targets share (README "Fuzzing").
**
** Each target (fuzz_scenario.c, fuzz_set.c, fuzz_nccltests.c) is one
** LLVMFuzzerTestOneInput, built twice: with -Dfuzz=true as a libFuzzer binary
** (clang's -fsanitize=fuzzer supplies main()), and always with replay.c's
** main(), which feeds it the files of the seed corpus and the regression
** inputs, one Meson unit test per file. A target returns 0 for every input:
** rejecting bad input is the loader's job, and only a crash, a sanitizer
** report, a leak or a hang is a finding. Header-only.
*/
#ifndef FAB_FUZZ_H
#define FAB_FUZZ_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The entry point of a target (libFuzzer's name): `data` is the input, not
** NUL-terminated, `size` bytes; transfer none. Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The memory a fuzzed scenario may be estimated to need (bytes), set with
** fab_scenario_set_mem_limit before each load: a quarter of tools/fuzz's
** -rss_limit_mb (2 GiB), leaving room for ASan's redzones and quarantine,
** so that a scenario the load-time estimate lets through and that still
** runs out of memory is a finding about the estimate. */
#define FUZZ_MEM_LIMIT (512ull << 20)

/* `data` as a C string: a copy with a NUL added (an input that holds a NUL
** is cut there, as any C reader of it would). Transfer full (g_free). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = g_malloc(size + 1);
  if (size) memcpy(s, data, size);
  s[size] = 0;
  return s;
}

#endif
