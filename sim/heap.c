/* The process heap in transparent huge pages. See heap.h. */
#include "heap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#define HUGE_PAGE ((uintptr_t)2 << 20) /* x86-64 and arm64 (4 KiB base pages) PMD size */
#define MAX_RESERVE ((size_t)2046 << 20) /* M_TOP_PAD is an int: just under 2 GiB */
#define GLIBC_TOP_PAD (128 * 1024)     /* mallopt(3): M_TOP_PAD's default */
/* The default: enough for the hot state of the largest benchmarks (the 1024-GPU ring allreduce peaks at 335 MB
** in all), not more: glibc keeps M_TOP_PAD free at the heap's top and carves large arrays from the reservation
** where it would map them apart, so a run whose big arrays grow and move keeps more resident (the 70B step:
** 2.18 GB with a reservation of 2046 MiB, 1.51 GB with 256 MiB, 1.43 GB with none; README, Huge pages) */
#define DEFAULT_RESERVE ((size_t)256 << 20)

#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE) && !defined(__SANITIZE_ADDRESS__)
#define HEAP_HUGE 1
/* The first line of a small /proc or /sys file, or "" if it cannot be read. */
static void read_line(const char *path, char *buf, size_t n) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(buf, (int)n, f)) buf[0] = '\0';
  fclose(f);
}
#endif

bool fab_heap_hugepages(size_t reserve, const char **why) {
  static bool done;
  const char *dummy;
  if (!why) why = &dummy;
  if (done) {
    *why = "already set up";
    return false;
  }
  done = true;
  const char *env = getenv("FABSIM_HUGEPAGES");
  if (env && !strcmp(env, "0")) {
    *why = "FABSIM_HUGEPAGES=0";
    return false;
  }
#ifdef HEAP_HUGE
  char line[128];
  read_line("/sys/kernel/mm/transparent_hugepage/enabled", line, sizeof line);
  if (!line[0] || strstr(line, "[never]")) {
    *why = "transparent huge pages are off";
    return false;
  }
  read_line("/proc/sys/vm/overcommit_memory", line, sizeof line);
  if (line[0] == '2') {
    *why = "strict overcommit (vm.overcommit_memory = 2)";
    return false;
  }
  if (!reserve) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    reserve = pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page : 0;
    if (reserve > DEFAULT_RESERVE) reserve = DEFAULT_RESERVE;
  }
  if (reserve > MAX_RESERVE) reserve = MAX_RESERVE;
  if (reserve < 4 * HUGE_PAGE) {
    *why = "too little memory to reserve";
    return false;
  }
  /* glibc grows its heap by what it needs plus M_TOP_PAD and keeps M_TOP_PAD when it trims. Make it grow
  ** now, by the reservation, with blocks below its mmap threshold; their frees give the space back to the
  ** heap's top. While the top has room glibc carves every block from it, whatever its size (its mmap
  ** threshold applies only when the heap must grow), so slabs and large arrays land there too. Under another
  ** malloc (valgrind's, a sanitizer's) the break never moves: give up. */
  if (!mallopt(M_TOP_PAD, (int)reserve)) {
    *why = "malloc refused the reservation";
    return false;
  }
  char *before = sbrk(0), *after = before;
  void *blocks[64];
  int n = 0;
  while (n < 64 && after == before) {
    blocks[n++] = malloc(64 * 1024);
    after = sbrk(0);
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
  uintptr_t lo = ((uintptr_t)before + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t hi = (uintptr_t)after & ~(HUGE_PAGE - 1);
  if (before == (char *)-1 || after == before || hi < lo + 2 * HUGE_PAGE) {
    mallopt(M_TOP_PAD, GLIBC_TOP_PAD);
    *why = "malloc is not glibc's heap";
    return false;
  }
  if (madvise((void *)lo, hi - lo, MADV_HUGEPAGE)) {
    mallopt(M_TOP_PAD, GLIBC_TOP_PAD);
    *why = "madvise(MADV_HUGEPAGE) refused";
    return false;
  }
  *why = "heap reserved in 2 MiB pages";
  return true;
#else
  (void)reserve;
#ifdef __SANITIZE_ADDRESS__
  *why = "malloc is not glibc's heap";
#else
  *why = "not Linux with glibc's malloc";
#endif
  return false;
#endif
}
