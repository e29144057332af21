/*
 * The Kafka partition consumer's hot loop, in C: librdkafka hands over an array of
 * message pointers (rd_kafka_consume_batch_queue); these functions turn it into Arrow
 * buffers (payload bytes, int32 value offsets, validity, record offsets) without one
 * Python object per record, and hand the messages back to librdkafka.
 *
 * The calls into librdkafka are made from Python through ctypes
 * (sparkpipes/sources/kafka_native.py); this file does not link librdkafka. It only
 * reads rd_kafka_message_t, whose layout is part of librdkafka's public, stable ABI
 * (rdkafka.h), and destroys messages through the function pointer it is given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int err;
    void *rkt;
    int32_t partition;
    void *payload;
    size_t len;
    void *key;
    size_t key_len;
    int64_t offset;
    void *_private;
} sp_message;

/*
 * How many of msgs[0..n) to take in one go so that the payloads of the error-free ones
 * fit in `limit` bytes (Arrow's binary offsets are int32); at least one message is
 * always taken. Their payload bytes go to *bytes, how many carry an error to *errors.
 */
Py_ssize_t sp_scan(sp_message **msgs, Py_ssize_t n, int64_t limit, int64_t *bytes,
                   Py_ssize_t *errors)
{
    int64_t total = 0;
    Py_ssize_t i, errs = 0;
    for (i = 0; i < n; i++) {
        const sp_message *m = msgs[i];
        if (m->err != 0) {
            errs++;
            continue;
        }
        if (m->payload != NULL) {
            if (i > 0 && total + (int64_t)m->len > limit)
                break;
            total += (int64_t)m->len;
        }
    }
    *bytes = total;
    *errors = errs;
    return i;
}

/*
 * Copies the error-free messages of msgs[0..n): payloads to data, Arrow value offsets
 * (count + 1 entries) to value_offsets, 1/0 for a payload/NULL to valid, offsets to
 * positions; the indexes of messages with an error go to error_at. Returns the number
 * of messages copied.
 */
Py_ssize_t sp_copy(sp_message **msgs, Py_ssize_t n, char *data, int32_t *value_offsets,
                   uint8_t *valid, int64_t *positions, int64_t *error_at)
{
    Py_ssize_t i, k = 0, e = 0;
    int32_t at = 0;
    value_offsets[0] = 0;
    for (i = 0; i < n; i++) {
        const sp_message *m = msgs[i];
        if (m->err != 0) {
            error_at[e++] = i;
            continue;
        }
        if (m->payload != NULL) {
            memcpy(data + at, m->payload, m->len);
            at += (int32_t)m->len;
            valid[k] = 1;
        } else {
            valid[k] = 0;
        }
        positions[k] = m->offset;
        value_offsets[++k] = at;
    }
    return k;
}

typedef void (*sp_destroy_fn)(sp_message *);

/* Hands msgs[0..n) back to librdkafka (rd_kafka_message_destroy). */
void sp_destroy(sp_message **msgs, Py_ssize_t n, sp_destroy_fn destroy)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++)
        destroy(msgs[i]);
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fetchcopy",
    "C helpers of the Kafka partition consumer (loaded with ctypes).", -1, NULL,
};

PyMODINIT_FUNC PyInit__fetchcopy(void) { return PyModule_Create(&module); }
