/* One pass over a chunk of Kineto's event array, "[{...}, {...}, ...]", writing the fields
 * stepscope reads (schema.py's Event and Args) as columns: a value, a string id and a type
 * tag per field per event, and each event's byte span.
 *
 * It is an accelerator, never a second reader: it accepts a chunk only when it is sure
 * that msgspec's typed decode (schema.py) would accept it and produce the same values, and
 * declines (returns -1) on anything else - a syntax error, a value of an unexpected type,
 * an integer beyond int64, a duplicate key, bad UTF-8, an escaped key, a surrogate escape,
 * nesting deeper than 64. The caller then decodes that chunk the Python way (reader.py).
 * Strings are not unescaped here: each distinct byte string gets an id and its bytes'
 * offset; Python decodes each distinct one once (scan.py).
 *
 * Built by scripts/build_native.sh (setup.sh, the wheel hook) into _scan.so, loaded with
 * ctypes; without it the reader is the same, only slower.
 */
#define _DEFAULT_SOURCE /* posix_memalign, madvise */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h> /* baseline on x86-64: no -march needed */
#endif

/* field ids: keep in step with FIELDS in scan.py */
enum {
    F_PH, F_CAT, F_NAME, F_TS, F_DUR, F_PID, F_TID, F_ARGS,
    A_EXT, A_EXT_LC, A_CORR, A_STREAM, A_DEVICE, A_PER_SM, A_OCC, A_GRID, A_BLOCK,
    A_REGS, A_SHMEM, A_BYTES, A_DIMS, A_DIMS_LC, A_TYPES, A_CONCRETE, A_STRIDES, A_STACK,
    A_DEVTYPE, A_DEVID, A_MEMBYTES, A_ADDR, A_TOTAL_ALLOC, A_TOTAL_RES, A_COLL, A_IN_N,
    A_OUT_N, A_GROUP, A_DTYPE, A_PG, A_SEQ, A_IN_SPLIT, A_OUT_SPLIT, A_PG_RANKS,
    N_FIELDS
};

/* tags: what the field held */
enum { T_ABSENT = 0, T_NULL = 1, T_INT = 2, T_STR = 3, T_FLOAT = 4, T_LIST = 5, T_RAW = 6,
       T_OBJ = 7 };

/* what a field accepts (msgspec's type for it) */
#define K_INT 1    /* int */
#define K_NUM 2    /* float: an integer or a number token */
#define K_STR 4    /* str */
#define K_NULL 8   /* ... | None */
#define K_RAW 16   /* msgspec.Raw: any value, kept as its bytes */
#define K_LIST 32  /* list[int] */
#define K_OBJ 64   /* Args (only "args") */

typedef struct { const char *key; int field; int accepts; int64_t dflt; } FieldDef;

#define NAN_BITS INT64_C(0x7ff8000000000000)

static const FieldDef EVENT_FIELDS[] = {
    {"ph", F_PH, K_STR, 0}, {"cat", F_CAT, K_STR, 0}, {"name", F_NAME, K_STR, 0},
    {"ts", F_TS, K_NUM, NAN_BITS}, {"dur", F_DUR, K_NUM, NAN_BITS},
    {"pid", F_PID, K_INT | K_STR, -1}, {"tid", F_TID, K_INT | K_STR, -1},
    {"args", F_ARGS, K_OBJ | K_NULL, 0},
};
static const FieldDef ARGS_FIELDS[] = {
    {"External id", A_EXT, K_INT, -1}, {"external id", A_EXT_LC, K_INT, -1},
    {"correlation", A_CORR, K_INT, -1}, {"stream", A_STREAM, K_INT | K_STR, -1},
    {"device", A_DEVICE, K_INT, -1}, {"blocks per SM", A_PER_SM, K_NUM, NAN_BITS},
    {"est. achieved occupancy %", A_OCC, K_NUM, NAN_BITS},
    {"grid", A_GRID, K_LIST | K_STR | K_NULL, 0}, {"block", A_BLOCK, K_LIST | K_STR | K_NULL, 0},
    {"registers per thread", A_REGS, K_INT, -1}, {"shared memory", A_SHMEM, K_INT, -1},
    {"bytes", A_BYTES, K_INT | K_STR, -1}, {"Input Dims", A_DIMS, K_RAW, 0},
    {"Input dims", A_DIMS_LC, K_RAW, 0}, {"Input type", A_TYPES, K_RAW, 0},
    {"Concrete Inputs", A_CONCRETE, K_RAW, 0}, {"Input Strides", A_STRIDES, K_RAW, 0},
    {"Call stack", A_STACK, K_STR | K_NULL, 0}, {"Device Type", A_DEVTYPE, K_INT, -1},
    {"Device Id", A_DEVID, K_INT, -1}, {"Bytes", A_MEMBYTES, K_INT, 0},
    {"Addr", A_ADDR, K_INT, -1}, {"Total Allocated", A_TOTAL_ALLOC, K_INT, -1},
    {"Total Reserved", A_TOTAL_RES, K_INT, -1}, {"Collective name", A_COLL, K_STR | K_NULL, 0},
    {"In msg nelems", A_IN_N, K_INT, -1}, {"Out msg nelems", A_OUT_N, K_INT, -1},
    {"Group size", A_GROUP, K_INT, -1}, {"dtype", A_DTYPE, K_STR | K_NULL, 0},
    {"Process Group Name", A_PG, K_INT | K_STR | K_NULL, 0}, {"Seq", A_SEQ, K_INT | K_STR, -1},
    {"In split size", A_IN_SPLIT, K_RAW, 0}, {"Out split size", A_OUT_SPLIT, K_RAW, 0},
    {"Process Group Ranks", A_PG_RANKS, K_RAW, 0},
};
#define N_EVENT_FIELDS (sizeof(EVENT_FIELDS) / sizeof(EVENT_FIELDS[0]))
#define N_ARGS_FIELDS (sizeof(ARGS_FIELDS) / sizeof(ARGS_FIELDS[0]))

#define MAX_DEPTH 64

typedef struct {
    int64_t n, cap;
    int64_t *span;            /* 2 per event: [start, end) of the object */
    int8_t *tag[N_FIELDS];
    int64_t *val[N_FIELDS];   /* ints; K_NUM fields hold the double's bits */
    int32_t *sid[N_FIELDS];   /* string ids (str, raw), -1 when none */
    int64_t *list3[2];        /* grid, block: the first 3 ints (-1 beyond the list) */
    /* distinct strings: (offset, length, flags) each; flags 1: has a backslash escape,
       2: has non-ASCII bytes */
    int64_t nstr, strcap;
    int64_t *str;
    int32_t *slots;           /* open-addressing table of string ids, -1 empty */
    uint64_t *hashes;
    int64_t nslots;
    const unsigned char *buf;
    void *block;              /* every column above, in one allocation (grow_events) */
    int64_t fields_defaults[N_FIELDS];
    int32_t last[N_FIELDS];   /* the id each field interned last (-1: none yet) */
    int failed;               /* allocation failure */
} Scan;

typedef struct {
    const unsigned char *p, *end, *base;
    Scan *s;
    int depth;
} Parser;

/* Every column of cap events in one block, each column's n events copied over. One
 * block, asked for in huge pages (Linux): an event writes ~45 cells in ~130 columns, and
 * as ~130 arrays of 4 KB pages they missed the TLB on most of them. */
static int grow_events(Scan *s, int64_t want) {
    int64_t cap = s->cap ? s->cap * 2 : 4096;
    if (cap < want) cap = want;
    size_t per_event = 2 * sizeof(int64_t) + N_FIELDS * (1 + sizeof(int64_t) + sizeof(int32_t))
                       + 2 * 3 * sizeof(int64_t);
    size_t big = (size_t)2 << 20, bytes = ((size_t)cap * per_event + big - 1) / big * big;
    void *block = NULL;
    if (posix_memalign(&block, big, bytes)) return -1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(block, bytes, MADV_HUGEPAGE);
#endif
    /* the widest columns first: every column stays aligned to its element */
    unsigned char *at = block;
    size_t keep = (size_t)s->n;
    int64_t *span = (int64_t *)(void *)at;
    at += (size_t)cap * 2 * sizeof(int64_t);
    if (keep) memcpy(span, s->span, keep * 2 * sizeof(int64_t));
    s->span = span;
    for (int k = 0; k < 2; k++) {
        int64_t *l = (int64_t *)(void *)at;
        at += (size_t)cap * 3 * sizeof(int64_t);
        if (keep) memcpy(l, s->list3[k], keep * 3 * sizeof(int64_t));
        s->list3[k] = l;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        int64_t *v = (int64_t *)(void *)at;
        at += (size_t)cap * sizeof(int64_t);
        if (keep) memcpy(v, s->val[f], keep * sizeof(int64_t));
        s->val[f] = v;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        int32_t *d = (int32_t *)(void *)at;
        at += (size_t)cap * sizeof(int32_t);
        if (keep) memcpy(d, s->sid[f], keep * sizeof(int32_t));
        s->sid[f] = d;
    }
    for (int f = 0; f < N_FIELDS; f++) {
        int8_t *t = (int8_t *)(void *)at;
        at += (size_t)cap;
        if (keep) memcpy(t, s->tag[f], keep);
        memset(t + keep, T_ABSENT, (size_t)cap - keep);
        s->tag[f] = t;
    }
    free(s->block);
    s->block = block;
    s->cap = cap;
    return 0;
}

static uint64_t hash_bytes(const unsigned char *p, int64_t n) {
    uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)n;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * UINT64_C(0xFF51AFD7ED558CCD);
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (i < n) memcpy(&w, p + i, (size_t)(n - i));
    h = (h ^ w) * UINT64_C(0xC4CEB9FE1A85EC53);
    return h ^ (h >> 29);
}

static int rehash(Scan *s) {
    int64_t nslots = s->nslots ? s->nslots * 2 : 4096;
    int32_t *slots = malloc((size_t)nslots * sizeof(int32_t));
    if (!slots) return -1;
    for (int64_t i = 0; i < nslots; i++) slots[i] = -1;
    for (int64_t id = 0; id < s->nstr; id++) {
        uint64_t i = s->hashes[id] & (uint64_t)(nslots - 1);
        while (slots[i] >= 0) i = (i + 1) & (uint64_t)(nslots - 1);
        slots[i] = (int32_t)id;
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = nslots;
    return 0;
}

/* whether a[0:n] == b[0:n]: word by word inline for the short strings that dominate
 * (names, categories, ids), where a call to memcmp costs more than the comparison */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, int64_t n) {
    if (n > 64) return memcmp(a, b, (size_t)n) == 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    for (; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* the id of bytes [off, off + n) of the chunk, added when new */
static int32_t intern(Scan *s, int64_t off, int64_t n, int flags) {
    if ((s->nstr + 1) * 2 > s->nslots && rehash(s)) return -2;
    const unsigned char *p = s->buf + off;
    uint64_t h = hash_bytes(p, n);
    uint64_t i = h & (uint64_t)(s->nslots - 1);
    for (;;) {
        int32_t id = s->slots[i];
        if (id < 0) break;
        if (s->hashes[id] == h && s->str[3 * id + 1] == n &&
            same_bytes(s->buf + s->str[3 * id], p, n))
            return id;
        i = (i + 1) & (uint64_t)(s->nslots - 1);
    }
    if (s->nstr == s->strcap) {
        int64_t cap = s->strcap ? s->strcap * 2 : 1024;
        int64_t *str = realloc(s->str, (size_t)cap * 3 * sizeof(int64_t));
        if (!str) return -2;
        s->str = str;
        uint64_t *hashes = realloc(s->hashes, (size_t)cap * sizeof(uint64_t));
        if (!hashes) return -2;
        s->hashes = hashes;
        s->strcap = cap;
    }
    int32_t id = (int32_t)s->nstr++;
    s->str[3 * id] = off;
    s->str[3 * id + 1] = n;
    s->str[3 * id + 2] = flags;
    s->hashes[id] = h;
    s->slots[i] = id;
    return id;
}

static inline void skip_ws(Parser *ps) {
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at ps->p (its opening quote): validated (escapes, strict UTF-8, no control
 * characters); sets [*start, *start + *n) to its bytes between the quotes, and *flags. */
static int parse_string(Parser *ps, int64_t *start, int64_t *n, int *flags) {
    const unsigned char *p = ps->p + 1, *end = ps->end;
    int fl = 0;
    *start = p - ps->base;
    while (p < end) {
#if defined(__SSE2__)
        /* sixteen plain bytes at a time: as signed bytes, control characters (< 0x20) and
           non-ASCII bytes (>= 0x80, negative) are both below 0x20 */
        while (p + 16 <= end) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i stop = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            int mask = _mm_movemask_epi8(stop);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                break;
            }
            p += 16;
        }
#endif
        /* eight plain bytes at a time: no quote, backslash, control or non-ASCII byte */
        while (p + 8 <= end) {
            uint64_t w;
            memcpy(&w, p, 8);
            const uint64_t ones = UINT64_C(0x0101010101010101), high = ones * 0x80;
            uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
            uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w;
            if (special & high) break;
            p += 8;
        }
        if (p >= end) break;
        unsigned char c = *p;
        if (c == '"') {
            *n = (p - ps->base) - *start;
            *flags = fl;
            ps->p = p + 1;
            return 0;
        }
        if (c == '\\') {
            fl |= 1;
            if (p + 1 >= end) return -1;
            unsigned char e = p[1];
            if (e == 'u') {
                if (p + 6 > end) return -1;
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hexval(p[k]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                p += 6;
                if (v >= 0xDC00 && v <= 0xDFFF) return -1; /* a lone low surrogate */
                if (v >= 0xD800 && v <= 0xDBFF) { /* a pair (json.dumps writes non-BMP so) */
                    if (p + 6 > end || p[0] != '\\' || p[1] != 'u') return -1;
                    int w = 0;
                    for (int k = 2; k < 6; k++) {
                        int h = hexval(p[k]);
                        if (h < 0) return -1;
                        w = w * 16 + h;
                    }
                    if (w < 0xDC00 || w > 0xDFFF) return -1;
                    p += 6;
                }
                continue;
            }
            if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                  e == 'r' || e == 't'))
                return -1;
            p += 2;
            continue;
        }
        if (c < 0x20) return -1;
        if (c < 0x80) { p++; continue; }
        /* strict UTF-8 (as Python's decoder): no overlong forms, surrogates or > U+10FFFF */
        fl |= 2;
        int need;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c == 0xE0) { need = 2; lo = 0xA0; }
        else if (c >= 0xE1 && c <= 0xEC) need = 2;
        else if (c == 0xED) { need = 2; hi = 0x9F; }
        else if (c >= 0xEE && c <= 0xEF) need = 2;
        else if (c == 0xF0) { need = 3; lo = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) need = 3;
        else if (c == 0xF4) { need = 3; hi = 0x8F; }
        else return -1;
        if (p + need >= end) return -1;
        if (p[1] < lo || p[1] > hi) return -1;
        for (int k = 2; k <= need; k++)
            if (p[k] < 0x80 || p[k] > 0xBF) return -1;
        p += need + 1;
    }
    return -1;
}

/* A JSON number at ps->p: is_int when it has no fraction or exponent. */
static int scan_number(Parser *ps, const unsigned char **start, int *is_int) {
    const unsigned char *p = ps->p, *end = ps->end;
    *start = p;
    *is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < end && *p >= '0' && *p <= '9') p++; }
    else return -1;
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    ps->p = p;
    return 0;
}

/* an integer token's value; -1 when it does not fit an int64 */
static int int_value(const unsigned char *p, const unsigned char *end, int64_t *out) {
    int neg = 0;
    if (*p == '-') { neg = 1; p++; }
    uint64_t v = 0;
    if (end - p <= 18) { /* below 10^18: no overflow to check (timestamps have 16 digits) */
        for (; p < end; p++) v = v * 10 + (uint64_t)(*p - '0');
        *out = neg ? -(int64_t)v : (int64_t)v;
        return 0;
    }
    for (; p < end; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_C(9223372036854775808) - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (!neg && v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* a number token as a double, as msgspec decodes it into a float field */
static int num_value(const unsigned char *p, const unsigned char *end, int is_int,
                     double *out) {
    if (is_int) {
        int64_t v;
        /* exact below 2**53; larger integers are left to Python */
        if (int_value(p, end, &v) || v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53))
            return -1;
        *out = (double)v;
        return 0;
    }
    char tmp[64];
    size_t n = (size_t)(end - p);
    if (n >= sizeof(tmp)) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    char *stop;
    errno = 0;
    double d = strtod(tmp, &stop);
    if (stop != tmp + n || errno == ERANGE || !isfinite(d)) return -1;
    *out = d;
    return 0;
}

static int skip_value(Parser *ps);

static int skip_container(Parser *ps, unsigned char close) {
    if (++ps->depth > MAX_DEPTH) return -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return 0; }
    for (;;) {
        if (close == '}') {
            int64_t st, n;
            int fl;
            if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &st, &n, &fl)) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return -1;
            ps->p++;
            skip_ws(ps);
        }
        if (skip_value(ps)) return -1;
        skip_ws(ps);
        if (ps->p >= ps->end) return -1;
        if (*ps->p == ',') { ps->p++; skip_ws(ps); continue; }
        if (*ps->p == close) { ps->p++; ps->depth--; return 0; }
        return -1;
    }
}

static int literal(Parser *ps, const char *word, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n)) return -1;
    ps->p += n;
    return 0;
}

/* validate and step over any value */
static int skip_value(Parser *ps) {
    if (ps->p >= ps->end) return -1;
    unsigned char c = *ps->p;
    int64_t st, n;
    int fl, is_int;
    const unsigned char *num;
    switch (c) {
    case '"': return parse_string(ps, &st, &n, &fl);
    case '{': return skip_container(ps, '}');
    case '[': return skip_container(ps, ']');
    case 't': return literal(ps, "true", 4);
    case 'f': return literal(ps, "false", 5);
    case 'n': return literal(ps, "null", 4);
    default: return scan_number(ps, &num, &is_int);
    }
}

/* list[int] (grid, block): its first three values (-1 beyond its end) */
static int parse_int_list(Parser *ps, int k, int64_t i) {
    int64_t *three = ps->s->list3[k] + 3 * i, count = 0;
    three[0] = three[1] = three[2] = -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') { ps->p++; return 0; }
    for (;;) {
        const unsigned char *num;
        int is_int;
        int64_t v;
        if (ps->p >= ps->end || !(*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))) return -1;
        if (scan_number(ps, &num, &is_int) || !is_int || int_value(num, ps->p, &v)) return -1;
        if (count < 3) three[count] = v;
        count++;
        skip_ws(ps);
        if (ps->p >= ps->end) return -1;
        if (*ps->p == ',') { ps->p++; skip_ws(ps); continue; }
        if (*ps->p == ']') { ps->p++; return 0; }
        return -1;
    }
}

/* Keys bucketed by length (at most a few per length): one memcmp per candidate. */
#define MAX_KEY 32
#define MAX_SAME_LEN 8
typedef struct { const FieldDef *defs[MAX_KEY][MAX_SAME_LEN]; int count[MAX_KEY]; } KeyIndex;
static KeyIndex EVENT_KEYS, ARGS_KEYS;

/* intern for field f: events in a row mostly repeat a field's value (the phase, the
 * category, the process and thread, often the input types), so the value the field
 * interned last is compared first, without hashing */
static int32_t intern_field(Scan *s, int f, int64_t off, int64_t n, int flags) {
    int32_t last = s->last[f];
    if (last >= 0 && s->str[3 * last + 1] == n &&
        same_bytes(s->buf + s->str[3 * last], s->buf + off, n))
        return last;
    int32_t id = intern(s, off, n, flags);
    if (id >= 0) s->last[f] = id;
    return id;
}

static void index_keys(KeyIndex *ix, const FieldDef *defs, size_t ndefs) {
    memset(ix, 0, sizeof(*ix));
    for (size_t k = 0; k < ndefs; k++) {
        size_t n = strlen(defs[k].key);
        ix->defs[n][ix->count[n]++] = &defs[k];
    }
}

static const FieldDef *lookup(const KeyIndex *ix, const unsigned char *key, int64_t n) {
    if (n >= MAX_KEY) return NULL;
    for (int k = 0; k < ix->count[n]; k++)
        if (same_bytes((const unsigned char *)ix->defs[n][k]->key, key, n))
            return ix->defs[n][k];
    return NULL;
}

static int parse_object(Parser *ps, const FieldDef *defs, const KeyIndex *ix, int64_t i);

/* the value of a known field, checked against what it accepts */
static int parse_field(Parser *ps, const FieldDef *d, int64_t i) {
    Scan *s = ps->s;
    int f = d->field, acc = d->accepts;
    s->sid[f][i] = -1; /* a string id only for a string (or raw text, or a pid/tid) */
    if (ps->p >= ps->end) return -1;
    unsigned char c = *ps->p;
    if (acc & K_RAW) {
        const unsigned char *st = ps->p;
        if (skip_value(ps)) return -1;
        int32_t id = intern_field(s, f, st - ps->base, ps->p - st, 0);
        if (id < -1) { s->failed = 1; return -1; }
        s->tag[f][i] = T_RAW;
        s->sid[f][i] = id;
        return 0;
    }
    if (c == '"') {
        if (!(acc & K_STR)) return -1;
        int64_t st, n;
        int fl;
        if (parse_string(ps, &st, &n, &fl)) return -1;
        int32_t id = intern_field(s, f, st, n, fl);
        if (id < -1) { s->failed = 1; return -1; }
        s->tag[f][i] = T_STR;
        s->sid[f][i] = id;
        return 0;
    }
    if (c == 'n') {
        if (!(acc & K_NULL) || literal(ps, "null", 4)) return -1;
        s->tag[f][i] = T_NULL;
        return 0;
    }
    if (c == '{') {
        if (!(acc & K_OBJ)) return -1;
        s->tag[f][i] = T_OBJ;
        return parse_object(ps, ARGS_FIELDS, &ARGS_KEYS, i);
    }
    if (c == '[') {
        if (!(acc & K_LIST)) return -1;
        s->tag[f][i] = T_LIST;
        return parse_int_list(ps, f == A_GRID ? 0 : 1, i);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        const unsigned char *num;
        int is_int;
        if (scan_number(ps, &num, &is_int)) return -1;
        if (acc & K_NUM) {
            double d;
            if (num_value(num, ps->p, is_int, &d)) return -1;
            memcpy(&s->val[f][i], &d, sizeof(d));
            s->tag[f][i] = T_FLOAT;
            return 0;
        }
        if (!(acc & K_INT) || !is_int || int_value(num, ps->p, &s->val[f][i])) return -1;
        s->tag[f][i] = T_INT;
        if (f == F_PID || f == F_TID) { /* pid/tid: their text is interned too (scanned.py) */
            int32_t id = intern_field(s, f, num - ps->base, ps->p - num, 0);
            if (id < -1) { s->failed = 1; return -1; }
            s->sid[f][i] = id;
        }
        return 0;
    }
    return -1; /* true, false, or a type the field does not take */
}

/* an Event (or its Args) object at ps->p; unknown keys are validated and skipped */
static int parse_object(Parser *ps, const FieldDef *defs, const KeyIndex *ix, int64_t i) {
    if (++ps->depth > MAX_DEPTH) return -1;
    uint64_t seen = 0;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') { ps->p++; ps->depth--; return 0; }
    for (;;) {
        int64_t st, n;
        int fl;
        if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &st, &n, &fl)) return -1;
        const FieldDef *d = NULL;
        if (fl & 1) return -1; /* an escaped key: msgspec's matching is left to Python */
        d = lookup(ix, ps->base + st, n);
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return -1;
        ps->p++;
        skip_ws(ps);
        if (d) {
            uint64_t bit = UINT64_C(1) << (d - defs);
            if (seen & bit) return -1; /* a duplicate key: left to Python */
            seen |= bit;
            if (parse_field(ps, d, i)) return -1;
        } else if (skip_value(ps)) {
            return -1;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) return -1;
        if (*ps->p == ',') { ps->p++; skip_ws(ps); continue; }
        if (*ps->p == '}') { ps->p++; ps->depth--; return 0; }
        return -1;
    }
}

/* Absent fields' defaults, field by field once the chunk is parsed: writing them event by
 * event touched ~130 arrays per event and cost a third of the scan. */
static void fill_defaults(Scan *s, int32_t empty) {
    for (int f = 0; f < N_FIELDS; f++) {
        int8_t *tag = s->tag[f];
        int64_t *val = s->val[f], dflt = s->fields_defaults[f];
        int32_t *sid = s->sid[f];
        int32_t absent_sid = (f == F_PH || f == F_CAT || f == F_NAME) ? empty : -1;
        for (int64_t i = 0; i < s->n; i++) {
            if (tag[i] == T_ABSENT) { val[i] = dflt; sid[i] = absent_sid; }
        }
    }
    for (int k = 0; k < 2; k++) {
        int8_t *tag = s->tag[k ? A_BLOCK : A_GRID];
        for (int64_t i = 0; i < s->n; i++)
            if (tag[i] != T_LIST)
                s->list3[k][3 * i] = s->list3[k][3 * i + 1] = s->list3[k][3 * i + 2] = -1;
    }
}

Scan *ks_new(void) {
    Scan *s = calloc(1, sizeof(Scan));
    if (!s) return NULL;
    for (size_t k = 0; k < N_EVENT_FIELDS; k++)
        s->fields_defaults[EVENT_FIELDS[k].field] = EVENT_FIELDS[k].dflt;
    for (size_t k = 0; k < N_ARGS_FIELDS; k++)
        s->fields_defaults[ARGS_FIELDS[k].field] = ARGS_FIELDS[k].dflt;
    index_keys(&EVENT_KEYS, EVENT_FIELDS, N_EVENT_FIELDS);  /* idempotent */
    index_keys(&ARGS_KEYS, ARGS_FIELDS, N_ARGS_FIELDS);
    return s;
}

void ks_free(Scan *s) {
    if (!s) return;
    free(s->block);
    free(s->str);
    free(s->slots);
    free(s->hashes);
    free(s);
}

/* Scan "[ event, ... ]" in buf[0:len): the number of events, -1 to decline, -2 when out of
 * memory. Results stay valid until the next ks_scan or ks_free. */
int64_t ks_scan(Scan *s, const unsigned char *buf, int64_t len) {
    s->n = 0;
    s->nstr = 0;
    s->failed = 0;
    if (s->slots)
        for (int64_t k = 0; k < s->nslots; k++) s->slots[k] = -1;
    s->buf = buf;
    for (int f = 0; f < N_FIELDS; f++) s->last[f] = -1;
    /* Kineto's events are ~200-400 bytes: reserve for the chunk at once */
    if (s->cap < len / 256 && grow_events(s, len / 256)) return -2;
    if (s->cap)
        for (int f = 0; f < N_FIELDS; f++) memset(s->tag[f], T_ABSENT, (size_t)s->cap);
    Parser ps = {buf, buf + len, buf, s, 0};
    /* the empty string first: the id of absent ph/cat/name (schema.py defaults them to "") */
    int32_t empty = intern(s, 0, 0, 0);
    if (empty < 0) return -2;
    skip_ws(&ps);
    if (ps.p >= ps.end || *ps.p != '[') return -1;
    ps.p++;
    skip_ws(&ps);
    if (ps.p < ps.end && *ps.p == ']') {
        ps.p++;
    } else {
        for (;;) {
            if (ps.p >= ps.end || *ps.p != '{') return -1; /* not an object: Python repairs */
            if (s->n == s->cap && grow_events(s, 0)) return -2;
            int64_t i = s->n;
            s->span[2 * i] = ps.p - buf;
            if (parse_object(&ps, EVENT_FIELDS, &EVENT_KEYS, i))
                return s->failed ? -2 : -1;
            s->span[2 * i + 1] = ps.p - buf;
            s->n++;
            skip_ws(&ps);
            if (ps.p >= ps.end) return -1;
            if (*ps.p == ',') { ps.p++; skip_ws(&ps); continue; }
            if (*ps.p == ']') { ps.p++; break; }
            return -1;
        }
    }
    skip_ws(&ps);
    if (ps.p != ps.end) return -1;
    fill_defaults(s, empty);
    return s->n;
}

/* accessors (ctypes reads the arrays through these pointers) */
int8_t *ks_tag(Scan *s, int f) { return s->tag[f]; }
int64_t *ks_val(Scan *s, int f) { return s->val[f]; }
int32_t *ks_sid(Scan *s, int f) { return s->sid[f]; }
int64_t *ks_span(Scan *s) { return s->span; }
int64_t *ks_list3(Scan *s, int k) { return s->list3[k]; }
int64_t *ks_strings(Scan *s, int64_t *count) { *count = s->nstr; return s->str; }
int ks_fields(void) { return N_FIELDS; }

/* The distinct keys of keys[0:n] (each in [0, nkeys)) in first-seen order, into out;
 * returns how many (-1 on a key out of range or no memory). */
int64_t ks_first_seen(const int32_t *keys, int64_t n, int64_t nkeys, int32_t *out) {
    unsigned char *seen = calloc((size_t)(nkeys > 0 ? nkeys : 1), 1);
    if (!seen) return -1;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t k = keys[i];
        if (k < 0 || k >= nkeys) { free(seen); return -1; }
        if (!seen[k]) { seen[k] = 1; out[m++] = k; }
    }
    free(seen);
    return m;
}
