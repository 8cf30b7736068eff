/*
** The heap in huge pages (sim/heap.h). Criterion runs each test in a process
** of its own, so each starts with glibc's heap as it was and the one-call
** guard unset. Where the machine allows it (Linux, glibc's malloc, huge
** pages not "never", no strict overcommit) the heap must come back marked
** for huge pages, with blocks of a few MiB inside the marked range; where it
** does not, the reason given must be one heap.h lists.
*/
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/heap.h"

/* The VmFlags line of the mapping of /proc/self/smaps that holds `addr`, or "" if none does. */
static void vm_flags(const void *addr, char *out, size_t n) {
  out[0] = '\0';
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512];
  bool inside = false;
  uintptr_t a = (uintptr_t)addr;
  while (fgets(line, sizeof line, f)) {
    uintmax_t lo, hi;
    if (sscanf(line, "%jx-%jx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && !strncmp(line, "VmFlags:", 8)) {
      size_t len = strlen(line + 8);
      if (len >= n) len = n - 1;
      memcpy(out, line + 8, len);
      out[len] = '\0';
      break;
    }
  }
  fclose(f);
}

static bool known_refusal(const char *why) {
  static const char *const reasons[] = {"transparent huge pages are off", "strict overcommit (vm.overcommit_memory = 2)",
                                        "malloc is not glibc's heap", "not Linux with glibc's malloc",
                                        "madvise(MADV_HUGEPAGE) refused"};
  for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
    if (!strcmp(why, reasons[i])) return true;
  return false;
}

Test(heap, the_environment_turns_it_off) {
  setenv("FABSIM_HUGEPAGES", "0", 1);
  const char *why = NULL;
  cr_assert_not(fab_heap_hugepages(64u << 20, &why));
  cr_assert_str_eq(why, "FABSIM_HUGEPAGES=0");
}

Test(heap, a_second_call_does_nothing) {
  unsetenv("FABSIM_HUGEPAGES");
  const char *why = NULL;
  fab_heap_hugepages(64u << 20, &why);
  cr_assert_not(fab_heap_hugepages(64u << 20, &why));
  cr_assert_str_eq(why, "already set up");
}

Test(heap, too_small_a_reservation_is_refused) {
  unsetenv("FABSIM_HUGEPAGES");
  const char *why = NULL;
  cr_assert_not(fab_heap_hugepages(2u << 20, &why));
  cr_assert(known_refusal(why) || !strcmp(why, "too little memory to reserve"), "why: %s", why);
}

Test(heap, blocks_of_megabytes_land_in_the_marked_heap) {
  unsetenv("FABSIM_HUGEPAGES");
  const char *why = NULL;
  bool ok = fab_heap_hugepages(256u << 20, &why);
  if (!ok) {
    cr_assert(known_refusal(why), "refused for a reason heap.h does not list: %s", why);
    cr_log_info("huge pages not used here: %s", why);
    return;
  }
  cr_assert_str_eq(why, "heap reserved in 2 MiB pages");
  /* Blocks over glibc's default mmap threshold (128 KiB), kept in the heap now. The marked range starts at the
  ** first 2 MiB boundary past where the heap ended, so the first blocks may lie below it: of four blocks of
  ** 1 MiB the last is past it, and so is the middle of a block of 16 MiB. */
  char *small[4];
  for (int i = 0; i < 4; i++) {
    small[i] = malloc(1u << 20);
    cr_assert_not_null(small[i]);
    memset(small[i], 1, 1u << 20);
  }
  char *big = malloc(16u << 20), flags[256];
  cr_assert_not_null(big);
  memset(big, 1, 16u << 20);
  vm_flags(small[3], flags, sizeof flags);
  cr_assert(strstr(flags, " hg"), "the fourth 1 MiB block is in a mapping without MADV_HUGEPAGE (VmFlags:%s)", flags);
  vm_flags(big + (8u << 20), flags, sizeof flags);
  cr_assert(strstr(flags, " hg"), "a 16 MiB block is in a mapping without MADV_HUGEPAGE (VmFlags:%s)", flags);
  for (int i = 0; i < 4; i++) free(small[i]);
  free(big);
}
