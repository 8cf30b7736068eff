/* NCCL topology dumps (NCCL_TOPO_DUMP_FILE) into a node's layout. See nccl_topo.h. */
#include "nccl_topo.h"
#include <stdlib.h>
#include <string.h>
#include "sim/config.h"

#define TOPO_DEPTH_MAX 64
#define GBIT 1000000000ull

typedef struct Parse {
  FabNcclTopo *t;
  const char *path;
  int depth;
  uint64_t pci_bps[TOPO_DEPTH_MAX]; /* the link rate of each <pci> on the way down (0: none given) */
  uint32_t nvl_now;                 /* NVLinks of the <gpu> being read */
  bool in_gpu, gpu_direct;
  uint64_t gpu_pcie, nic_pcie;      /* the slowest GPU and NIC links seen */
  int64_t sm_line;                  /* where the first GPU was (for messages) */
} Parse;

static const char *attr(const char **names, const char **values, const char *key) {
  for (int i = 0; names[i]; i++)
    if (g_str_equal(names[i], key)) return values[i];
  return NULL;
}

static gboolean fail(GMarkupParseContext *ctx, const Parse *p, GError **err, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean fail(GMarkupParseContext *ctx, const Parse *p, GError **err, const char *fmt, ...) {
  int line = 0, col = 0;
  if (ctx) g_markup_parse_context_get_position(ctx, &line, &col);
  col++; /* GLib counts characters from 0 */
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (ctx) g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s:%d:%d: %s", p->path, line, col, msg);
  else g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_VALUE, "%s: %s", p->path, msg);
  g_free(msg);
  return FALSE;
}

/* "32.0 GT/s PCIe" (or "16 GT/s") x width lanes, 128b/130b, per direction;
** 0 for a speed the dump does not know (absent, empty, "Unknown..."), -1 for
** one that is not a rate. */
static int64_t pci_rate(const char *speed, const char *width) {
  if (!speed || !*speed || g_str_has_prefix(speed, "Unknown")) return 0;
  char *end;
  double gts = g_ascii_strtod(speed, &end);
  while (*end == ' ') end++;
  if (end == speed || !(gts > 0) || gts > 1024 || !g_str_has_prefix(end, "GT/s")) return -1;
  uint64_t lanes = width ? g_ascii_strtoull(width, NULL, 10) : 16;
  if (!lanes || lanes > 64) lanes = 16; /* NCCL takes 16 when the width is unknown (topo.cc) */
  return (int64_t)((uint64_t)(gts * 1e9) * lanes * 128 / 130);
}

static gboolean parse_u32(const char *s, uint32_t *v) {
  if (!s || !g_ascii_isdigit(s[0])) return FALSE;
  char *end;
  uint64_t x = g_ascii_strtoull(s, &end, 10);
  if (*end || x > UINT32_MAX) return FALSE;
  *v = (uint32_t)x;
  return TRUE;
}

static gboolean on_gpu(GMarkupParseContext *ctx, Parse *p, const char **n, const char **v, GError **err) {
  uint32_t sm;
  if (!parse_u32(attr(n, v, "sm"), &sm)) return fail(ctx, p, err, "<gpu> without a numeric sm attribute");
  FabGpuArch arch = sm >= 100 && sm < 110 ? FAB_ARCH_BLACKWELL : sm >= 90 && sm < 100 ? FAB_ARCH_HOPPER
                  : sm >= 80 && sm < 90 ? FAB_ARCH_AMPERE : FAB_ARCH_NONE;
  if (arch == FAB_ARCH_NONE)
    return fail(ctx, p, err, "a GPU of compute capability sm %u: fabsim knows Ampere (80-89), Hopper (90-99) and "
                "Blackwell (100-109)", sm);
  if (p->t->gpus && p->t->sm != sm)
    return fail(ctx, p, err, "GPUs of compute capabilities %u and %u in one node: fabsim's node has one kind of GPU",
                p->t->sm, sm);
  p->t->sm = sm;
  p->t->arch = arch;
  p->t->gpus++;
  p->in_gpu = true;
  p->nvl_now = 0;
  uint64_t link = p->depth > 0 ? p->pci_bps[p->depth - 1] : 0; /* the <pci> it sits in */
  if (link && (!p->gpu_pcie || link < p->gpu_pcie)) p->gpu_pcie = link;
  return TRUE;
}

static void start_el(GMarkupParseContext *ctx, const char *el, const char **n, const char **v, gpointer data,
                     GError **err) {
  Parse *p = data;
  if (p->depth >= TOPO_DEPTH_MAX) {
    fail(ctx, p, err, "elements nested more than %d deep", TOPO_DEPTH_MAX);
    return;
  }
  p->pci_bps[p->depth] = 0;
  if (g_str_equal(el, "pci")) {
    int64_t r = pci_rate(attr(n, v, "link_speed"), attr(n, v, "link_width"));
    if (r < 0) {
      fail(ctx, p, err, "<pci> link_speed '%s' is not a PCIe rate (such as \"32.0 GT/s PCIe\", up to 1024 GT/s)",
           attr(n, v, "link_speed"));
      return;
    }
    p->pci_bps[p->depth] = (uint64_t)r;
  } else if (g_str_equal(el, "cpu")) {
    const char *vendor = attr(n, v, "vendor"), *arch = attr(n, v, "arch");
    int cpu = arch && (g_str_has_prefix(arch, "arm") || g_str_has_prefix(arch, "aarch")) ? FAB_CPU_ARM
            : vendor && g_str_equal(vendor, "AuthenticAMD") ? FAB_CPU_AMD
            : vendor && g_str_equal(vendor, "GenuineIntel") ? FAB_CPU_INTEL : -1;
    if (cpu >= 0) p->t->cpu = cpu;
  } else if (g_str_equal(el, "gpu")) {
    if (!on_gpu(ctx, p, n, v, err)) return;
  } else if (g_str_equal(el, "nvlink") && p->in_gpu) {
    uint32_t count;
    const char *tclass = attr(n, v, "tclass");
    if (!parse_u32(attr(n, v, "count"), &count) || count > 1024) {
      fail(ctx, p, err, "<nvlink> without a numeric count");
      return;
    }
    if (tclass && g_str_equal(tclass, "0x068000")) p->nvl_now += count; /* to an NVSwitch */
    else p->gpu_direct = true;                                            /* to another GPU (or the CPU) */
  } else if (g_str_equal(el, "net")) {
    uint32_t mbps;
    if (!parse_u32(attr(n, v, "speed"), &mbps) || !mbps) {
      fail(ctx, p, err, "<net> without a numeric speed (Mb/s)");
      return;
    }
    uint64_t bps = (uint64_t)mbps * 1000000ull;
    if (p->t->nics && p->t->nic_bps != bps) {
      fail(ctx, p, err, "network ports of %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " Mb/s in one node: fabsim's "
           "NICs all have one rate", p->t->nic_bps / 1000000, bps / 1000000);
      return;
    }
    p->t->nic_bps = bps;
    p->t->nics++;
    for (int d = p->depth - 1; d >= 0; d--) /* the nearest <pci> above it: its NIC's link */
      if (p->pci_bps[d]) {
        if (!p->nic_pcie || p->pci_bps[d] < p->nic_pcie) p->nic_pcie = p->pci_bps[d];
        break;
      }
  }
  p->depth++;
}

static void end_el(GMarkupParseContext *ctx, const char *el, gpointer data, GError **err) {
  Parse *p = data;
  p->depth--;
  if (!g_str_equal(el, "gpu")) return;
  p->in_gpu = false;
  if (p->t->gpus > 1 && p->nvl_now != p->t->nvlinks)
    fail(ctx, p, err, "GPUs with %u and %u NVLinks to NVSwitches in one node: fabsim's GPUs all have one NVLink rate",
         p->t->nvlinks, p->nvl_now);
  p->t->nvlinks = p->nvl_now;
}

gboolean fab_nccl_topo_read(const char *path, FabNcclTopo *out, GError **err) {
  *out = (FabNcclTopo){.cpu = -1};
  Parse p = {.t = out, .path = path};
  gchar *text = NULL;
  size_t len = 0;
  const char *why = NULL;
  GError *e = NULL;
  if (!fab_cfg_read_file(path, FAB_CFG_FILE_MAX, &text, &len, &why)) {
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_IO, "%s: cannot read the NCCL topology: %s", path, why);
    return FALSE;
  }
  static const GMarkupParser parser = {start_el, end_el, NULL, NULL, NULL};
  GMarkupParseContext *ctx = g_markup_parse_context_new(&parser, 0, &p, NULL);
  gboolean ok = g_markup_parse_context_parse(ctx, text, (gssize)len, &e) && g_markup_parse_context_end_parse(ctx, &e);
  if (!ok && e && e->domain != FAB_CFG_ERROR) { /* GLib's own message names line and character */
    g_set_error(err, FAB_CFG_ERROR, FAB_CFG_ERROR_PARSE, "%s: not an NCCL topology (XML): %s", path, e->message);
    g_clear_error(&e);
  } else if (!ok) {
    g_propagate_error(err, e);
  }
  g_markup_parse_context_free(ctx);
  g_free(text);
  if (ok && !out->gpus) ok = fail(NULL, &p, err, "no <gpu> in the NCCL topology");
  if (ok && p.gpu_direct && !out->nvlinks)
    ok = fail(NULL, &p, err, "GPUs linked to each other by NVLink without NVSwitches: fabsim's NVLink domain is a "
              "switched one (NVSwitch), a direct GPU mesh is not modelled");
  if (ok) out->pcie_bps = p.gpu_pcie && p.nic_pcie ? MIN(p.gpu_pcie, p.nic_pcie) : MAX(p.gpu_pcie, p.nic_pcie);
  return ok;
}
