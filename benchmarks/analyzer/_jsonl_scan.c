/* result_analyzer.py's compiled reader: one pass over a byte range of a results file (JSON Lines).

   Why: parsing a record with orjson makes ~130 Python objects (one per sample), and turning those floats
   into numpy arrays costs as much again; together they cap a pure-Python analyzer far below 100,000
   records/s on two cores. This scanner validates each line as JSON and, without making Python objects:
     - parses every metric that is a non-empty array of JSON numbers ("metrics": {"total_time": [...]})
       straight into one float64 buffer, with (line, metric, start, count) per array;
     - hands back the raw text of the other top-level values the report needs (model, experiment, ...)
       as bytes, which the caller parses once per distinct text (a sweep repeats them);
     - hands back what is left of `metrics` (errors, objects, nulls, empty or non-numeric lists) as text.
   A line it cannot take whole (invalid JSON, not an object, a key with escapes, a duplicated key, nesting
   deeper than MAX_DEPTH) is flagged, and the caller reads it the slow way, which reports the problem.

   Numbers are converted exactly as Python's float() would (correctly rounded): a fast path for
   mantissas of up to 19 digits with small exponents (exact, or checked not to be a rounding tie), else
   PyOS_string_to_double. The result equals the pure-Python reader's, which the tests check. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512
#define MAX_METRIC_MEMBERS 256 /* more members than this: the slow reader (duplicate checks stay cheap) */

enum { LINE_OK = 0, LINE_SLOW = 1, LINE_BLANK = 2 };

/* ------------------------------------------------------------------ growable buffers */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    char *data = PyMem_Realloc(b->data, cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, size_t extra) {
    return b->len + extra <= b->cap ? 0 : buf_grow(b, extra);
}

static inline int buf_append(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b) {
    PyMem_Free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ validation without objects */

typedef const unsigned char *Ptr;

static Ptr skip_ws(Ptr p, Ptr end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 sequence starting at p (a byte >= 0x80): its length, or 0 when it is not valid UTF-8
   (overlong forms, surrogates and values above U+10FFFF are not). */
static int utf8_length(Ptr p, Ptr end) {
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        return (end - p >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* A string starting at its opening quote: the position after its closing quote, or NULL. *escaped is set
   when it holds a backslash escape. A \u escape of a lone surrogate is left to the slow reader. */
/* 1 for the bytes a string holds as they are: not '"', '\\', a control character or a non-ASCII byte. */
static unsigned char PLAIN[256];

static Ptr scan_string(Ptr p, Ptr end, int *escaped) {
    p++;
    *escaped = 0;
    while (p < end) {
        while (end - p >= 4 && PLAIN[p[0]] && PLAIN[p[1]] && PLAIN[p[2]] && PLAIN[p[3]]) p += 4;
        while (p < end && PLAIN[*p]) p++;
        if (p >= end) break;
        unsigned char c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20) return NULL;
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) return NULL;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6) return NULL;
                int code = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) return NULL;
                    code = code * 16 + h;
                }
                if (code >= 0xD800 && code <= 0xDFFF) return NULL; /* pairs and lone halves: the slow reader */
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                       e == 't') {
                p += 2;
            } else {
                return NULL;
            }
        } else if (c >= 0x80) {
            int n = utf8_length(p, end);
            if (!n) return NULL;
            p += n;
        } else {
            p++;
        }
    }
    return NULL;
}

/* A number by JSON's grammar: the position after it, or NULL. *integer is set when it has no fraction and
   no exponent. */
static Ptr scan_number(Ptr p, Ptr end, int *integer) {
    *integer = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        *integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

static Ptr scan_literal(Ptr p, Ptr end, const char *word, size_t n) {
    return ((size_t)(end - p) >= n && memcmp(p, word, n) == 0) ? p + n : NULL;
}

/* Any JSON value: the position after it, or NULL when it is not valid (or nests deeper than MAX_DEPTH). */
static Ptr scan_value(Ptr p, Ptr end, int depth) {
    int flag;
    if (p >= end) return NULL;
    switch (*p) {
        case '"':
            return scan_string(p, end, &flag);
        case 't':
            return scan_literal(p, end, "true", 4);
        case 'f':
            return scan_literal(p, end, "false", 5);
        case 'n':
            return scan_literal(p, end, "null", 4);
        case '[':
        case '{': {
            int object = *p == '{';
            unsigned char close = object ? '}' : ']';
            if (depth >= MAX_DEPTH) return NULL;
            p = skip_ws(p + 1, end);
            if (p < end && *p == close) return p + 1;
            for (;;) {
                if (object) {
                    if (p >= end || *p != '"') return NULL;
                    p = scan_string(p, end, &flag);
                    if (!p) return NULL;
                    p = skip_ws(p, end);
                    if (p >= end || *p != ':') return NULL;
                    p = skip_ws(p + 1, end);
                }
                p = scan_value(p, end, depth + 1);
                if (!p) return NULL;
                p = skip_ws(p, end);
                if (p >= end) return NULL;
                if (*p == close) return p + 1;
                if (*p != ',') return NULL;
                p = skip_ws(p + 1, end);
            }
        }
        default:
            return scan_number(p, end, &flag);
    }
}

/* ------------------------------------------------------------------ numbers, as Python's float() reads them */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#if LDBL_MANT_DIG == 64
/* x87 extended precision: 10^k is exact for k <= 27 (5^27 < 2^63), and so is any 19-digit mantissa. */
#define HAVE_EXTENDED 1
static long double POW10L[28];
#else
#define HAVE_EXTENDED 0
#endif

/* The correctly rounded value of any number token, by Python's own conversion. */
static int slow_double(Ptr s, Ptr e, double *out) {
    char small[64];
    size_t n = (size_t)(e - s);
    char *text = n < sizeof small ? small : PyMem_Malloc(n + 1);
    if (!text) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    char *stop = NULL;
    double value = PyOS_string_to_double(text, &stop, NULL); /* overflow: +-inf, as float() gives */
    int failed = (value == -1.0 && PyErr_Occurred()) || stop != text + n;
    if (text != small) PyMem_Free(text);
    if (failed) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "number the scanner accepted was not read");
        return -1;
    }
    *out = value;
    return 0;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Eight ASCII digits at p (known to be digits) as their value, in a few multiplications (SWAR). */
static inline uint64_t eight_digits(Ptr p) {
    uint64_t v;
    memcpy(&v, p, 8);
    v -= UINT64_C(0x3030303030303030);
    v = v * 10 + (v >> 8); /* each byte pair: its two-digit value in the low byte */
    v = (((v & UINT64_C(0x000000FF000000FF)) * (100 + (UINT64_C(1000000) << 32))) +
         (((v >> 16) & UINT64_C(0x000000FF000000FF)) * (1 + (UINT64_C(10000) << 32)))) >> 32;
    return v;
}
#define HAVE_SWAR 1
#else
#define HAVE_SWAR 0
#endif

/* The digits in [p, q) appended to m (the caller keeps m below 20 digits). */
static inline uint64_t accumulate(uint64_t m, Ptr p, Ptr q) {
#if HAVE_SWAR
    for (; q - p >= 8; p += 8) m = m * 100000000 + eight_digits(p);
#endif
    for (; p < q; p++) m = m * 10 + (uint64_t)(*p - '0');
    return m;
}

static inline Ptr skip_digits(Ptr p, Ptr end) {
    while (p < end && (unsigned)(*p - '0') < 10) p++;
    return p;
}

/* A JSON number at p, in one pass: its value (correctly rounded, as Python's float() of it) and the position
   after it; NULL when there is no number there (or on a Python error, with *error set). JSON's integer -0 is
   Python's int 0, so it reads as +0.0; -0.0 keeps its sign. */
static Ptr read_number(Ptr p, Ptr end, double *out, int *error) {
    Ptr s = p;
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end) return NULL;
    Ptr int_start = p, int_stop;
    if (*p == '0') {
        int_stop = ++p;
    } else if ((unsigned)(*p - '1') < 9) {
        int_stop = p = skip_digits(p + 1, end);
    } else {
        return NULL;
    }
    Ptr frac_start = p, frac_stop = p;
    if (p < end && *p == '.') {
        frac_start = p + 1;
        frac_stop = p = skip_digits(frac_start, end);
        if (frac_stop == frac_start) return NULL;
    }
    int exponent = 0, integer = frac_stop == frac_start;
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        int sign = 1;
        if (p < end && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
        Ptr digits = p;
        for (; p < end && (unsigned)(*p - '0') < 10; p++) {
            if (exponent < 100000) exponent = exponent * 10 + (*p - '0');
        }
        if (p == digits) return NULL;
        exponent *= sign;
    }
    /* significant digits: the integer part unless it is "0", then the fraction after its leading zeros */
    Ptr first = frac_start;
    if (*int_start == '0') {
        while (first < frac_stop && *first == '0') first++;
    }
    size_t significant = (*int_start == '0' ? 0 : (size_t)(int_stop - int_start)) + (size_t)(frac_stop - first);
    if (significant == 0) {
        *out = (negative && !integer) ? -0.0 : 0.0;
        return p;
    }
    /* a fraction of more digits than an int counts (zeros before its first significant one): the slow path */
    if (significant <= 19 && frac_stop - frac_start <= 100000) {
        uint64_t mantissa = *int_start == '0' ? 0 : accumulate(0, int_start, int_stop);
        mantissa = accumulate(mantissa, first, frac_stop);
        exponent -= (int)(frac_stop - frac_start);
        if (mantissa <= (UINT64_C(1) << 53) && exponent >= -22 && exponent <= 22) {
            double m = (double)mantissa; /* exact; one rounding below */
            double v = exponent < 0 ? m / POW10[-exponent] : m * POW10[exponent];
            *out = negative ? -v : v;
            return p;
        }
#if HAVE_EXTENDED
        if (exponent >= -27 && exponent <= 27) {
            long double m = (long double)mantissa; /* exact: 64-bit significand */
            long double v = exponent < 0 ? m / POW10L[-exponent] : m * POW10L[exponent];
            /* v is the exact value rounded once to 64 bits; rounding it again to 53 bits gives the correctly
               rounded double unless v is at or next to a tie between two doubles (the 11 bits that go). */
            uint64_t bits; /* the x87 format's explicit 64-bit significand: its first 8 bytes */
            memcpy(&bits, &v, sizeof bits);
            unsigned low = (unsigned)(bits & 0x7FF);
            if (low < 0x3FF || low > 0x401) {
                double d = (double)v;
                *out = negative ? -d : d;
                return p;
            }
        }
#endif
    }
    if (slow_double(s, p, out) < 0) {
        *error = 1;
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------------ the scan */

typedef struct {
    /* metric names seen in this call, each with its index in `names` */
    char **name_text;
    size_t *name_len;
    Py_ssize_t n_names, cap_names;
    PyObject *names; /* list of str */
    /* one entry per extracted metric array */
    Buf m_line, m_name, m_start, m_count; /* int64 each */
    Buf values;                           /* float64 */
} Scan;

static Py_ssize_t name_id(Scan *scan, Ptr key, size_t n) {
    for (Py_ssize_t i = 0; i < scan->n_names; i++) {
        if (scan->name_len[i] == n && memcmp(scan->name_text[i], key, n) == 0) return i;
    }
    PyObject *name = PyUnicode_DecodeUTF8((const char *)key, (Py_ssize_t)n, "strict");
    if (!name) return -1;
    int failed = PyList_Append(scan->names, name);
    Py_DECREF(name);
    if (failed) return -1;
    if (scan->n_names == scan->cap_names) {
        Py_ssize_t cap = scan->cap_names ? scan->cap_names * 2 : 16;
        char **text = PyMem_Realloc(scan->name_text, cap * sizeof(char *));
        if (!text) return PyErr_NoMemory(), -1;
        scan->name_text = text;
        size_t *len = PyMem_Realloc(scan->name_len, cap * sizeof(size_t));
        if (!len) return PyErr_NoMemory(), -1;
        scan->name_len = len;
        scan->cap_names = cap;
    }
    char *copy = PyMem_Malloc(n ? n : 1);
    if (!copy) return PyErr_NoMemory(), -1;
    memcpy(copy, key, n);
    scan->name_text[scan->n_names] = copy;
    scan->name_len[scan->n_names] = n;
    return scan->n_names++;
}

static inline int push_i64(Buf *b, int64_t v) {
    if (buf_reserve(b, sizeof v) < 0) return -1;
    memcpy(b->data + b->len, &v, sizeof v); /* a constant size: no call */
    b->len += sizeof v;
    return 0;
}

static inline int push_f64(Buf *b, double v) {
    if (buf_reserve(b, sizeof v) < 0) return -1;
    memcpy(b->data + b->len, &v, sizeof v);
    b->len += sizeof v;
    return 0;
}

/* A non-empty array of numbers at p: its values appended to scan->values and the position after it;
   NULL (values untouched) when it is empty or holds anything but numbers; *error on a Python error. */
static Ptr numeric_array(Scan *scan, Ptr p, Ptr end, int64_t *count, int *error) {
    size_t mark = scan->values.len;
    *count = 0;
    p = skip_ws(p + 1, end);
    if (p >= end || *p == ']') return NULL;
    for (;;) {
        double v;
        Ptr stop = read_number(p, end, &v, error);
        if (!stop) break;
        if (push_f64(&scan->values, v) < 0) {
            *error = 1;
            break;
        }
        ++*count;
        p = skip_ws(stop, end);
        if (p < end && *p == ']') return p + 1;
        if (p >= end || *p != ',') break;
        p = skip_ws(p + 1, end);
    }
    scan->values.len = mark;
    *count = 0;
    return NULL;
}

/* The `metrics` object at p: numeric arrays go to scan; everything else is copied to `rest` as an object.
   The position after it, or NULL when the line must go to the slow reader (*error: a Python error). */
static Ptr scan_metrics(Scan *scan, Ptr p, Ptr end, int64_t line, Buf *rest, int *error) {
    Ptr keys[MAX_METRIC_MEMBERS];
    size_t key_len[MAX_METRIC_MEMBERS];
    /* this record's numeric arrays: their text, first value and length (per-iteration times often repeat the
       totals' text: those are read once) */
    Ptr array_text[MAX_METRIC_MEMBERS];
    size_t array_len[MAX_METRIC_MEMBERS], array_start[MAX_METRIC_MEMBERS];
    int64_t array_count[MAX_METRIC_MEMBERS];
    int n_keys = 0, n_arrays = 0, kept = 0, escaped;
    rest->len = 0;
    if (buf_append(rest, "{", 1) < 0) return *error = 1, NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        if (buf_append(rest, "}", 1) < 0) return *error = 1, NULL;
        return p + 1;
    }
    for (;;) {
        if (p >= end || *p != '"') return NULL;
        Ptr key = p;
        p = scan_string(p, end, &escaped);
        if (!p || escaped || n_keys == MAX_METRIC_MEMBERS) return NULL;
        size_t n = (size_t)(p - key - 2);
        for (int i = 0; i < n_keys; i++) {
            if (key_len[i] == n && memcmp(keys[i], key + 1, n) == 0) return NULL; /* duplicated: the last wins */
        }
        keys[n_keys] = key + 1;
        key_len[n_keys++] = n;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        Ptr value = p, stop = NULL;
        if (p < end && *p == '[') {
            size_t start = scan->values.len / sizeof(double);
            int64_t count = 0;
            for (int i = 0; i < n_arrays; i++) {
                /* the first bytes differ for most pairs: checked before the call */
                if ((size_t)(end - p) >= array_len[i] && array_len[i] >= 8 && memcmp(p, array_text[i], 8) == 0 &&
                    memcmp(p, array_text[i], array_len[i]) == 0) {
                    stop = p + array_len[i];
                    start = array_start[i];
                    count = array_count[i];
                    break;
                }
            }
            if (!stop) {
                stop = numeric_array(scan, p, end, &count, error);
                if (*error) return NULL;
                if (stop) {
                    array_text[n_arrays] = p;
                    array_len[n_arrays] = (size_t)(stop - p);
                    array_start[n_arrays] = start;
                    array_count[n_arrays++] = count;
                }
            }
            if (stop) {
                Py_ssize_t id = name_id(scan, key + 1, n);
                if (id < 0 || push_i64(&scan->m_line, line) < 0 || push_i64(&scan->m_name, id) < 0 ||
                    push_i64(&scan->m_start, (int64_t)start) < 0 || push_i64(&scan->m_count, count) < 0) {
                    *error = 1;
                    return NULL;
                }
            }
        }
        if (!stop) { /* anything else stays in the text the caller parses */
            stop = scan_value(value, end, 2);
            if (!stop) return NULL;
            if ((kept++ && buf_append(rest, ",", 1) < 0) || buf_append(rest, key, (size_t)(value - key)) < 0 ||
                buf_append(rest, value, (size_t)(stop - value)) < 0) {
                *error = 1;
                return NULL;
            }
        }
        p = skip_ws(stop, end);
        if (p >= end) return NULL;
        if (*p == '}') {
            if (buf_append(rest, "}", 1) < 0) return *error = 1, NULL;
            return p + 1;
        }
        if (*p != ',') return NULL;
        p = skip_ws(p + 1, end);
    }
}

typedef struct {
    Py_ssize_t n_keys;
    const char **key;
    size_t *key_len;
    Py_ssize_t metrics_index; /* which requested key is "metrics" (-1: none) */
} Request;

/* One line: LINE_OK with spans[k] set for each requested key present, LINE_SLOW, or LINE_BLANK; -1 on a
   Python error. Metric arrays of a line that turns out slow are taken back by the caller. */
static int scan_line(Scan *scan, const Request *req, Ptr p, Ptr end, int64_t line, Ptr *starts, Ptr *stops,
                     Buf *rest, int *has_rest) {
    int error = 0, escaped;
    *has_rest = 0;
    for (Py_ssize_t k = 0; k < req->n_keys; k++) starts[k] = stops[k] = NULL;
    p = skip_ws(p, end);
    if (p >= end) return LINE_BLANK;
    if (*p != '{') return LINE_SLOW;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            if (p >= end || *p != '"') return LINE_SLOW;
            Ptr key = p;
            p = scan_string(p, end, &escaped);
            if (!p || escaped) return LINE_SLOW;
            size_t n = (size_t)(p - key - 2);
            Py_ssize_t which = -1;
            for (Py_ssize_t k = 0; k < req->n_keys; k++) {
                if (req->key_len[k] == n && memcmp(req->key[k], key + 1, n) == 0) {
                    which = k;
                    break;
                }
            }
            if (which >= 0 && starts[which]) return LINE_SLOW; /* duplicated: the slow reader decides */
            p = skip_ws(p, end);
            if (p >= end || *p != ':') return LINE_SLOW;
            p = skip_ws(p + 1, end);
            Ptr value = p, stop;
            if (which >= 0 && which == req->metrics_index && p < end && *p == '{') {
                stop = scan_metrics(scan, p, end, line, rest, &error);
                if (error) return -1;
                if (!stop) return LINE_SLOW;
                *has_rest = 1;
            } else {
                stop = scan_value(p, end, 1);
                if (!stop) return LINE_SLOW;
            }
            if (which >= 0) {
                starts[which] = value;
                stops[which] = stop;
            }
            p = skip_ws(stop, end);
            if (p >= end) return LINE_SLOW;
            if (*p == '}') {
                p++;
                break;
            }
            if (*p != ',') return LINE_SLOW;
            p = skip_ws(p + 1, end);
        }
    }
    p = skip_ws(p, end);
    return p == end ? LINE_OK : LINE_SLOW;
}

/* The distinct values of one key across a range's lines: each distinct text once (bytes, in order of first
   appearance), and per line its index (-1: absent, or the line is left to the slow reader). A sweep
   repeats its models, configs, outcomes and environment: the caller parses and formats each once. */
typedef struct {
    uint64_t *hashes; /* per slot: the text's hash with its low bit set; 0 for an empty slot */
    int32_t *ids;
    size_t mask;
    PyObject *values; /* list of bytes */
    Buf line_ids;     /* int32 per line */
} Distinct;

static uint64_t text_hash(const char *text, Py_ssize_t n) {
    uint64_t h = (uint64_t)n * UINT64_C(0x9E3779B97F4A7C15), word;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&word, text + i, 8);
        h = (h ^ word) * UINT64_C(0xFF51AFD7ED558CCD);
    }
    for (; i < n; i++) h = (h ^ (unsigned char)text[i]) * UINT64_C(0x100000001B3);
    return (h ^ (h >> 29)) | 1;
}

static int distinct_init(Distinct *d) {
    d->mask = 63;
    d->hashes = PyMem_Calloc(d->mask + 1, sizeof(uint64_t));
    d->ids = PyMem_Calloc(d->mask + 1, sizeof(int32_t));
    d->values = PyList_New(0);
    if (!d->hashes || !d->ids || !d->values) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void distinct_free(Distinct *d) {
    PyMem_Free(d->hashes);
    PyMem_Free(d->ids);
    Py_XDECREF(d->values);
    buf_free(&d->line_ids);
}

static int distinct_grow(Distinct *d) {
    size_t slots = (d->mask + 1) * 2;
    uint64_t *hashes = PyMem_Calloc(slots, sizeof(uint64_t));
    int32_t *ids = PyMem_Calloc(slots, sizeof(int32_t));
    if (!hashes || !ids) {
        PyMem_Free(hashes);
        PyMem_Free(ids);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= d->mask; i++) {
        if (!d->hashes[i]) continue;
        size_t j = (size_t)(d->hashes[i] >> 7) & (slots - 1);
        while (hashes[j]) j = (j + 1) & (slots - 1);
        hashes[j] = d->hashes[i];
        ids[j] = d->ids[i];
    }
    PyMem_Free(d->hashes);
    PyMem_Free(d->ids);
    d->hashes = hashes;
    d->ids = ids;
    d->mask = slots - 1;
    return 0;
}

/* Record text[0:n] as this line's value: its id, or -1 on a Python error. */
static int32_t distinct_add(Distinct *d, const char *text, Py_ssize_t n) {
    uint64_t h = text_hash(text, n);
    size_t i = (size_t)(h >> 7) & d->mask;
    while (d->hashes[i]) {
        if (d->hashes[i] == h) {
            PyObject *value = PyList_GET_ITEM(d->values, d->ids[i]);
            if (PyBytes_GET_SIZE(value) == n && memcmp(PyBytes_AS_STRING(value), text, (size_t)n) == 0) return d->ids[i];
        }
        i = (i + 1) & d->mask;
    }
    Py_ssize_t id = PyList_GET_SIZE(d->values);
    if (id >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many distinct values in one range");
        return -1;
    }
    PyObject *value = PyBytes_FromStringAndSize(text, n);
    if (!value) return -1;
    int failed = PyList_Append(d->values, value);
    Py_DECREF(value);
    if (failed) return -1;
    d->hashes[i] = h;
    d->ids[i] = (int32_t)id;
    if ((size_t)(id + 1) * 2 > d->mask + 1 && distinct_grow(d) < 0) return -1;
    return (int32_t)id;
}

static int push_i32(Buf *b, int32_t v) {
    if (buf_reserve(b, sizeof v) < 0) return -1;
    memcpy(b->data + b->len, &v, sizeof v);
    b->len += sizeof v;
    return 0;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len); }

PyDoc_STRVAR(scan_doc,
"scan(data: bytes, keys: tuple[str, ...], metrics_key: str) -> tuple\n\n"
"Scan the JSON Lines in `data` (lines end with b'\\n'; a last line may lack it). Returns\n"
"(line_offsets, line_status, fields, names, m_line, m_name, m_start, m_count, values):\n"
"line_offsets: int64 bytes, n_lines + 1 offsets into data; line_status: one byte per line,\n"
"0 read here, 1 for the slow reader, 2 blank; fields: per key, (distinct raw JSON texts of its\n"
"value, as a list of bytes; int32 bytes: per line the index of its text, -1 when the key is absent\n"
"or the line is not 0); for metrics_key, its object without the numeric arrays. names: the metric\n"
"names; m_*: int64 bytes, one entry per numeric array (its line, its name's index, its first\n"
"value, its length); values: float64 bytes.");

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *key_tuple;
    const char *metrics_key;
    Py_ssize_t metrics_key_len;
    if (!PyArg_ParseTuple(args, "y*O!s#:scan", &data, &PyTuple_Type, &key_tuple, &metrics_key, &metrics_key_len))
        return NULL;
    PyObject *result = NULL, *fields = NULL;
    Scan scan = {0};
    Buf offsets = {0}, status = {0}, rest = {0};
    Request req = {0};
    Ptr *starts = NULL, *stops = NULL;
    Distinct *distinct = NULL;

    req.n_keys = PyTuple_GET_SIZE(key_tuple);
    req.metrics_index = -1;
    req.key = PyMem_Calloc(req.n_keys ? req.n_keys : 1, sizeof(char *));
    req.key_len = PyMem_Calloc(req.n_keys ? req.n_keys : 1, sizeof(size_t));
    starts = PyMem_Calloc(req.n_keys ? req.n_keys : 1, sizeof(Ptr));
    stops = PyMem_Calloc(req.n_keys ? req.n_keys : 1, sizeof(Ptr));
    distinct = PyMem_Calloc(req.n_keys ? req.n_keys : 1, sizeof(Distinct));
    scan.names = PyList_New(0);
    fields = PyList_New(req.n_keys);
    if (!req.key || !req.key_len || !starts || !stops || !distinct || !scan.names || !fields) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < req.n_keys; k++) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(key_tuple, k), &n);
        if (!text) goto done;
        req.key[k] = text;
        req.key_len[k] = (size_t)n;
        if ((Py_ssize_t)n == metrics_key_len && memcmp(text, metrics_key, n) == 0) req.metrics_index = k;
        if (distinct_init(&distinct[k]) < 0) goto done;
    }

    /* room for the numbers of a typical range at once (a number takes at least 2 bytes of text) */
    if (buf_reserve(&scan.values, (size_t)data.len / 4) < 0 || buf_reserve(&status, (size_t)data.len / 256 + 16) < 0)
        goto done;
    Ptr base = data.buf, end = base + data.len, p = base;
    int64_t line = 0;
    while (p < end) {
        Ptr newline = memchr(p, '\n', (size_t)(end - p));
        Ptr stop = newline ? newline : end;
        size_t marks[5] = {scan.m_line.len, scan.m_name.len, scan.m_start.len, scan.m_count.len, scan.values.len};
        int has_rest;
        if (push_i64(&offsets, (int64_t)(p - base)) < 0) goto done;
        int kind = scan_line(&scan, &req, p, stop, line, starts, stops, &rest, &has_rest);
        if (kind < 0) goto done;
        if (kind != LINE_OK) { /* take back what this line added */
            scan.m_line.len = marks[0];
            scan.m_name.len = marks[1];
            scan.m_start.len = marks[2];
            scan.m_count.len = marks[3];
            scan.values.len = marks[4]; /* names it added stay: unused, harmless */
        }
        unsigned char code = (unsigned char)kind;
        if (buf_append(&status, &code, 1) < 0) goto done;
        for (Py_ssize_t k = 0; k < req.n_keys; k++) {
            int32_t id = -1;
            if (kind == LINE_OK && starts[k]) {
                id = (k == req.metrics_index && has_rest)
                         ? distinct_add(&distinct[k], rest.data, (Py_ssize_t)rest.len)
                         : distinct_add(&distinct[k], (const char *)starts[k], stops[k] - starts[k]);
                if (id < 0) goto done;
            }
            if (push_i32(&distinct[k].line_ids, id) < 0) goto done;
        }
        line++;
        p = newline ? newline + 1 : end;
    }
    if (push_i64(&offsets, (int64_t)(p - base)) < 0) goto done;
    for (Py_ssize_t k = 0; k < req.n_keys; k++) {
        PyObject *pair = Py_BuildValue("(ON)", distinct[k].values, bytes_of(&distinct[k].line_ids));
        if (!pair) goto done;
        PyList_SET_ITEM(fields, k, pair);
    }
    result = Py_BuildValue("(NNOONNNNN)", bytes_of(&offsets), bytes_of(&status), fields, scan.names,
                           bytes_of(&scan.m_line), bytes_of(&scan.m_name), bytes_of(&scan.m_start),
                           bytes_of(&scan.m_count), bytes_of(&scan.values));
done:
    PyBuffer_Release(&data);
    Py_XDECREF(fields);
    Py_XDECREF(scan.names);
    for (Py_ssize_t i = 0; i < scan.n_names; i++) PyMem_Free(scan.name_text[i]);
    PyMem_Free(scan.name_text);
    PyMem_Free(scan.name_len);
    buf_free(&scan.m_line);
    buf_free(&scan.m_name);
    buf_free(&scan.m_start);
    buf_free(&scan.m_count);
    buf_free(&scan.values);
    buf_free(&offsets);
    buf_free(&status);
    buf_free(&rest);
    PyMem_Free(req.key);
    PyMem_Free(req.key_len);
    PyMem_Free(starts);
    PyMem_Free(stops);
    if (distinct) {
        for (Py_ssize_t k = 0; k < req.n_keys; k++) distinct_free(&distinct[k]);
        PyMem_Free(distinct);
    }
    return result;
}

/* ------------------------------------------------------------------ CSV rows */

/* A piece of every row: constant text, one cell text per row, or a float matrix as orjson wrote it
   ("[[1.5,null],[2.0,3.0]]"), read row by row with null as an empty cell. */
typedef struct {
    int kind; /* 0 constant, 1 per-row list, 2 matrix, 3 indexed list */
    const char *text;
    Py_ssize_t length;
    PyObject *list;
    Py_buffer index; /* kind 3: int32 per row, into list */
    const char *cursor, *end; /* matrix: where the next row starts */
    int has_null;             /* matrix: this row's text holds a null */
} Piece;

/* Find the next matrix row: piece->text/length become its text (between the brackets); -1 if there is none. */
static int next_matrix_row(Piece *piece) {
    const char *p = piece->cursor, *end = piece->end;
    while (p < end && (*p == '[' || *p == ',')) p++; /* "[[" before the first row, "],[" between rows */
    const char *close = p < end ? memchr(p, ']', (size_t)(end - p)) : NULL;
    if (!close) return -1;
    piece->text = p;
    piece->length = close - p;
    piece->cursor = close + 1;
    piece->has_null = memchr(p, 'n', (size_t)(close - p)) != NULL; /* numbers never hold an 'n' */
    if (piece->has_null) { /* its length without the nulls */
        Py_ssize_t nulls = 0;
        for (const char *q = p; q < close && (q = memchr(q, 'n', (size_t)(close - q))) != NULL; q += 4) nulls++;
        piece->length -= 4 * nulls;
    }
    return 0;
}

static char *copy_matrix_row(const Piece *piece, char *out) {
    if (!piece->has_null) {
        memcpy(out, piece->text, (size_t)piece->length);
        return out + piece->length;
    }
    const char *p = piece->text, *end = piece->cursor - 1; /* the row's closing bracket */
    while (p < end) {
        if (*p == 'n') {
            p += 4;
        } else {
            *out++ = *p++;
        }
    }
    return out;
}

PyDoc_STRVAR(join_rows_doc,
"join_rows(pieces: list, n_rows: int, as_list: bool) -> bytes | list[bytes]\n\n"
"Each row: its pieces joined by commas. A piece is bytes (the same text in every row), a list of\n"
"bytes (one per row), a 1-tuple holding orjson's text of a float matrix with n_rows rows (its\n"
"cells, null as empty), or a 2-tuple (list of bytes, int32 buffer of n_rows indexes into it).\n"
"as_list: one bytes per row; else all rows, each ending with a newline.");

static PyObject *join_rows(PyObject *self, PyObject *args) {
    PyObject *piece_list;
    Py_ssize_t n_rows;
    int as_list;
    if (!PyArg_ParseTuple(args, "O!np:join_rows", &PyList_Type, &piece_list, &n_rows, &as_list)) return NULL;
    Py_ssize_t n_pieces = PyList_GET_SIZE(piece_list);
    Piece *pieces = PyMem_Calloc(n_pieces ? n_pieces : 1, sizeof(Piece));
    if (!pieces) return PyErr_NoMemory();
    PyObject *result = NULL;
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        PyObject *item = PyList_GET_ITEM(piece_list, k);
        Piece *piece = &pieces[k];
        if (PyBytes_Check(item)) {
            piece->kind = 0;
            piece->text = PyBytes_AS_STRING(item);
            piece->length = PyBytes_GET_SIZE(item);
        } else if (PyList_Check(item) && PyList_GET_SIZE(item) == n_rows) {
            piece->kind = 1;
            piece->list = item;
        } else if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 1 && PyBytes_Check(PyTuple_GET_ITEM(item, 0))) {
            PyObject *blob = PyTuple_GET_ITEM(item, 0);
            piece->kind = 2;
            piece->cursor = PyBytes_AS_STRING(blob);
            piece->end = piece->cursor + PyBytes_GET_SIZE(blob);
        } else if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 && PyList_Check(PyTuple_GET_ITEM(item, 0))) {
            piece->list = PyTuple_GET_ITEM(item, 0);
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &piece->index, PyBUF_C_CONTIGUOUS) < 0) goto done;
            piece->kind = 3;
            const int32_t *ids = piece->index.buf;
            Py_ssize_t size = PyList_GET_SIZE(piece->list);
            int bad = piece->index.len != n_rows * (Py_ssize_t)sizeof(int32_t);
            for (Py_ssize_t i = 0; i < n_rows && !bad; i++) bad = ids[i] < 0 || ids[i] >= size;
            if (bad) {
                PyErr_Format(PyExc_ValueError, "join_rows: piece %zd has indexes out of its list", k);
                goto done;
            }
        } else {
            PyErr_Format(PyExc_TypeError, "join_rows: piece %zd is not bytes, a list of %zd bytes, (matrix,) or "
                         "(list, indexes)", k, n_rows);
            goto done;
        }
    }
    /* row by row: the length of its pieces, then their text */
    Buf out = {0};
    PyObject *rows = as_list ? PyList_New(n_rows) : NULL;
    if (as_list && !rows) goto done;
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        Py_ssize_t length = n_pieces ? n_pieces - 1 : 0;
        for (Py_ssize_t k = 0; k < n_pieces; k++) {
            Piece *piece = &pieces[k];
            if (piece->kind == 1 || piece->kind == 3) {
                PyObject *cell = PyList_GET_ITEM(piece->list, piece->kind == 1 ? i : ((const int32_t *)piece->index.buf)[i]);
                if (!PyBytes_Check(cell)) {
                    PyErr_SetString(PyExc_TypeError, "join_rows: a cell is not bytes");
                    goto fail;
                }
                length += PyBytes_GET_SIZE(cell);
            } else {
                if (piece->kind == 2 && next_matrix_row(piece) < 0) {
                    PyErr_SetString(PyExc_ValueError, "join_rows: a matrix has fewer rows than the others");
                    goto fail;
                }
                length += piece->length;
            }
        }
        char *dest;
        if (as_list) {
            PyObject *row = PyBytes_FromStringAndSize(NULL, length);
            if (!row) goto fail;
            PyList_SET_ITEM(rows, i, row);
            dest = PyBytes_AS_STRING(row);
        } else {
            if (buf_reserve(&out, (size_t)length + 1) < 0) goto fail;
            dest = out.data + out.len;
        }
        char *p = dest;
        for (Py_ssize_t k = 0; k < n_pieces; k++) {
            Piece *piece = &pieces[k];
            if (k) *p++ = ',';
            if (piece->kind == 0) {
                memcpy(p, piece->text, (size_t)piece->length);
                p += piece->length;
            } else if (piece->kind == 1 || piece->kind == 3) {
                PyObject *cell = PyList_GET_ITEM(piece->list, piece->kind == 1 ? i : ((const int32_t *)piece->index.buf)[i]);
                memcpy(p, PyBytes_AS_STRING(cell), (size_t)PyBytes_GET_SIZE(cell));
                p += PyBytes_GET_SIZE(cell);
            } else {
                p = copy_matrix_row(piece, p);
            }
        }
        if (!as_list) {
            *p++ = '\n';
            out.len += (size_t)(p - dest);
        }
    }
    result = as_list ? rows : bytes_of(&out);
    rows = NULL;
fail:
    Py_XDECREF(rows);
    buf_free(&out);
done:
    for (Py_ssize_t k = 0; k < n_pieces; k++) {
        if (pieces[k].kind == 3) PyBuffer_Release(&pieces[k].index);
    }
    PyMem_Free(pieces);
    return result;
}

PyDoc_STRVAR(parse_numbers_doc,
"parse_numbers(tokens: list[bytes]) -> bytes\n\n"
"Each JSON number token as the scanner converts it (float64 bytes); for the tests.");

static PyObject *parse_numbers(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "parse_numbers takes a list of bytes");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(arg);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (!out) return NULL;
    double *values = (double *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(arg, i);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "parse_numbers takes a list of bytes");
            goto fail;
        }
        Ptr s = (Ptr)PyBytes_AS_STRING(item), e = s + PyBytes_GET_SIZE(item);
        int error = 0;
        if (read_number(s, e, &values[i], &error) != e) {
            if (!error) PyErr_Format(PyExc_ValueError, "not a JSON number: %R", item);
            goto fail;
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"parse_numbers", parse_numbers, METH_O, parse_numbers_doc},
    {"join_rows", join_rows, METH_VARARGS, join_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsonl_scan",
    "result_analyzer.py's compiled reader of results files (see benchmarks/_jsonl_scan.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jsonl_scan(void) {
    for (int c = 0x20; c < 0x80; c++) PLAIN[c] = c != '"' && c != '\\';
#if HAVE_EXTENDED
    POW10L[0] = 1.0L;
    for (int i = 1; i < 28; i++) POW10L[i] = POW10L[i - 1] * 10.0L; /* exact: each power fits 64 bits */
#endif
    PyObject *m = PyModule_Create(&module);
    /* The interface's version: the Python side refuses a module built from another (an old build left in
       place after an update) and reads with its own reader instead. Raise it with any change of interface. */
    if (m && PyModule_AddIntConstant(m, "ABI", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
