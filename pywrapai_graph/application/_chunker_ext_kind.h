/* The character scans of _chunker_ext.c for one string kind.
 *
 * Included three times by _chunker_ext.c, with CH the character type (Py_UCS1, Py_UCS2,
 * Py_UCS4) and KIND(name) naming the functions for it. Every index stays inside
 * [0, n): the callers pass pos <= lo <= hi < end <= n.
 */

/* str.isspace() of one character (what the regex classes \s and \S mean, too). */
#define IS_SPACE(c) Py_UNICODE_ISSPACE((Py_UCS4)(c))

/* One past the last non-whitespace character before `stop` (and not before `floor`). */
static Py_ssize_t
KIND(rstrip_end)(const CH *s, Py_ssize_t floor, Py_ssize_t stop)
{
    while (stop > floor && IS_SPACE(s[stop - 1])) {
        stop--;
    }
    return stop;
}

/* The first non-whitespace character at or after `at`, or `stop`. */
static Py_ssize_t
KIND(lstrip_start)(const CH *s, Py_ssize_t at, Py_ssize_t stop)
{
    while (at < stop && IS_SPACE(s[at])) {
        at++;
    }
    return at;
}

/* The last newline in s[lo:i + 1], or a value below lo. */
static Py_ssize_t
KIND(last_newline)(const CH *s, Py_ssize_t lo, Py_ssize_t i)
{
#if HAVE_SSE2
    /* 16 bytes at a time: the characters equal to "\n" light their bytes in a mask. */
    const Py_ssize_t lanes = 16 / (Py_ssize_t)sizeof(CH);
    const __m128i newlines = sizeof(CH) == 1   ? _mm_set1_epi8('\n')
                             : sizeof(CH) == 2 ? _mm_set1_epi16('\n')
                                               : _mm_set1_epi32('\n');
    while (i - lo + 1 >= lanes) {
        __m128i chars = _mm_loadu_si128((const __m128i *)(s + i - lanes + 1));
        __m128i equal = sizeof(CH) == 1   ? _mm_cmpeq_epi8(chars, newlines)
                        : sizeof(CH) == 2 ? _mm_cmpeq_epi16(chars, newlines)
                                          : _mm_cmpeq_epi32(chars, newlines);
        unsigned int mask = (unsigned int)_mm_movemask_epi8(equal);
        if (mask) {
            int top = 31 - __builtin_clz(mask); /* the last lit byte */
            return i - lanes + 1 + top / (Py_ssize_t)sizeof(CH);
        }
        i -= lanes;
    }
#endif
    while (i >= lo && s[i] != '\n') {
        i--;
    }
    return i;
}

/* Whether s[a + 1:b] holds only whitespace other than "\n" (s[b] is a newline). */
static int
KIND(all_space_between)(const CH *s, Py_ssize_t a, Py_ssize_t b)
{
    for (Py_ssize_t k = b - 1; k > a; k--) {
        if (!IS_SPACE(s[k])) {
            return 0;
        }
    }
    return 1;
}

/* An upper bound of the largest character in s[a:b] with the same kind (bits OR-ed). */
static Py_UCS4
KIND(max_bits)(const CH *s, Py_ssize_t a, Py_ssize_t b)
{
    Py_UCS4 bits = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        bits |= s[i];
    }
    return bits;
}

/* Copies s[a:b] to `to` as 1-byte characters; returns the OR of their bits (the copy is
 * right only if that is below 0x100, and ASCII only if below 0x80). */
static Py_UCS4
KIND(copy_to_ucs1)(const CH *s, Py_ssize_t a, Py_ssize_t b, Py_UCS1 *to)
{
    Py_UCS4 bits = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        bits |= s[i];
        to[i - a] = (Py_UCS1)s[i];
    }
    return bits;
}

/* Where the window [lo, hi] of a chunk starting at `pos` is cut (see chunker.py):
 * the last paragraph break, else the last sentence end, else the last word end, else hi.
 * The text is s[0:n]; hi < n.
 */
static Py_ssize_t
KIND(find_cut)(const CH *s, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t lo, Py_ssize_t hi)
{
    /* The paragraph break: the last "\n\n" starting in [lo, hi] (what
     * text.rfind("\n\n", lo, hi + 2) finds), unless a break holding spaces
     * (\n[^\S\n]+\n) follows it: then the last match of re.finditer over
     * text[max(start + 1, lo):hi + 2] wins. One backward pass over the newlines: the
     * first gap between two of them (from the right) that is empty or all whitespace
     * decides. (Where whitespace-only lines follow each other, finditer's last match
     * may be the one before that gap, as matches do not overlap: only whitespace lies
     * between the two, so either gives the same cut.) */
    Py_ssize_t endpos = hi + 2 < n ? hi + 2 : n;
    Py_ssize_t start = -1;
    Py_ssize_t right = -1; /* the newline found before (to the right), or -1 */
    for (Py_ssize_t i = endpos - 1;; i--) {
        i = KIND(last_newline)(s, lo, i);
        if (i < lo) {
            break;
        }
        if (right == i + 1) {
            start = i; /* "\n\n" */
            break;
        }
        if (right >= 0 && KIND(all_space_between)(s, i, right)) {
            start = i; /* a spaced break (see above) */
            break;
        }
        right = i;
    }
    if (start >= 0) {
        if (!IS_SPACE(s[start - 1])) {
            return start;
        }
        Py_ssize_t cut = KIND(rstrip_end)(s, pos, start);
        if (cut >= lo) {
            return cut;
        }
    }
    /* The last sentence end: a mark at m in [lo - 1, hi - 1] followed by whitespace. */
    for (Py_ssize_t m = hi - 1; m >= lo - 1; m--) {
        CH c = s[m];
        if ((c == '.' || c == '!' || c == '?') && IS_SPACE(s[m + 1])) {
            return m + 1;
        }
    }
    /* The last word end: before the last space, newline or tab in [lo, hi]. */
    for (Py_ssize_t k = hi; k >= lo; k--) {
        CH c = s[k];
        if (c == ' ' || c == '\n' || c == '\t') {
            Py_ssize_t cut = KIND(rstrip_end)(s, pos, k);
            return cut >= lo ? cut : hi;
        }
    }
    return hi; /* a hard cut */
}

#undef IS_SPACE
