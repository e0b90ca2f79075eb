/* Longest paths over the chains-and-cross-edges graph (solve.py), in one pass in
 * topological order: each chain position is placed once its chain predecessor and the
 * sources of its cross edges are, t = max(previous + w, anchor, best arrival).
 *
 * It is an accelerator, never a second solver: it gives exactly solve.longest's times and
 * entries (the tie rules: a chain position enters its path afresh only when its own
 * arrival is strictly later than the chain's) and declines (returns -1) whenever it cannot
 * be sure to - a cycle, an id out of range, a node at two positions, a negative weight, or
 * values beyond the range in which solve.py's int64 arithmetic is exact. The caller then
 * solves with numpy. The cross edge each node's arrival comes from (``via``) is computed
 * from the times by solve._via, the same for both.
 *
 * Built with the event scanner by scripts/build_native.sh into _longest.so, loaded with
 * ctypes by native.py; without it the solver is the same, only slower.
 */
#include <stdint.h>
#include <string.h>

#define NEG (-(INT64_C(1) << 41)) /* solve.NEG: unreached */
#define LIMIT (INT64_C(1) << 40)  /* solve.SPAN: a weight, an anchor, a chain's sum */
#define TOTAL (INT64_C(1) << 61)  /* the sum of every weight: no path can overflow */

/* the interface's version, checked by native.py (ABI) before any call */
int gl_abi(void) { return 4; }

/* The int64 words of work space gl_longest needs: the caller allocates them (numpy's
 * allocations of several MB are backed by huge pages; this pass's own calloc'd arrays
 * cost a third of a report's page faults at 1 GB). Times take int64 words, positions,
 * counts and edge ids int32: fresh memory is what a forked child pays most for. */
int64_t gl_work(int64_t n, int64_t m, int64_t nx) {
    return 2 * m + (n + 4 * m + 1 + nx + 1) / 2;
}

/* n nodes, m chain positions (order[k]: the node at position k; first[k]: k starts a
 * chain), w[k] the weight into position k, nx cross edges xs[e] -> xd[e] of weight xw[e],
 * anchor[v] each node's own earliest time (<= NEG: none); work: gl_work(n, m, nx) words.
 * Writes t[n] (NEG: unreached) and entry[m]. Returns 0, or -1 to decline. */
int64_t gl_longest(int64_t n, int64_t m, const int64_t *order, const uint8_t *first,
                   const int64_t *w, int64_t nx, const int64_t *xs, const int64_t *xd,
                   const int64_t *xw, const int64_t *anchor, int64_t *t, int64_t *entry,
                   int64_t *work) {
    if (n < 0 || m < 0 || nx < 0 || n >= INT32_MAX || m >= INT32_MAX || nx >= INT32_MAX)
        return -1; /* ids beyond int32: the numpy solver */
    int64_t *c = work, *tk = c + m;
    int32_t *pos = (int32_t *)(tk + m), *indeg = pos + n, *start = indeg + m;
    int32_t *out = start + m + 1, *queue = out + nx, *fill = queue + m;
    /* only the counters need zeros: every other word is written before it is read */
    memset(indeg, 0, (size_t)m * sizeof(int32_t));
    memset(start, 0, (size_t)(m + 1) * sizeof(int32_t));
    memset(fill, 0, (size_t)m * sizeof(int32_t));
    for (int64_t v = 0; v < n; v++) pos[v] = -1;
    int64_t total = 0, chain = 0;
    for (int64_t k = 0; k < m; k++) {
        int64_t v = order[k];
        if (v < 0 || v >= n || pos[v] >= 0) return -1;
        pos[v] = k;
        if (w[k] < 0 || w[k] > LIMIT) return -1;
        int starts = k == 0 || first[k];
        chain = starts ? 0 : chain + w[k];
        if (chain > LIMIT) return -1;
        total += w[k];
        if (!starts) indeg[k] = 1;
    }
    for (int64_t k = 0; k < m; k++) {
        int64_t a = anchor[order[k]];
        if (a > NEG && (a > LIMIT || a < -LIMIT)) return -1;
        c[k] = a > NEG ? a : NEG;
    }
    /* cross edges by source position (a source that is no position is never reached, a
     * destination that is none has no time: neither takes part) */
    for (int64_t e = 0; e < nx; e++) {
        if (xs[e] < 0 || xs[e] >= n || xd[e] < 0 || xd[e] >= n) return -1;
        if (xw[e] > LIMIT || xw[e] < -LIMIT) return -1;
        total += xw[e] < 0 ? -xw[e] : xw[e];
        if (total > TOTAL) return -1;
        int64_t s = pos[xs[e]], d = pos[xd[e]];
        if (s < 0 || d < 0) continue;
        start[s + 1]++;
        indeg[d]++;
    }
    if (total > TOTAL) return -1;
    for (int64_t k = 0; k < m; k++) start[k + 1] += start[k];
    for (int64_t e = 0; e < nx; e++) {
        int64_t s = pos[xs[e]], d = pos[xd[e]];
        if (s < 0 || d < 0) continue;
        out[start[s] + fill[s]++] = e;
    }
    int64_t head = 0, tail = 0;
    for (int64_t k = 0; k < m; k++)
        if (indeg[k] == 0) queue[tail++] = k;
    while (head < tail) {
        int64_t k = queue[head++];
        int starts = k == 0 || first[k];
        int64_t prev = starts ? NEG : tk[k - 1];
        int64_t along = prev > NEG ? prev + w[k] : NEG;
        int64_t own = c[k];
        if (own > NEG && (along <= NEG || own > along)) {
            tk[k] = own;
            entry[k] = k;
        } else {
            tk[k] = along;
            entry[k] = starts ? k : entry[k - 1];
        }
        if (tk[k] > NEG && tk[k] <= NEG / 2) return -1; /* solve.py would read unreached */
        for (int64_t i = start[k]; i < start[k + 1]; i++) {
            int64_t e = out[i], d = pos[xd[e]];
            if (tk[k] > NEG) {
                int64_t arrival = tk[k] + xw[e];
                if (arrival > c[d]) c[d] = arrival;
            }
            if (--indeg[d] == 0) queue[tail++] = d;
        }
        if (k + 1 < m && !first[k + 1] && --indeg[k + 1] == 0) queue[tail++] = k + 1;
    }
    if (tail != m) return -1; /* a cycle */
    for (int64_t v = 0; v < n; v++) t[v] = NEG;
    for (int64_t k = 0; k < m; k++) t[order[k]] = tk[k];
    return 0;
}

/* The host threads' chains (build._host_chains): every host event's start and end node in
 * the order build's numpy path sorts them (per thread; by time; at equal times ends before
 * starts, inner ends first, outer starts first; then by event), with each position's
 * weight, edge kind and owner. ev: the n events sorted by (lane, start, end descending,
 * event); depth and parent (an event, or -1) of each event from its thread's nesting.
 *
 * The order needs no sort: along ev a thread's starts already come in node order, and
 * its ends come out of a min-heap keyed (end, -depth, event) popped up to each start time
 * (zero-length events' ends, which precede the starts of their time, pushed first). The
 * pass checks what that needs - ev a permutation in that order, no negative length,
 * depths that never fall at one start time (events of one time and depth in event
 * order) - and declines (-1) otherwise. */
static int end_before(const int64_t *end, const int64_t *depth, int64_t a, int64_t b) {
    if (end[a] != end[b]) return end[a] < end[b];
    if (depth[a] != depth[b]) return depth[a] > depth[b];
    return a < b;
}

static void heap_push(int64_t *heap, int64_t *size, int64_t e, const int64_t *end,
                      const int64_t *depth) {
    int64_t k = (*size)++;
    while (k > 0 && end_before(end, depth, e, heap[(k - 1) / 2])) {
        heap[k] = heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    heap[k] = e;
}

static int64_t heap_pop(int64_t *heap, int64_t *size, const int64_t *end,
                        const int64_t *depth) {
    int64_t top = heap[0], v = heap[--(*size)], k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= *size) break;
        if (c + 1 < *size && end_before(end, depth, heap[c + 1], heap[c])) c++;
        if (!end_before(end, depth, heap[c], v)) break;
        heap[k] = heap[c];
        k = c;
    }
    heap[k] = v;
    return top;
}

int64_t gl_chains(int64_t n, const int64_t *ts, const int64_t *end, const int64_t *lane,
                  const uint8_t *blocking_end, int hta, const int64_t *ev,
                  const int64_t *depth, const int64_t *parent, int8_t k_dependency,
                  int8_t k_operator, int64_t *order, uint8_t *first, int64_t *w,
                  int8_t *kind, int64_t *owner, int64_t *work) {
    if (n < 0) return -1;
    int64_t *heap = work, *seen = work + n, size = 0, m = 0;
    for (int64_t e = 0; e < n; e++) seen[e] = 0;
    for (int64_t k = 0; k < n; k++) { /* ev: a permutation, in the order the pass needs */
        int64_t e = ev[k];
        if (e < 0 || e >= n || seen[e] || end[e] < ts[e] || depth[e] < 0 ||
            parent[e] < -1 || parent[e] >= n)
            return -1;
        seen[e] = 1;
        if (k > 0 && lane[ev[k - 1]] == lane[e]) {
            int64_t p = ev[k - 1];
            if (ts[p] > ts[e]) return -1;
            if (ts[p] == ts[e] && (end[p] < end[e] || depth[p] > depth[e] ||
                                   (depth[p] == depth[e] && p > e)))
                return -1;
        } else if (k > 0 && lane[ev[k - 1]] > lane[e]) {
            return -1;
        }
    }
    for (int64_t k = 0; k < n;) { /* one thread at a time */
        int64_t stop = k;
        while (stop < n && lane[ev[stop]] == lane[ev[k]]) stop++;
        for (int64_t g = k; g < stop;) { /* the starts of one time */
            int64_t t = ts[ev[g]], gend = g;
            while (gend < stop && ts[ev[gend]] == t) gend++;
            for (int64_t i = g; i < gend; i++)
                if (end[ev[i]] == t) heap_push(heap, &size, ev[i], end, depth);
            while (size > 0 && end[heap[0]] <= t)
                order[m++] = 2 * heap_pop(heap, &size, end, depth) + 1;
            for (int64_t i = g; i < gend; i++) {
                order[m++] = 2 * ev[i];
                if (end[ev[i]] != t) heap_push(heap, &size, ev[i], end, depth);
            }
            g = gend;
        }
        while (size > 0) order[m++] = 2 * heap_pop(heap, &size, end, depth) + 1;
        k = stop;
    }
    if (m != 2 * n) return -1;
    for (int64_t k = 0; k < m; k++) {
        int64_t o = order[k], oe = o / 2, prev = order[k > 0 ? k - 1 : m - 1], pe = prev / 2;
        int ostart = o % 2 == 0, pstart = prev % 2 == 0;
        int64_t tk = ostart ? ts[oe] : end[oe], tp = pstart ? ts[pe] : end[pe];
        int dep = !pstart && ostart && depth[pe] == 0 && depth[oe] == 0;
        int64_t up = parent[pe];
        first[k] = k == 0 || lane[oe] != lane[pe];
        kind[k] = dep ? k_dependency : k_operator;
        w[k] = tk - tp > 0 ? tk - tp : 0;
        if (hta && (dep || (!ostart && blocking_end[oe]))) w[k] = 0;
        owner[k] = pstart ? pe : (!ostart ? oe : up);
        if (dep) owner[k] = hta ? -1 : up;
        if (first[k]) {
            w[k] = 0;
            kind[k] = k_dependency;
            owner[k] = -1;
        }
    }
    return 0;
}
