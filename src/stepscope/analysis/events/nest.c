/* The nesting of one thread's ranges (intervals.nest_sorted) in one pass: each range's
 * depth (how many earlier ranges are still open after its start) and its parent (the
 * latest earlier range one level up).
 *
 * It is an accelerator, never a second definition: it gives exactly nest_sorted's depths
 * and parents, and declines (returns -1) where it cannot be sure to - starts out of order
 * or a range that ends before it starts. With starts in order and no negative length,
 * nest_sorted's depth (its position minus the ranges ended by its start, less the
 * zero-length ranges of its own start at or after it) is the number of earlier ranges
 * ending after its start: a min-heap of the earlier ranges' ends, popped up to each start,
 * holds exactly those. Its parent, the last earlier position at depth - 1, is kept per
 * depth as the pass goes.
 *
 * Built by scripts/build_native.sh into _nest.so, loaded with ctypes by native.py; without
 * it the numpy definition runs, the same, only slower.
 */
#include <stdint.h>

/* the interface's version, checked by native.py (ABI) before any call */
int nest_abi(void) { return 1; }

/* n ranges [start[i], end[i]); work: 2 * n + 1 int64 words. Writes depth[n] and up[n]
 * (-1: none). Returns 0, or -1 to decline. */
int64_t nest_sorted(int64_t n, const int64_t *start, const int64_t *end, int64_t *depth,
                    int64_t *up, int64_t *work) {
    if (n < 0) return -1;
    int64_t *heap = work, *last = work + n; /* last[d]: the latest position at depth d */
    int64_t size = 0;
    /* a depth is at most the previous one + 1, so last[d - 1] is always set before it is
       read; -1 anyway, so that no input can make it read an unset word */
    for (int64_t d = 0; d <= n; d++) last[d] = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = start[i];
        if (end[i] < s || (i > 0 && s < start[i - 1])) return -1;
        while (size > 0 && heap[0] <= s) { /* pop the smallest end: sift the last one down */
            int64_t v = heap[--size], k = 0;
            for (;;) {
                int64_t c = 2 * k + 1;
                if (c >= size) break;
                if (c + 1 < size && heap[c + 1] < heap[c]) c++;
                if (heap[c] >= v) break;
                heap[k] = heap[c];
                k = c;
            }
            heap[k] = v;
        }
        int64_t d = size;
        depth[i] = d;
        up[i] = d > 0 ? last[d - 1] : -1;
        last[d] = i;
        int64_t k = size++, v = end[i]; /* push this range's end: sift it up */
        while (k > 0 && heap[(k - 1) / 2] > v) {
            heap[k] = heap[(k - 1) / 2];
            k = (k - 1) / 2;
        }
        heap[k] = v;
    }
    return 0;
}
