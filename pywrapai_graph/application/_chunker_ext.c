/* The chunker's hot loops, compiled; chunker.py has the pure-Python twin of each.
 *
 * Cutter(text, size, limit) is an iterator over the texts of the chunks Chunker cuts
 * from `text` (chunk_size `size`, overlap limit `limit`), exactly what the Python loop
 * _py_chunk_texts gives. It streams: it holds the text, a position, and the previous
 * chunk (whose tail starts the next one).
 *
 * ChunkIds(prefix) is an endless iterator over the ids of a document's chunks 0, 1, 2...:
 * str(uuid.uuid5(namespace, f"{doc_id}\x00{index}")), `prefix` being the bytes uuid5
 * hashes before the index (namespace, UTF-8 document id, NUL). SHA-1 as FIPS 180-4
 * defines it.
 *
 * Chunks(chunk_type, texts, doc_id, metadata, ids) makes the Chunk objects (see below).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* Chunks shorter than this are dropped (chunker.MIN_CHUNK_CHARS). */
#define MIN_CHUNK_CHARS 10

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#include <emmintrin.h>
#define HAVE_SSE2 1
#else
#define HAVE_SSE2 0
#endif

#define CH Py_UCS1
#define KIND(name) name##_ucs1
#include "_chunker_ext_kind.h"
#undef CH
#undef KIND

#define CH Py_UCS2
#define KIND(name) name##_ucs2
#include "_chunker_ext_kind.h"
#undef CH
#undef KIND

#define CH Py_UCS4
#define KIND(name) name##_ucs4
#include "_chunker_ext_kind.h"
#undef CH
#undef KIND

#define DISPATCH(kind, call_ucs1, call_ucs2, call_ucs4)                                    \
    ((kind) == PyUnicode_1BYTE_KIND   ? (call_ucs1)                                        \
     : (kind) == PyUnicode_2BYTE_KIND ? (call_ucs2)                                        \
                                      : (call_ucs4))

static Py_UCS4
max_bits(int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    return DISPATCH(kind, max_bits_ucs1((const Py_UCS1 *)data, a, b),
                    max_bits_ucs2((const Py_UCS2 *)data, a, b),
                    max_bits_ucs4((const Py_UCS4 *)data, a, b));
}

static Py_ssize_t
rstrip_end(int kind, const void *data, Py_ssize_t floor, Py_ssize_t stop)
{
    return DISPATCH(kind, rstrip_end_ucs1((const Py_UCS1 *)data, floor, stop),
                    rstrip_end_ucs2((const Py_UCS2 *)data, floor, stop),
                    rstrip_end_ucs4((const Py_UCS4 *)data, floor, stop));
}

static Py_ssize_t
lstrip_start(int kind, const void *data, Py_ssize_t at, Py_ssize_t stop)
{
    return DISPATCH(kind, lstrip_start_ucs1((const Py_UCS1 *)data, at, stop),
                    lstrip_start_ucs2((const Py_UCS2 *)data, at, stop),
                    lstrip_start_ucs4((const Py_UCS4 *)data, at, stop));
}

static Py_ssize_t
find_cut(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t lo,
         Py_ssize_t hi)
{
    return DISPATCH(kind, find_cut_ucs1((const Py_UCS1 *)data, n, pos, lo, hi),
                    find_cut_ucs2((const Py_UCS2 *)data, n, pos, lo, hi),
                    find_cut_ucs4((const Py_UCS4 *)data, n, pos, lo, hi));
}

static Py_UCS4
copy_to_ucs1(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, Py_UCS1 *to)
{
    return DISPATCH(kind, copy_to_ucs1_ucs1((const Py_UCS1 *)data, a, b, to),
                    copy_to_ucs1_ucs2((const Py_UCS2 *)data, a, b, to),
                    copy_to_ucs1_ucs4((const Py_UCS4 *)data, a, b, to));
}

/* The largest value of the narrowest string kind holding characters with these bits. */
static Py_UCS4
kind_max(Py_UCS4 bits)
{
    if (bits < 0x80) {
        return 0x7f;
    }
    if (bits < 0x100) {
        return 0xff;
    }
    if (bits < 0x10000) {
        return 0xffff;
    }
    return 0x10ffff;
}

#define COPY_LOOP(to_type, from_type)                                                      \
    do {                                                                                   \
        to_type *d_ = (to_type *)to + at;                                                  \
        const from_type *s_ = (const from_type *)from + start;                             \
        for (Py_ssize_t i_ = 0; i_ < count; i_++) {                                        \
            d_[i_] = (to_type)s_[i_];                                                      \
        }                                                                                  \
    } while (0)

/* Copies `count` characters from[start:] to to[at:]; every one fits the target kind. */
static void
copy_chars(int to_kind, void *to, Py_ssize_t at, int from_kind, const void *from,
           Py_ssize_t start, Py_ssize_t count)
{
    if (to_kind == from_kind) {
        memcpy((char *)to + at * to_kind, (const char *)from + start * from_kind,
               (size_t)(count * to_kind));
        return;
    }
    switch (to_kind * 8 + from_kind) {
    case PyUnicode_1BYTE_KIND * 8 + PyUnicode_2BYTE_KIND:
        COPY_LOOP(Py_UCS1, Py_UCS2);
        break;
    case PyUnicode_1BYTE_KIND * 8 + PyUnicode_4BYTE_KIND:
        COPY_LOOP(Py_UCS1, Py_UCS4);
        break;
    case PyUnicode_2BYTE_KIND * 8 + PyUnicode_1BYTE_KIND:
        COPY_LOOP(Py_UCS2, Py_UCS1);
        break;
    case PyUnicode_2BYTE_KIND * 8 + PyUnicode_4BYTE_KIND:
        COPY_LOOP(Py_UCS2, Py_UCS4);
        break;
    case PyUnicode_4BYTE_KIND * 8 + PyUnicode_1BYTE_KIND:
        COPY_LOOP(Py_UCS4, Py_UCS1);
        break;
    default: /* 4 <- 2 */
        COPY_LOOP(Py_UCS4, Py_UCS2);
        break;
    }
}

/* Asks for text[from:from + count] to be brought into the cache: the window after next
 * reads it (a large text is far bigger than the cache; it is read backwards from each
 * window's end, which the processor does not foresee). */
static void
prefetch_ahead(int kind, const void *data, Py_ssize_t n, Py_ssize_t from, Py_ssize_t count)
{
#if defined(__GNUC__) || defined(__clang__)
    if (from >= n) {
        return;
    }
    Py_ssize_t stop = from + count < n ? from + count : n;
    const char *first = (const char *)data + from * kind;
    const char *last = (const char *)data + stop * kind;
    for (const char *line = first; line < last; line += 64) {
        __builtin_prefetch(line);
    }
#else
    (void)kind, (void)data, (void)n, (void)from, (void)count;
#endif
}

typedef struct {
    PyObject_HEAD
    PyObject *text;     /* the document's text (a str) */
    Py_ssize_t pos;     /* where the next chunk's new text starts */
    Py_ssize_t end;     /* one past the text's last non-whitespace character */
    Py_ssize_t size;    /* chunk_size */
    Py_ssize_t limit;   /* the overlap limit: 0 <= limit <= size - 1 - MIN_CHUNK_CHARS */
    PyObject *head;     /* the previous chunk, whose tail head[head_at:] starts the next */
    Py_ssize_t head_at; /* (NULL, or head_at == len(head): no overlap) */
    int done;
} CutterObject;

static void
Cutter_dealloc(CutterObject *self)
{
    Py_XDECREF(self->text);
    Py_XDECREF(self->head);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Cutter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"text", "size", "limit", NULL};
    PyObject *text;
    Py_ssize_t size, limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Unn:Cutter", kwlist, &text, &size, &limit)) {
        return NULL;
    }
    if (size <= MIN_CHUNK_CHARS) {
        PyErr_Format(PyExc_ValueError, "size must be greater than %d, got %zd",
                     MIN_CHUNK_CHARS, size);
        return NULL;
    }
    if (limit < 0 || limit > size - 1 - MIN_CHUNK_CHARS) {
        PyErr_Format(PyExc_ValueError, "limit must be in [0, size - %d], got %zd",
                     1 + MIN_CHUNK_CHARS, limit);
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) { /* a legacy string made by the old C API */
        return NULL;
    }
#endif
    CutterObject *self = (CutterObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    /* A size past the text's length cuts it the same way: its first window holds all of
     * it, one chunk (which the overlap never follows). Capped there (with the limit), the
     * sums of positions and sizes below stay far from overflowing, whatever the size
     * (sys.maxsize included). n + 1 + MIN_CHUNK_CHARS cannot overflow: a str's length is
     * well below PY_SSIZE_T_MAX. */
    if (size > n + 1 + MIN_CHUNK_CHARS) {
        size = n + 1 + MIN_CHUNK_CHARS;
        limit = limit < n ? limit : n;
    }
    Py_INCREF(text);
    self->text = text;
    self->size = size;
    self->limit = limit;
    self->head = NULL;
    self->head_at = 0;
    self->end = rstrip_end(kind, data, 0, n);
    self->pos = lstrip_start(kind, data, 0, self->end);
    self->done = self->pos >= self->end;
    return (PyObject *)self;
}

/* head[head_at:] + joiner + text[pos:cut], a new str of the narrowest kind.
 * Chunks are mostly ASCII even in a wider text: that is tried first, in one pass that
 * copies the new text and checks it is ASCII. */
static PyObject *
join_chunk(CutterObject *self, Py_ssize_t head_len, int joiner, Py_ssize_t cut)
{
    int kind = PyUnicode_KIND(self->text);
    const void *data = PyUnicode_DATA(self->text);
    Py_ssize_t at = head_len + joiner, count = cut - self->pos;
    int head_kind = 0;
    const void *head_data = NULL;
    Py_UCS4 head_bits = 0;
    if (head_len) {
        head_kind = PyUnicode_KIND(self->head);
        head_data = PyUnicode_DATA(self->head);
        head_bits = max_bits(head_kind, head_data, self->head_at, self->head_at + head_len);
    }
    PyObject *out;
    if (head_bits < 0x80 && !PyUnicode_IS_ASCII(self->text)) {
        out = PyUnicode_New(at + count, 0x7f);
        if (out == NULL) {
            return NULL;
        }
        Py_UCS1 *out_data = PyUnicode_1BYTE_DATA(out);
        if (copy_to_ucs1(kind, data, self->pos, cut, out_data + at) < 0x80) {
            if (head_len) {
                copy_chars(PyUnicode_1BYTE_KIND, out_data, 0, head_kind, head_data,
                           self->head_at, head_len);
            }
            if (joiner) {
                out_data[head_len] = ' ';
            }
            return out;
        }
        Py_DECREF(out);
    }
    Py_UCS4 bits = head_bits;
    bits |= PyUnicode_IS_ASCII(self->text) ? 0 : max_bits(kind, data, self->pos, cut);
    out = PyUnicode_New(at + count, kind_max(bits));
    if (out == NULL) {
        return NULL;
    }
    int out_kind = PyUnicode_KIND(out);
    void *out_data = PyUnicode_DATA(out);
    if (head_len) {
        copy_chars(out_kind, out_data, 0, head_kind, head_data, self->head_at, head_len);
    }
    if (joiner) {
        PyUnicode_WRITE(out_kind, out_data, head_len, ' ');
    }
    copy_chars(out_kind, out_data, at, kind, data, self->pos, count);
    return out;
}

/* The next chunk starts with the tail of `chunk` from its first word starting at or
 * after len - limit: after the first whitespace run at or after len - limit - 1. */
static void
keep_head(CutterObject *self, PyObject *chunk)
{
    Py_ssize_t len = PyUnicode_GET_LENGTH(chunk);
    Py_ssize_t tail = len - self->limit;
    Py_ssize_t at = 0;
    if (tail > 0) {
        int kind = PyUnicode_KIND(chunk);
        const void *data = PyUnicode_DATA(chunk);
        at = tail - 1;
        while (at < len && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
            at++;
        }
        at = lstrip_start(kind, data, at, len);
    }
    Py_XSETREF(self->head, Py_NewRef(chunk));
    self->head_at = at;
}

static PyObject *
Cutter_next(CutterObject *self)
{
    while (!self->done) {
        int kind = PyUnicode_KIND(self->text);
        const void *data = PyUnicode_DATA(self->text);
        Py_ssize_t n = PyUnicode_GET_LENGTH(self->text);
        Py_ssize_t pos = self->pos, end = self->end;
        Py_ssize_t head_len = self->head ? PyUnicode_GET_LENGTH(self->head) - self->head_at : 0;
        int joiner = 0;
        if (head_len) {
            Py_UCS4 last = PyUnicode_READ_CHAR(self->head, PyUnicode_GET_LENGTH(self->head) - 1);
            joiner = !Py_UNICODE_ISSPACE(last);
        }
        Py_ssize_t window_end = pos + self->size - head_len - joiner;
        prefetch_ahead(kind, data, n, window_end + self->size, self->size);
        Py_ssize_t cut = window_end >= end
                             ? end
                             : find_cut(kind, data, n, pos, pos + MIN_CHUNK_CHARS, window_end);
        PyObject *chunk = join_chunk(self, head_len, joiner, cut);
        if (chunk == NULL) {
            self->done = 1;
            return NULL;
        }
        if (cut >= end) {
            self->done = 1;
        }
        else {
            /* The whitespace after the cut is skipped (text[end - 1] is not whitespace). */
            self->pos = lstrip_start(kind, data, cut, end);
            self->done = self->pos >= end;
        }
        if (self->limit) {
            keep_head(self, chunk);
        }
        if (PyUnicode_GET_LENGTH(chunk) >= MIN_CHUNK_CHARS) {
            return chunk;
        }
        Py_DECREF(chunk);
    }
    return NULL;
}

static PyTypeObject CutterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pywrapai_graph.application._chunker_ext.Cutter",
    .tp_basicsize = sizeof(CutterObject),
    .tp_dealloc = (destructor)Cutter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("Cutter(text, size, limit): the texts of the chunks cut from text."),
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Cutter_next,
    .tp_new = Cutter_new,
};

/* ---- SHA-1 (FIPS 180-4, section 6.1) and uuid5 ids ---- */

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

/* Folds one 64-byte block into the hash state h[5]. */
static void
sha1_block(uint32_t h[5], const unsigned char *block)
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
    }
    for (int t = 16; t < 80; t++) {
        w[t] = ROTL(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
#define SHA1_ROUND(f, k, t)                                                                \
    do {                                                                                   \
        uint32_t next_ = ROTL(a, 5) + (f) + e + (k) + w[t];                                \
        e = d;                                                                             \
        d = c;                                                                             \
        c = ROTL(b, 30);                                                                   \
        b = a;                                                                             \
        a = next_;                                                                         \
    } while (0)
    for (int t = 0; t < 20; t++) {
        SHA1_ROUND((b & c) | (~b & d), 0x5a827999u, t);
    }
    for (int t = 20; t < 40; t++) {
        SHA1_ROUND(b ^ c ^ d, 0x6ed9eba1u, t);
    }
    for (int t = 40; t < 60; t++) {
        SHA1_ROUND((b & c) | (b & d) | (c & d), 0x8f1bbcdcu, t);
    }
    for (int t = 60; t < 80; t++) {
        SHA1_ROUND(b ^ c ^ d, 0xca62c1d6u, t);
    }
#undef SHA1_ROUND
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The same on x86-64 processors with the SHA extensions (Intel SHA-NI; most since
 * 2017): one SHA1RNDS4 instruction does 4 rounds, SHA1MSG1/SHA1MSG2 the message schedule
 * (W[t] for t >= 16, 4 at a time), SHA1NEXTE the next E. Chosen at run time (cpuid). */
#include <cpuid.h>
#include <immintrin.h>

#define SHA1_NI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

SHA1_NI_TARGET static void
sha1_block_ni(uint32_t h[5], const unsigned char *block)
{
    /* Lane 3 holds A (and E, and W[t] of a group of 4), as the instructions expect. */
    const __m128i big_endian = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1b);
    __m128i e_first = _mm_set_epi32((int)h[4], 0, 0, 0);
    __m128i w[4];
    for (int g = 0; g < 4; g++) {
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(block + 16 * g)),
                                big_endian);
    }
    __m128i abcd_first = abcd, before;
    /* Rounds 4g to 4g + 3 use the message words w[g % 4] (W[4g] to W[4g + 3]); the
     * words of group g + 4 are made from groups g to g + 3 once group g is used. */
#define SHA1_GROUP(g, f)                                                                   \
    do {                                                                                   \
        __m128i e_ = (g) == 0 ? _mm_add_epi32(e_first, w[0])                               \
                              : _mm_sha1nexte_epu32(before, w[(g) % 4]);                   \
        before = abcd;                                                                     \
        abcd = _mm_sha1rnds4_epu32(abcd, e_, f);                                           \
        if ((g) + 4 < 20) {                                                                \
            w[(g) % 4] = _mm_sha1msg2_epu32(                                               \
                _mm_xor_si128(_mm_sha1msg1_epu32(w[(g) % 4], w[((g) + 1) % 4]),            \
                              w[((g) + 2) % 4]),                                           \
                w[((g) + 3) % 4]);                                                         \
        }                                                                                  \
    } while (0)
    SHA1_GROUP(0, 0);
    SHA1_GROUP(1, 0);
    SHA1_GROUP(2, 0);
    SHA1_GROUP(3, 0);
    SHA1_GROUP(4, 0);
    SHA1_GROUP(5, 1);
    SHA1_GROUP(6, 1);
    SHA1_GROUP(7, 1);
    SHA1_GROUP(8, 1);
    SHA1_GROUP(9, 1);
    SHA1_GROUP(10, 2);
    SHA1_GROUP(11, 2);
    SHA1_GROUP(12, 2);
    SHA1_GROUP(13, 2);
    SHA1_GROUP(14, 2);
    SHA1_GROUP(15, 3);
    SHA1_GROUP(16, 3);
    SHA1_GROUP(17, 3);
    SHA1_GROUP(18, 3);
    SHA1_GROUP(19, 3);
#undef SHA1_GROUP
    __m128i e_last = _mm_sha1nexte_epu32(before, e_first);
    abcd = _mm_shuffle_epi32(_mm_add_epi32(abcd, abcd_first), 0x1b);
    _mm_storeu_si128((__m128i *)h, abcd);
    h[4] = (uint32_t)_mm_extract_epi32(e_last, 3);
}

static int
has_sha_ni(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) {
        return 0;
    }
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#else
#define sha1_block_ni sha1_block
static int
has_sha_ni(void)
{
    return 0;
}
#endif

/* sha1_block_ni where the processor has it, else sha1_block (set at import). */
static void (*sha1_fold)(uint32_t h[5], const unsigned char *block) = sha1_block;

typedef struct {
    PyObject_HEAD
    uint32_t state[5];       /* SHA-1 state after the prefix's whole 64-byte blocks */
    unsigned char rest[64];  /* the prefix's bytes after those blocks */
    Py_ssize_t rest_len;     /* (< 64) */
    unsigned long long prefix_len; /* the prefix's length in bytes */
    unsigned long long index;      /* the next id's chunk index */
    void (*fold)(uint32_t h[5], const unsigned char *block);
} ChunkIdsObject;

static PyObject *
ChunkIds_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"prefix", "portable", NULL};
    Py_buffer prefix;
    int portable = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*|$p:ChunkIds", kwlist, &prefix,
                                     &portable)) {
        return NULL;
    }
    ChunkIdsObject *self = (ChunkIdsObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyBuffer_Release(&prefix);
        return NULL;
    }
    static const uint32_t initial[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                                        0xc3d2e1f0};
    memcpy(self->state, initial, sizeof initial);
    self->fold = portable ? sha1_block : sha1_fold;
    const unsigned char *bytes = prefix.buf;
    Py_ssize_t whole = prefix.len - prefix.len % 64;
    for (Py_ssize_t at = 0; at < whole; at += 64) {
        self->fold(self->state, bytes + at);
    }
    self->rest_len = prefix.len - whole;
    memcpy(self->rest, bytes + whole, (size_t)self->rest_len);
    self->prefix_len = (unsigned long long)prefix.len;
    self->index = 0;
    PyBuffer_Release(&prefix);
    return (PyObject *)self;
}

static PyObject *
ChunkIds_next(ChunkIdsObject *self)
{
    /* The message's last bytes: the prefix's rest, the index in decimal, then the
     * padding (0x80, zeros, the length in bits as 8 big-endian bytes): 1 or 2 blocks. */
    unsigned char tail[128];
    memcpy(tail, self->rest, (size_t)self->rest_len);
    char digits[24];
    int ndigits = 0;
    unsigned long long index = self->index;
    do {
        digits[sizeof digits - 1 - ndigits++] = (char)('0' + index % 10);
        index /= 10;
    } while (index);
    memcpy(tail + self->rest_len, digits + sizeof digits - ndigits, (size_t)ndigits);
    Py_ssize_t used = self->rest_len + ndigits;
    Py_ssize_t blocks = used + 9 <= 64 ? 1 : 2;
    memset(tail + used, 0, (size_t)(64 * blocks - used));
    tail[used] = 0x80;
    unsigned long long bits = (self->prefix_len + (unsigned long long)ndigits) * 8;
    for (int i = 0; i < 8; i++) {
        tail[64 * blocks - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    uint32_t h[5];
    memcpy(h, self->state, sizeof h);
    for (Py_ssize_t b = 0; b < blocks; b++) {
        self->fold(h, tail + 64 * b);
    }
    unsigned char digest[16];
    for (int i = 0; i < 16; i++) {
        digest[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
    }
    digest[6] = (unsigned char)((digest[6] & 0x0f) | 0x50); /* version 5 */
    digest[8] = (unsigned char)((digest[8] & 0x3f) | 0x80); /* the RFC 4122 variant */
    PyObject *out = PyUnicode_New(36, 0x7f);
    if (out == NULL) {
        return NULL;
    }
    static const char hex[] = "0123456789abcdef";
    Py_UCS1 *text = PyUnicode_1BYTE_DATA(out);
    for (int i = 0, at = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            text[at++] = '-';
        }
        text[at++] = (Py_UCS1)hex[digest[i] >> 4];
        text[at++] = (Py_UCS1)hex[digest[i] & 15];
    }
    self->index++;
    return out;
}

static PyTypeObject ChunkIdsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pywrapai_graph.application._chunker_ext.ChunkIds",
    .tp_basicsize = sizeof(ChunkIdsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("ChunkIds(prefix, *, portable=False): the uuid5 ids of a document's "
                        "chunks 0, 1, 2... (portable: without the processor's SHA "
                        "instructions)"),
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)ChunkIds_next,
    .tp_new = ChunkIds_new,
};

/* ---- Chunk objects ----
 *
 * Chunks(chunk_type, texts, doc_id, metadata, ids) iterates over
 * chunk_type(text, doc_id, metadata.copy(), id) for each text and id, made as the
 * dataclass __init__ makes them (each field's slot set, embedding None) without running
 * it: chunker.py uses it only for a Chunk class whose __init__ does no more than that.
 */

/* The fields of the Chunk dataclass, in its __init__'s order. */
static const char *const chunk_fields[] = {"text", "doc_id", "metadata", "id", "embedding"};
#define CHUNK_FIELDS 5

typedef struct {
    PyObject_HEAD
    PyTypeObject *chunk_type;
    Py_ssize_t offsets[CHUNK_FIELDS]; /* where each field's slot lies in an instance */
    PyObject *texts;                  /* iterators */
    PyObject *ids;
    PyObject *doc_id;
    PyObject *metadata;
} ChunksObject;

static int
Chunks_traverse(ChunksObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->chunk_type);
    Py_VISIT(self->texts);
    Py_VISIT(self->ids);
    Py_VISIT(self->doc_id);
    Py_VISIT(self->metadata);
    return 0;
}

static int
Chunks_clear(ChunksObject *self)
{
    Py_CLEAR(self->chunk_type);
    Py_CLEAR(self->texts);
    Py_CLEAR(self->ids);
    Py_CLEAR(self->doc_id);
    Py_CLEAR(self->metadata);
    return 0;
}

static void
Chunks_dealloc(ChunksObject *self)
{
    PyObject_GC_UnTrack(self);
    Chunks_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Chunks_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"chunk_type", "texts", "doc_id", "metadata", "ids", NULL};
    PyObject *chunk_type, *texts, *doc_id, *metadata, *ids;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOOO:Chunks", kwlist, &PyType_Type,
                                     &chunk_type, &texts, &doc_id, &metadata, &ids)) {
        return NULL;
    }
    if (!PyIter_Check(texts) || !PyIter_Check(ids) || !PyDict_CheckExact(metadata)) {
        PyErr_SetString(PyExc_TypeError, "texts and ids must be iterators, metadata a dict");
        return NULL;
    }
    PyTypeObject *ctype = (PyTypeObject *)chunk_type;
    /* A class written in Python whose instances object.__new__ makes: then zeroed memory
     * with its slots filled is a whole instance (a C base would have fields of its own). */
    if (!(ctype->tp_flags & Py_TPFLAGS_HEAPTYPE) || ctype->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "%s is not a plain class", ctype->tp_name);
        return NULL;
    }
    Py_ssize_t offsets[CHUNK_FIELDS];
    for (int i = 0; i < CHUNK_FIELDS; i++) {
        /* Each field must be a plain writable object slot of the class itself (its own
         * descriptor, not one taken from another class, whose offset means another thing). */
        PyObject *descr = PyDict_GetItemString(ctype->tp_dict, chunk_fields[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
            PyDescr_TYPE(descr) != ctype) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", ctype->tp_name, chunk_fields[i]);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY) ||
            member->offset < (Py_ssize_t)sizeof(PyObject) ||
            member->offset + (Py_ssize_t)sizeof(PyObject *) > ctype->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot",
                         ctype->tp_name, chunk_fields[i]);
            return NULL;
        }
        offsets[i] = member->offset;
    }
    ChunksObject *self = (ChunksObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    memcpy(self->offsets, offsets, sizeof offsets);
    self->chunk_type = (PyTypeObject *)Py_NewRef(chunk_type);
    self->texts = Py_NewRef(texts);
    self->ids = Py_NewRef(ids);
    self->doc_id = Py_NewRef(doc_id);
    self->metadata = Py_NewRef(metadata);
    return (PyObject *)self;
}

/* The next chunk, from the iterator's members (strong references the caller holds). */
static PyObject *
Chunks_make(ChunksObject *self, PyObject *texts, PyObject *ids, PyTypeObject *chunk_type,
            PyObject *doc_id, PyObject *metadata)
{
    PyObject *text = Py_TYPE(texts)->tp_iternext(texts);
    if (text == NULL) {
        Chunks_clear(self); /* exhausted, or an error (left set) */
        return NULL;
    }
    PyObject *id = Py_TYPE(ids)->tp_iternext(ids);
    PyObject *copy = id ? PyDict_Copy(metadata) : NULL;
    PyObject *chunk = copy ? chunk_type->tp_alloc(chunk_type, 0) : NULL;
    if (chunk == NULL) {
        if (id == NULL && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "the chunk ids ran out");
        }
        Py_DECREF(text);
        Py_XDECREF(id);
        Py_XDECREF(copy);
        return NULL;
    }
    /* What the dataclass __init__ does: every field set, embedding to None. */
    PyObject *values[CHUNK_FIELDS] = {text, Py_NewRef(doc_id), copy, id, Py_NewRef(Py_None)};
    for (int i = 0; i < CHUNK_FIELDS; i++) {
        *(PyObject **)((char *)chunk + self->offsets[i]) = values[i];
    }
    return chunk;
}

static PyObject *
Chunks_next(ChunksObject *self)
{
    if (self->texts == NULL) {
        return NULL;
    }
    /* Python code runs inside (the texts' iterator, a metadata key's __eq__ while the dict
     * is copied, a finalizer when memory is collected); if it calls this iterator until it
     * ends, the members are released under this call, which holds its own references. */
    PyObject *texts = Py_NewRef(self->texts), *ids = Py_NewRef(self->ids);
    PyObject *doc_id = Py_NewRef(self->doc_id), *metadata = Py_NewRef(self->metadata);
    PyTypeObject *chunk_type = (PyTypeObject *)Py_NewRef(self->chunk_type);
    PyObject *chunk = Chunks_make(self, texts, ids, chunk_type, doc_id, metadata);
    Py_DECREF(texts);
    Py_DECREF(ids);
    Py_DECREF(doc_id);
    Py_DECREF(metadata);
    Py_DECREF(chunk_type);
    return chunk;
}

static PyTypeObject ChunksType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pywrapai_graph.application._chunker_ext.Chunks",
    .tp_basicsize = sizeof(ChunksObject),
    .tp_dealloc = (destructor)Chunks_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("Chunks(chunk_type, texts, doc_id, metadata, ids): the Chunk objects."),
    .tp_traverse = (traverseproc)Chunks_traverse,
    .tp_clear = (inquiry)Chunks_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Chunks_next,
    .tp_new = Chunks_new,
};

static struct PyModuleDef cutter_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pywrapai_graph.application._chunker_ext",
    .m_doc = "The chunker's cutting loop, chunk ids and Chunk objects, compiled (as chunker.py).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__chunker_ext(void)
{
    PyObject *module = PyModule_Create(&cutter_module);
    if (module == NULL) {
        return NULL;
    }
    PyTypeObject *types[] = {&CutterType, &ChunkIdsType, &ChunksType};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyModule_AddType(module, types[i]) < 0) { /* readies the type too */
            Py_DECREF(module);
            return NULL;
        }
    }
    if (has_sha_ni()) {
        sha1_fold = sha1_block_ni;
    }
    return module;
}
