/* Values with units, parsed exactly (decimal text scaled without floating
** point), and formatted back for messages. See config.h. */
#include "cfg_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- values and units -------------------------------------------------- */

typedef struct {
  const char *name;
  uint64_t mult; /* in the base unit */
} Unit;

static const Unit rate_units[] = {
    {"bps", 1},          {"Kbps", 1000ULL},        {"kbps", 1000ULL},
    {"Mbps", 1000000ULL}, {"Gbps", 1000000000ULL},  {"Tbps", 1000000000000ULL},
    {"B/s", 8},          {"KB/s", 8000ULL},        {"kB/s", 8000ULL},
    {"MB/s", 8000000ULL}, {"GB/s", 8000000000ULL},  {"TB/s", 8000000000000ULL},
    {NULL, 0}};
static const Unit time_units[] = {
    {"ps", 1},           {"ns", 1000ULL},         {"us", 1000000ULL},
    {"\xc2\xb5s", 1000000ULL}, {"\xce\xbcs", 1000000ULL}, {"ms", 1000000000ULL},
    {"s", 1000000000000ULL}, {NULL, 0}};
static const Unit size_units[] = {
    {"B", 1},
    {"KB", 1000ULL},
    {"kB", 1000ULL},
    {"MB", 1000000ULL},
    {"GB", 1000000000ULL},
    {"TB", 1000000000000ULL},
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
    {NULL, 0}};

enum { SC_OK, SC_SYNTAX, SC_FRACTION, SC_OVERFLOW };

typedef unsigned __int128 u128;

static unsigned factors(u128 v, unsigned f) {
  unsigned n = 0;
  while (v && v % f == 0) v /= f, n++;
  return n;
}

/* "DIGITS[.DIGITS][ws][UNIT]" scaled exactly: no floating point. *bare tells
** whether the unit was left out (then the multiplier is 1). */
static int scale_decimal(const char *s, const Unit *units, uint64_t *out, gboolean *bare) {
  const char *ip = s, *p = s;
  while (g_ascii_isdigit(*p)) p++;
  size_t ni = (size_t)(p - ip), nf = 0;
  const char *fp = p;
  if (*p == '.') {
    fp = ++p;
    while (g_ascii_isdigit(*p)) p++;
    nf = (size_t)(p - fp);
  }
  if (ni + nf == 0) return SC_SYNTAX;
  const char *u = p;
  while (*u == ' ' || *u == '\t') u++;
  uint64_t mult = 1;
  *bare = *u == '\0';
  if (!*bare) {
    const Unit *x = units;
    while (x->name && strcmp(x->name, u) != 0) x++;
    if (!x->name) return SC_SYNTAX;
    mult = x->mult;
  }
  while (nf > 0 && fp[nf - 1] == '0') nf--;
  if (nf > 64) return SC_FRACTION; /* no unit has 2^64 or 5^64 in it */
  u128 m = 0;
  for (size_t i = 0; i < ni + nf; i++) {
    unsigned d = (unsigned)((i < ni ? ip[i] : fp[i - ni]) - '0');
    if (m > (((u128)-1) - d) / 10) return SC_OVERFLOW;
    m = m * 10 + d;
  }
  if (m == 0) {
    *out = 0;
    return SC_OK;
  }
  /* m * mult / 10^nf must be whole: enough 2s and 5s between m and mult */
  if (factors(m, 2) + factors(mult, 2) < nf || factors(m, 5) + factors(mult, 5) < nf)
    return SC_FRACTION;
  for (size_t i = 0; i < nf; i++) {
    if (mult % 2 == 0) mult /= 2;
    else m /= 2;
    if (mult % 5 == 0) mult /= 5;
    else m /= 5;
  }
  if (m > UINT64_MAX / mult) return SC_OVERFLOW;
  *out = (uint64_t)m * mult;
  return SC_OK;
}

#define RATE_UNITS "bps, Kbps, Mbps, Gbps, Tbps, B/s, KB/s, MB/s, GB/s, TB/s"
#define RATE_EXPECT "expected a number with a unit: " RATE_UNITS ", e.g. 100Gbps"
#define TIME_EXPECT "expected a number with a unit: ps, ns, us, ms, s, e.g. 600ns; only 0 may go without a unit"
#define SIZE_EXPECT "expected a number of bytes, or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, e.g. 4096 or 64KiB"

static gboolean negative(const char *s);

gboolean fab_parse_rate(const char *s, uint64_t *bps, GError **err) {
  uint64_t v = 0;
  if (negative(s)) return fab_cfg__bad_value(err, s, "is negative (expected a rate above 0, e.g. 100Gbps)");
  gboolean bare = FALSE;
  int rc = scale_decimal(s, rate_units, &v, &bare);
  if (rc == SC_SYNTAX) return fab_cfg__bad_value(err, s, "is not a rate (" RATE_EXPECT ")");
  if (bare) return fab_cfg__bad_value(err, s, "is not a rate: it has no unit (" RATE_EXPECT ")");
  if (rc == SC_FRACTION) return fab_cfg__bad_value(err, s, "is not a whole number of bits per second");
  if (rc == SC_OVERFLOW) return fab_cfg__bad_value(err, s, "is too large (a rate must be below 2^64 bps)");
  if (v == 0) return fab_cfg__bad_value(err, s, "is not a valid rate (expected a rate above 0, e.g. 100Gbps)");
  *bps = v;
  return TRUE;
}

/* A leading minus sign, after blanks. */
static gboolean negative(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return *s == '-';
}

gboolean fab_parse_time(const char *s, uint64_t *ps, GError **err) {
  uint64_t v = 0;
  if (negative(s)) return fab_cfg__bad_value(err, s, "is negative (expected a time >= 0, e.g. 600ns)");
  gboolean bare = FALSE;
  int rc = scale_decimal(s, time_units, &v, &bare);
  if (rc == SC_SYNTAX) return fab_cfg__bad_value(err, s, "is not a time (" TIME_EXPECT ")");
  if (bare && (rc != SC_OK || v != 0))
    return fab_cfg__bad_value(err, s, "is not a time: it has no unit (" TIME_EXPECT ")");
  if (rc == SC_FRACTION) return fab_cfg__bad_value(err, s, "is not a whole number of picoseconds");
  if (rc == SC_OVERFLOW)
    return fab_cfg__bad_value(err, s, "is too large (a time must be below 2^64 ps, about 213 days)");
  *ps = v;
  return TRUE;
}

gboolean fab_parse_size(const char *s, uint64_t *bytes, GError **err) {
  uint64_t v = 0;
  gboolean bare = FALSE;
  if (negative(s)) return fab_cfg__bad_value(err, s, "is negative (expected a size >= 0, e.g. 4096 or 64KiB)");
  switch (scale_decimal(s, size_units, &v, &bare)) {
  case SC_SYNTAX: return fab_cfg__bad_value(err, s, "is not a size (" SIZE_EXPECT ")");
  case SC_FRACTION: return fab_cfg__bad_value(err, s, "is not a whole number of bytes");
  case SC_OVERFLOW: return fab_cfg__bad_value(err, s, "is too large (a size must be below 2^64 bytes)");
  default: break;
  }
  *bytes = v;
  return TRUE;
}

/* A finite number, the whole string, no leading blanks; locale-independent. */
static gboolean strict_double(const char *s, double *v) {
  if (!s || !*s || g_ascii_isspace(*s)) return FALSE;
  char *end = NULL;
  errno = 0;
  double d = g_ascii_strtod(s, &end);
  if (*end != '\0' || errno == ERANGE || !isfinite(d)) return FALSE;
  *v = d;
  return TRUE;
}

gboolean fab_parse_double(const char *s, double *v, GError **err) {
  if (!strict_double(s, v))
    return fab_cfg__bad_value(err, s, "is not a number (expected a finite number, e.g. 0.5 or 1e-3)");
  return TRUE;
}

#define RATIO_EXPECT "expected N:M with N, M > 0, e.g. 2:1, or a number above 0, e.g. 1.5"

gboolean fab_parse_ratio(const char *s, double *r, GError **err) {
  double v = 0;
  const char *colon = s ? strchr(s, ':') : NULL;
  if (colon) {
    char *a = g_strstrip(g_strndup(s, (size_t)(colon - s)));
    char *b = g_strstrip(g_strdup(colon + 1));
    double n = 0, m = 0;
    gboolean ok = strict_double(a, &n) && strict_double(b, &m) && n > 0 && m > 0;
    g_free(a);
    g_free(b);
    if (!ok || !isfinite(n / m)) return fab_cfg__bad_value(err, s, "is not a ratio (" RATIO_EXPECT ")");
    v = n / m;
  } else if (!strict_double(s, &v) || !(v > 0)) {
    return fab_cfg__bad_value(err, s, "is not a ratio (" RATIO_EXPECT ")");
  }
  *r = v;
  return TRUE;
}

gboolean fab_parse_prob(const char *s, double *p, GError **err) {
  double v = 0;
  size_t n = s ? strlen(s) : 0;
  gboolean ok;
  if (n > 0 && s[n - 1] == '%') {
    char *num = g_strndup(s, n - 1);
    g_strchomp(num);
    ok = strict_double(num, &v) && v >= 0 && v <= 100;
    g_free(num);
    v /= 100;
  } else {
    ok = strict_double(s, &v) && v >= 0 && v <= 1;
  }
  if (!ok)
    return fab_cfg__bad_value(err, s,
                     "is not a probability (expected a number from 0 to 1 or a percentage "
                     "from 0%% to 100%%, e.g. 0.2 or 1%%)");
  *p = v;
  return TRUE;
}

gboolean fab_parse_bool(const char *s, gboolean *b, GError **err) {
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  for (int i = 0; s && i < 3; i++) {
    if (g_ascii_strcasecmp(s, yes[i]) == 0) return *b = TRUE, TRUE;
    if (g_ascii_strcasecmp(s, no[i]) == 0) return *b = FALSE, TRUE;
  }
  return fab_cfg__bad_value(err, s, "is not a boolean (expected true/false, yes/no or on/off)");
}

/* Optional sign then decimal digits; *neg tells the sign, *mag the magnitude.
** FALSE on syntax; *over on a magnitude beyond 2^64-1. */
static gboolean int_text(const char *s, gboolean *neg, uint64_t *mag, gboolean *over) {
  const char *p = s;
  *neg = FALSE;
  *over = FALSE;
  if (!p) return FALSE;
  if (*p == '+' || *p == '-') *neg = *p++ == '-';
  if (!g_ascii_isdigit(*p)) return FALSE;
  uint64_t v = 0;
  for (; g_ascii_isdigit(*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) *over = TRUE;
    else v = v * 10 + d;
  }
  *mag = v;
  return *p == '\0';
}

gboolean fab_parse_int(const char *s, int64_t *v, GError **err) {
  gboolean neg, over;
  uint64_t m = 0;
  if (!int_text(s, &neg, &m, &over))
    return fab_cfg__bad_value(err, s, "is not an integer (expected a whole number, e.g. 8 or -3)");
  if (over || (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX))
    return fab_cfg__bad_value(err, s, "is out of range (expected an integer from %" PRId64 " to %" PRId64 ")",
                     INT64_MIN, INT64_MAX);
  *v = neg ? (int64_t)(0 - m) : (int64_t)m;
  return TRUE;
}

gboolean fab_cfg__parse_uint(const char *s, uint64_t *v, GError **err) {
  gboolean neg, over;
  uint64_t m = 0;
  if (!int_text(s, &neg, &m, &over))
    return fab_cfg__bad_value(err, s, "is not a whole number (expected an integer >= 0, e.g. 8)");
  if (neg && m != 0)
    return fab_cfg__bad_value(err, s, "is negative (expected an integer >= 0, e.g. 8)");
  if (over)
    return fab_cfg__bad_value(err, s, "is out of range (expected an integer from 0 to %" PRIu64 ")",
                     UINT64_MAX);
  *v = m;
  return TRUE;
}

/* ---- formatting values for messages ------------------------------------ */

/* v in the largest power-of-ten unit not above it, exactly: 2500000000 ps
** -> "2.5ms". units: ascending, decimal multipliers only. */
static char *fmt_decimal(uint64_t v, const char *const *names, const uint64_t *mults, int n) {
  int u = 0;
  while (u + 1 < n && v >= mults[u + 1]) u++;
  uint64_t q = v / mults[u], r = v % mults[u];
  if (!r) return g_strdup_printf("%" PRIu64 "%s", q, names[u]);
  int digits = 0;
  for (uint64_t m = mults[u]; m > 1; m /= 10) digits++;
  char frac[32];
  g_snprintf(frac, sizeof frac, "%0*" PRIu64, digits, r);
  for (int i = digits - 1; i > 0 && frac[i] == '0'; i--) frac[i] = '\0';
  return g_strdup_printf("%" PRIu64 ".%s%s", q, frac, names[u]);
}

char *fab_cfg__fmt_rate(uint64_t v) {
  static const char *const n[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}

char *fab_cfg__fmt_time(uint64_t v) {
  static const char *const n[] = {"ps", "ns", "us", "ms", "s"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}

char *fab_cfg__fmt_size(uint64_t v) {
  static const char *const bn[] = {"KiB", "MiB", "GiB", "TiB"};
  if (v && v % 1024 == 0) {
    int u = 0;
    while (u < 3 && v % (1ULL << (10 * (u + 2))) == 0) u++;
    return g_strdup_printf("%" PRIu64 "%s", v >> (10 * (u + 1)), bn[u]);
  }
  static const char *const n[] = {"B", "KB", "MB", "GB", "TB"};
  static const uint64_t m[] = {1, 1000ULL, 1000000ULL, 1000000000ULL, 1000000000000ULL};
  return fmt_decimal(v, n, m, 5);
}
